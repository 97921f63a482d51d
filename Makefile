# vmbisect: the two commands a user types are `make demo` (later) and `make test`.
# Both run `make setup` first; it is idempotent and takes seconds when already done.

VENV ?= $(CURDIR)/.venv
PY := $(VENV)/bin/python
GO ?= $(shell command -v go 2>/dev/null || echo /usr/lib/go-1.19/bin/go)
AGENT := build/vmbisect-agent
AGENT_SRC := $(wildcard guest-agent/*.go) guest-agent/go.mod

.PHONY: setup demo test test-long test-fast lint agent doctor clean-vms

setup:
	bash scripts/setup.sh

agent: $(AGENT)

# A PostgreSQL store on this machine for trying the lab (docs/lab.md): Debian's cluster
# started, a role and a database made, the password in ~/.pgpass; prints the store URL.
# Idempotent.
.PHONY: lab-db
lab-db:
	@bash scripts/lab-db.sh

$(AGENT): $(AGENT_SRC)
	mkdir -p build
	cd guest-agent && CGO_ENABLED=0 $(GO) build -trimpath -ldflags="-s -w" -o ../$(AGENT) .

# The main job: a real bisection of the built-in demo (docs in README.md).
demo: setup
	$(VENV)/bin/vmbisect demo

# Every tier: the lint and type gate, unit tests, Go agent tests (and a bounded fuzz run),
# integration tests that boot real guests. The tests that restart libvirtd run last, in a
# process of their own: the restart cuts every libvirt connection. No test may hang the run:
# one still running after 20 min has every thread's stack printed, and fails at 25 min (the
# slowest, the two-slot demo, takes about 12).
TEST_LIMITS = -o faulthandler_timeout=1200 --timeout=1500
test: setup lint
	cd guest-agent && $(GO) test ./...
	$(MAKE) --no-print-directory fuzz-agent
	$(PY) -m pytest -q -m "not long and not libvirtd_restart" --durations=15 $(TEST_LIMITS)
	$(PY) -m pytest -q -m "libvirtd_restart and not long" $(TEST_LIMITS)

# Real verifications beyond the bisections make test runs (verify on the demo): tens of minutes
# under TCG, more than CI's budget leaves beside make test.
test-long: setup
	$(PY) -m pytest -q -m long

# The fuzz, property and fault-injection harness with large budgets; rewrites the figures in
# docs/reliability.md (takes about 15 minutes; run it on a quiet host, with no guest or build beside it).
.PHONY: reliability
reliability: setup
	GO=$(GO) $(PY) scripts/reliability.py

# Go native fuzzing of the agent's request decoding from its seed corpus
# (guest-agent/testdata/fuzz); `go test` alone replays the seeds. One worker: 2 cores.
# A count, not a duration: Go 1.26's coordinator can fail a duration run at its deadline with
# "context deadline exceeded" and no crasher (golang/go#75804, fixed in 1.27; make test hit it
# on 2026-11-26). 80000 inputs take about 5 s here (16-19k a second).
FUZZTIME ?= 80000x
.PHONY: fuzz-agent
fuzz-agent:
	cd guest-agent && $(GO) test -run='^$$' -fuzz=FuzzRequestDecoding -fuzztime=$(FUZZTIME) -parallel=1 .

# No guest boots: unit tests and the agent over a pipe.
test-fast: setup lint
	cd guest-agent && $(GO) test ./...
	$(PY) -m pytest -q -m "not vm and not slow"

# ruff and mypy as configured in pyproject.toml, go vet for the agent.
lint: setup
	$(VENV)/bin/ruff check orchestrator workloads tests bench
	$(VENV)/bin/mypy
	cd guest-agent && $(GO) vet ./...

doctor: setup
	$(VENV)/bin/vmbisect doctor

clean-vms:
	$(VENV)/bin/vmbisect cleanup

# Benchmarks print figures; they never fail on a slow machine.
.PHONY: bench bench-boot bench-build bench-bisect bench-size bench-rounds bench-sets bench-steps bench-noise bench-floor bench-real-size
bench: bench-boot bench-build bench-bisect bench-size bench-rounds bench-sets bench-steps bench-noise bench-floor

# Noise source by source (docs/measurements/noise.md): the demo's good kernel (built here, cached),
# its guest and workload booted 6 times per variant, interleaved: the guest's clock before and after
# the default changed, pinning, an I/O thread, the host's AIO. About 25 minutes under TCG; other
# shapes: `python -m bench.noise blk8|scsi-mq|netperf|dbench --kernel ...`.
NOISE_VARIANTS ?= kernel tsc tsc+1socket tsc+pin tsc+iothread tsc+io_uring
bench-noise: setup
	$(PY) -c "from orchestrator.demo import ensure_demo_repo; ensure_demo_repo()"
	$(PY) -m bench.noise demo --kernel "$$($(VENV)/bin/vmbisect build --repo examples/demo/linux.git --commit master \
		--config tinyconfig --config guest-base | awk '/^image/ {print $$2}')" --variants $(NOISE_VARIANTS) --rounds 6

# The host's own floor (docs/measurements/noise.md): fixed CPU work on every host CPU in windows as
# long as the demo's runs, 3 a "boot", 12 boots; no guest measures steadier. About 5 minutes.
bench-floor: setup
	$(PY) -m bench.noise.floor --window 5 --runs 3 --boots 12

# A real campaign at a release's size (docs/measurements/real-size.md): a kernel-shaped history of
# 10,000 commits with merges made in REAL_SIZE_DIR, bisected with real builds and boots, its figures
# printed (steps, boots, each build, the wall time split). About 75 minutes under TCG; not in `bench`.
REAL_SIZE_DIR ?= $(CURDIR)/build/real-size
bench-real-size: setup
	$(PY) -m bench.real_size $(REAL_SIZE_DIR) --commits 10000 --seed 1

bench-boot: setup
	$(PY) bench/boot_time.py --boots 5 distro $(BENCH_KERNELS)

# Kernel build times on linux-source-6.1 (docs/kernel-builds.md): cold, incremental, cached.
bench-build: setup
	$(PY) bench/kernel_build.py

# Time to culprit (docs/measurements/engine.md): the search core with a simulated lab clock, 1,000 campaigns
# per case and S = 1, 2, 4, 8, with and without build-ahead (bench/bisect_rounds; 9 min a case in
# 2 processes, so about 45 min), then the real engine with fake hosts, 100 campaigns per case and
# S (bench/bisect_accuracy; 2.4 min a case, about 12 min; --trials 1000 takes about 2 h).
bench-bisect: setup
	$(PY) -m bench.bisect_rounds --trials 1000
	$(PY) -m bench.bisect_accuracy --trials 100

# Ranges of a kernel release's size (docs/measurements/real-size.md): one decision at 100,000
# candidates with 50 skipped (seconds), then the real engine with fake hosts on kernel-shaped
# histories with merges, case 1 at S = 1 and 4 (1,000 and 10,000 commits, 100 campaigns a row:
# about 1.5, 3, 2.5 and 8 min in 2 processes; the table's 300 a row and 50,000 commits are
# commands in that page).
bench-size: setup
	$(PY) -m bench.decision_cost --candidates 100000 --skips 50
	$(PY) -m bench.bisect_accuracy --trials 100 --cases 1 --slots 1 4 --history kernel:1000 kernel:10000

# Regressions in several steps (docs/how-bisection-works.md): the real engine with fake hosts over
# histories of one, two and three steps, 50 campaigns a case, the 50/50 case 10 (about 3 min).
bench-steps: setup
	$(PY) -m bench.bisect_steps --trials 50 --cases 1 3 4 5
	$(PY) -m bench.bisect_steps --trials 10 --cases 2

# The search core over N = 15, 100, 1000 commits, a build per host (what-if) and slots refilled as
# they free (docs/measurements/engine.md).
bench-rounds: setup
	$(PY) -m bench.bisect_rounds --trials 100 --commits 15 100 1000
	$(PY) -m bench.bisect_rounds --trials 100 --cases 1 --builders 0
	$(PY) -m bench.bisect_rounds --trials 100 --cases 1 --builders 0 --refill

# What the lab's slots buy a set bisection (config/settings): the real runner over fake guests
# whose runs sleep, S = 1, 2, 3 (bench/set_slots.py; docs/config-bisect.md, "Slots").
bench-sets: setup
	$(PY) bench/set_slots.py --trials 3 --run-s 0.25
