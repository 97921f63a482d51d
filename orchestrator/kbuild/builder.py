"""Build a kernel at a commit: (repository, commit, recipe) -> a bzImage in the store.

    builder = default_builder(wiring.machine_build_lease())
    image = builder.build(Path("~/linux"), "v6.1", parse_recipe(["guest-base"]))
    image.path  # .../kernels/<key>/bzImage

Steps: resolve the commit and its tree in the user's repository (read only); a hit in the
alias index (tree, recipe, compiler) returns at once. Otherwise, under a per-repository
lock: check the commit out in vmbisect's own clone, configure (skipped when nothing that
feeds Kconfig changed), check every requested option stuck, look the final .config up in the
store, else make bzImage (and modules) in the persistent build directory of this recipe,
classify a failure, and publish the result.

The build runs on CPUs it leases for as long as it runs (`lease`, orchestrator/hosts/buildcpus.py:
the same lease as a guest's slot, so no build shares cores with a measured guest of any
campaign of this machine): every make and merge_config.sh is pinned to them, `make -j` as many.
The wait for them does not count against the timeout.

`timeout_s` bounds one build (a campaign's timeouts.build_s): every make and merge_config.sh
runs in its own process group, killed as a whole when the time is up; the commit is then a
BuildFailed (skipped), since a build that does not finish is the commit's to explain.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO

from orchestrator import paths
from orchestrator.errors import BuildFailed, InfraError
from orchestrator.kbuild import gitrepo, makecmd
from orchestrator.kbuild.classify import INFRA, classify
from orchestrator.kbuild.kconfig import has_modules, parse_config, unmet
from orchestrator.kbuild.kernelstore import (
    CCACHE,
    COLD,
    INCREMENTAL,
    KernelImage,
    KernelStore,
    alias_key,
    cache_key,
    sha256_file,
)
from orchestrator.kbuild.recipe import BASES, DEFAULT_CC, Recipe

DEFAULT_CCACHE_MAX = "20G"
CONFIG_STATE = "vmbisect-config.json"
_KCONFIG_DIRS = ("scripts/", "arch/x86/configs/", "kernel/configs/")

# A lease of CPUs to build on: called with what to do when it has to wait, held while building.
CpuLease = Callable[[Callable[[], None]], AbstractContextManager[Sequence[int]]]


class ConfigNotApplied(BuildFailed):
    """A requested option is not in the final .config (absent at this commit, unmet dependency)."""


@dataclass(frozen=True)
class ToolchainInfo:
    compiler: str
    linker: str


def _first_line(argv: list[str]) -> str | None:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    except OSError:
        return None
    lines = proc.stdout.splitlines()
    return lines[0].strip() if proc.returncode == 0 and lines else None


def probe_toolchain(cc: str) -> ToolchainInfo:
    compiler = _first_line([cc, "--version"])
    if compiler is None:
        raise InfraError(f"compiler {cc!r} not found or not working (install it, e.g. apt-get install {cc})")
    return ToolchainInfo(compiler, _first_line(["ld", "--version"]) or "unknown")


def kconfig_inputs(ls_tree_lines: Sequence[str]) -> list[str]:
    """The tree entries that can change what Kconfig produces (pure filter of `git ls-tree -r`)."""
    keep = []
    for line in ls_tree_lines:
        path = line.split("\t", 1)[1]
        if path == "Makefile" or path.rsplit("/", 1)[-1].startswith("Kconfig") or path.startswith(_KCONFIG_DIRS):
            keep.append(line)
    return keep


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@contextmanager
def _pinned(cpus: Sequence[int] | None) -> Iterator[None]:
    """This thread on `cpus` while it starts a process (which inherits them), then as before."""
    if not cpus:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _fail(commit: str, log_path: Path, log_text: str) -> Exception:
    kind, lines = classify(log_text)
    first = lines[0].strip() if lines else "no output"
    if kind == INFRA:
        return InfraError(f"build of {commit[:12]} failed on the host: {first} (log: {log_path})")
    return BuildFailed(f"build of {commit[:12]} failed: {first} (log: {log_path})", "\n".join(lines))


class KernelBuilder:
    """Builds kernels into `store`; clones and build directories live under `work_root`.

    `ccache_dir`: vmbisect's ccache directory (None, or no ccache installed: build without).
    `lease`: the CPUs each build runs on (None: this thread's CPUs, unleased); `jobs`: make's
    -j (default: as many as the CPUs).
    """

    def __init__(self, store: KernelStore, work_root: Path, ccache_dir: Path | None,
                 jobs: int | None = None, ccache_max: str = DEFAULT_CCACHE_MAX,
                 progress: Callable[[str], None] = lambda _msg: None,
                 note: Callable[[str], None] | None = None, lease: CpuLease | None = None) -> None:
        self.store = store
        self.work_root = work_root
        self.ccache_dir = ccache_dir if ccache_dir is not None and shutil.which("ccache") else None
        self.jobs = jobs or len(os.sched_getaffinity(0))
        self._jobs_given = jobs is not None
        self.lease = lease
        self._cpus: Sequence[int] | None = None  # the CPUs of the build under way (None: unpinned)
        self.ccache_max = ccache_max
        self.progress = progress
        # what a user is told even where progress is quiet (a clone made again); default: progress
        self.note = note or progress
        self._deadline: tuple[float, float] | None = None  # (monotonic end, limit) of the build under way

    def build_dir(self, repo_id: str, recipe: Recipe, slot: str | None = None) -> Path:
        return self.work_root / repo_id / "build" / (slot or recipe.digest()[:16])

    def build(self, repo: Path, rev: str, recipe: Recipe, timeout_s: float | None = None,
              objects: Path | None = None, slot: str | None = None) -> KernelImage:
        """`rev` of `repo` built with `recipe`. `objects`: another repository `rev` lives in (a
        revert vmbisect made in its own clone; the user's repository is never written): it is
        fetched into the build's checkout of `repo`, so the build reuses that build directory.
        `slot`: the build directory's name when not the recipe's (a config bisection builds
        every candidate .config in one directory: make rebuilds only what the options touch)."""
        started = time.monotonic()
        self._deadline = None
        revision = gitrepo.resolve(repo, rev, objects)
        toolchain = probe_toolchain(recipe.cc)
        alias = alias_key(revision.tree, recipe.digest(), toolchain.compiler)
        hit = self.store.get_alias(alias)
        if hit is not None:
            return replace(hit, duration_s=time.monotonic() - started)
        repo_dir = self.work_root / revision.repo_id
        with _locked(repo_dir / "lock"):
            hit = self.store.get_alias(alias)
            if hit is not None:
                return replace(hit, duration_s=time.monotonic() - started)
            with self._leased():
                at = time.monotonic()
                self._deadline = (at + timeout_s, timeout_s) if timeout_s is not None else None
                image = self._build_locked(repo, repo_dir, revision, recipe, toolchain, started, objects, slot)
        self.store.set_alias(alias, image.key)
        return image

    @contextmanager
    def _leased(self) -> Iterator[None]:
        """This machine's CPUs for the build under way, held until it ends (`lease`)."""
        if self.lease is None:
            yield
            return
        with self.lease(lambda: self.progress("waiting for CPUs a guest or another build holds")) as cpus:
            # of those, the ones this process may use (a container may allow fewer than the machine has)
            self._cpus = tuple(sorted(set(cpus) & os.sched_getaffinity(0))) or None
            try:
                yield
            finally:
                self._cpus = None

    def _build_locked(self, repo: Path, repo_dir: Path, revision: gitrepo.Revision, recipe: Recipe,
                      toolchain: ToolchainInfo, started: float, objects: Path | None = None,
                      slot: str | None = None) -> KernelImage:
        self.progress(f"checking out {revision.commit[:12]}")
        src = self._checked_out(repo, repo_dir, revision, objects)
        build_dir = self.build_dir(revision.repo_id, recipe, slot)
        build_dir.mkdir(parents=True, exist_ok=True)
        log_path, env = self._log(repo_dir, f"{time.strftime('%Y%m%dT%H%M%S')}-{revision.commit[:12]}")
        with log_path.open("w") as log:
            config_text = self._config_of(src, build_dir, revision, recipe, toolchain, env, log, log_path)
            config_sha = hashlib.sha256(config_text.encode()).hexdigest()
            key = cache_key(revision.tree, config_sha, toolchain.compiler)
            hit = self.store.get(key, duration_s=time.monotonic() - started)
            if hit is not None:
                return hit
            modules = has_modules(parse_config(config_text))
            how = self._how(build_dir)
            self.progress(f"building {' '.join(makecmd.build_targets(modules))} in {build_dir}")
            self._make(src, build_dir, makecmd.build_targets(modules), recipe, env, log, log_path, revision)
            with self.store.staging() as stage:
                shutil.copyfile(build_dir / makecmd.IMAGE, stage / "bzImage")
                shutil.copyfile(build_dir / ".config", stage / "config")
                release = (build_dir / "include/config/kernel.release").read_text().strip()
                modules_rel = None
                if modules:
                    self._make(src, build_dir, ["modules_install", f"INSTALL_MOD_PATH={stage / 'modules'}"],
                               recipe, env, log, log_path, revision)
                    modules_rel = f"modules/lib/modules/{release}"
                    for link in ("build", "source"):
                        (stage / modules_rel / link).unlink(missing_ok=True)
                log.flush()
                shutil.copyfile(log_path, stage / "build.log")
                digest = sha256_file(stage / "bzImage")
                return self.store.publish(key, stage, {
                    "kind": "built",
                    "inputs": {"repo": str(repo.resolve()), "commit": revision.commit, "tree": revision.tree,
                               "recipe": recipe.describe(), "recipe_digest": recipe.digest(),
                               "config_sha256": config_sha, "compiler": toolchain.compiler},
                    "outputs": {"bzimage_sha256": digest, "bzimage_size": (stage / "bzImage").stat().st_size,
                                "release": release, "modules_dir": modules_rel},
                    "duration_s": round(time.monotonic() - started, 3),
                    "how": how,
                    "build_log": str(log_path),
                    "created": time.time(),
                })

    def _how(self, build_dir: Path) -> str:
        """How the build about to run starts: `incremental` (its build directory holds a
        previous build's objects), `ccache` (a fresh directory, the compiler cache on) or `cold`."""
        if (build_dir / "vmlinux").exists():
            return INCREMENTAL
        return CCACHE if self.ccache_dir is not None else COLD

    def _run(self, argv: list[str], cwd: Path, env: dict[str, str], log: IO[str], log_path: Path,
             revision: gitrepo.Revision) -> None:
        log.write("$ " + " ".join(argv) + "\n")
        log.flush()
        start = log.tell()
        remaining = None if self._deadline is None else max(self._deadline[0] - time.monotonic(), 0.0)
        try:
            with _pinned(self._cpus):
                proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as exc:
            raise InfraError(f"cannot run {argv[0]}: {exc.strerror}") from exc
        try:
            proc.wait(timeout=remaining)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            assert self._deadline is not None
            raise BuildFailed(f"build of {revision.commit[:12]} took longer than timeouts.build_s "
                              f"({self._deadline[1]:g} s); {Path(argv[0]).name} and its children killed "
                              f"(log: {log_path})") from None
        except BaseException:
            _kill_group(proc)  # Ctrl-C or an error here: no compiler is left running
            raise
        if proc.returncode == 0:
            return
        log.flush()
        with log_path.open() as f:
            f.seek(start)
            text = f.read()
        if proc.returncode < 0:
            raise InfraError(f"build of {revision.commit[:12]}: {Path(argv[0]).name} killed by signal "
                             f"{-proc.returncode} (log: {log_path})")
        raise _fail(revision.commit, log_path, text)

    def _make(self, src: Path, build_dir: Path, targets: list[str], recipe: Recipe, env: dict[str, str],
              log: IO[str], log_path: Path, revision: gitrepo.Revision) -> None:
        jobs = len(self._cpus) if self._cpus and not self._jobs_given else self.jobs
        argv = makecmd.make_argv(src, build_dir, targets, recipe.cc, self.ccache_dir is not None, jobs)
        self._run(argv, src, env, log, log_path, revision)

    def _config_of(self, src: Path, build_dir: Path, revision: gitrepo.Revision, recipe: Recipe,
                   toolchain: ToolchainInfo, env: dict[str, str], log: IO[str], log_path: Path) -> str:
        """The .config `recipe` gives (`_configure`), checked: ConfigNotApplied when an option the
        recipe asks for did not take."""
        self._configure(src, build_dir, revision, recipe, toolchain, env, log, log_path)
        text = (build_dir / ".config").read_text()
        problems = unmet(recipe.wanted(), parse_config(text))
        if problems:
            raise ConfigNotApplied(f"config: at {revision.commit[:12]} " + "; ".join(problems))
        return text

    def _configure(self, src: Path, build_dir: Path, revision: gitrepo.Revision, recipe: Recipe,
                   toolchain: ToolchainInfo, env: dict[str, str], log: IO[str], log_path: Path) -> None:
        """Make build_dir/.config from the recipe; leave it (and its mtime) alone when unchanged."""
        inputs = hashlib.sha256(json.dumps({
            "recipe": recipe.digest(), "compiler": toolchain.compiler, "linker": toolchain.linker,
            "tree": kconfig_inputs(gitrepo.ls_tree(src, revision.commit)),
        }).encode()).hexdigest()
        state_path = build_dir / CONFIG_STATE
        config = build_dir / ".config"
        if state_path.is_file() and config.is_file():
            state = json.loads(state_path.read_text())
            if state.get("inputs") == inputs and state.get("config_sha256") == sha256_file(config):
                log.write("vmbisect: configuration inputs unchanged; keeping .config\n")
                return
        self.progress("configuring")
        cfg = build_dir.with_name(build_dir.name + ".cfg")
        cfg.mkdir(exist_ok=True)
        if recipe.base in BASES:
            self._make(src, cfg, [recipe.base], recipe, env, log, log_path, revision)
        else:
            (cfg / ".config").write_text(recipe.base_text)
        fragments = []
        if recipe.base in BASES and (src / makecmd.KVM_GUEST_FRAGMENT).is_file():
            fragments.append(src / makecmd.KVM_GUEST_FRAGMENT)
        for index, fragment in enumerate(recipe.fragments):
            fragments.append(cfg / f"vmbisect-fragment-{index}.config")
            fragments[-1].write_text(fragment.text)
        if recipe.extras:
            fragments.append(cfg / "vmbisect-extras.config")
            fragments[-1].write_text(recipe.extras_text())
        self._run(makecmd.merge_argv(src, cfg, fragments), src, env, log, log_path, revision)
        self._make(src, cfg, ["olddefconfig"], recipe, env, log, log_path, revision)
        new = (cfg / ".config").read_bytes()
        if not config.is_file() or config.read_bytes() != new:
            tmp = build_dir / ".config.vmbisect-new"
            tmp.write_bytes(new)
            os.replace(tmp, config)
        state_path.write_text(json.dumps({"inputs": inputs, "config_sha256": hashlib.sha256(new).hexdigest()}) + "\n")

    def _checked_out(self, repo: Path, repo_dir: Path, revision: gitrepo.Revision,
                     objects: Path | None = None) -> Path:
        """vmbisect's checkout of `repo` at `revision` (its commit fetched from `objects`, if given)."""
        src = repo_dir / "src"
        gitrepo.ensure_clone(repo, src, self.note)
        gitrepo.fetch_commit(src, objects if objects is not None else repo, revision.commit)
        gitrepo.checkout(src, revision.commit)
        return src

    def _log(self, repo_dir: Path, name: str) -> tuple[Path, dict[str, str]]:
        """The log file logs/<name>.log and the environment of a make."""
        log_path = repo_dir / "logs" / f"{name}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        return log_path, makecmd.build_env(os.environ, self.ccache_dir, self.work_root, self.ccache_max)

    def configured(self, repo: Path, rev: str, recipe: Recipe) -> str:
        """The .config `recipe` gives at `rev` of `repo` (configured as a build would be, nothing
        built): a config bisection's side given as a recipe."""
        self._deadline = None
        revision = gitrepo.resolve(repo, rev)
        toolchain = probe_toolchain(recipe.cc)
        repo_dir = self.work_root / revision.repo_id
        with _locked(repo_dir / "lock"), self._leased():
            src = self._checked_out(repo, repo_dir, revision)
            build_dir = self.build_dir(revision.repo_id, recipe)
            build_dir.mkdir(parents=True, exist_ok=True)
            log_path, env = self._log(repo_dir, f"configure-{recipe.digest()[:16]}")
            with log_path.open("w") as log:
                return self._config_of(src, build_dir, revision, recipe, toolchain, env, log, log_path)

    def olddefconfig(self, repo: Path, rev: str, config_text: str, cc: str = DEFAULT_CC) -> str:
        """`config_text` as `make olddefconfig` leaves it at `rev` of `repo` (seconds, no build):
        written to a file of vmbisect's own, in a scratch build directory of the checkout."""
        self._deadline = None
        revision = gitrepo.resolve(repo, rev)
        repo_dir = self.work_root / revision.repo_id
        with _locked(repo_dir / "lock"), self._leased():
            src = self._checked_out(repo, repo_dir, revision)
            scratch = repo_dir / "olddefconfig"
            scratch.mkdir(parents=True, exist_ok=True)
            (scratch / ".config").write_text(config_text)
            log_path, env = self._log(repo_dir, "olddefconfig")
            argv = makecmd.make_argv(src, scratch, ["olddefconfig"], cc, self.ccache_dir is not None)
            with log_path.open("w") as log:
                self._run(argv, src, env, log, log_path, revision)
            return (scratch / ".config").read_text()


def default_builder(lease: CpuLease, progress: Callable[[str], None] = lambda _msg: None,
                    note: Callable[[str], None] | None = None) -> KernelBuilder:
    """The builder of vmbisect's data directory, its builds on the CPUs `lease` holds (a guest
    pool's `pool.builds.hold`, or orchestrator/wiring.py machine_build_lease: every CPU of this
    machine, so `vmbisect build` never compiles beside a measured guest of this machine either)."""
    return KernelBuilder(KernelStore(), paths.data_dir() / "kbuild", paths.cache_dir() / "ccache",
                         progress=progress, note=note, lease=lease)
