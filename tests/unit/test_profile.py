"""The kernel profile diff's pure parts: `perf script` folded (golden: a real capture of fio in a
TCG guest of the distribution kernel, tests/data/profile), self and call-chain shares, the rows
that moved, the robot's layout within 78 columns, the differential flame graphs, and the
profile boots' plan; then when a bisection takes profile boots and what it keeps."""

from __future__ import annotations

import re
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest

from orchestrator import wiring
from orchestrator.bisect.engine import Outcome
from orchestrator.campaign.file import parse_campaign
from orchestrator.errors import InfraError
from orchestrator.explain import profile_boots, profile_render
from orchestrator.explain.kallsyms import SymbolMap, is_marker
from orchestrator.explain.perfscript import KERNEL, fold_script, folded_text, frame_name, parse_folded
from orchestrator.explain.profile import SELF, Profile, diff, key, only_on, shares, top
from orchestrator.explain.profile_stored import Profiled, collect
from orchestrator.render.flame import colour, flame_svg, tree
from orchestrator.results import BisectOutcome, BisectResult
from orchestrator.store import Store
from tests.fakes import FakeBuilder, FakeMeasurer, fake_perf_pool, fake_profile_pair

DATA = Path(__file__).parent.parent / "data" / "profile"


def stacks(text: str) -> Counter[tuple[str, ...]]:
    return parse_folded(text)


# -- perf script, folded -------------------------------------------------------------------------

def test_a_real_perf_script_capture_folds_to_its_golden_stacks():
    folded, event = fold_script((DATA / "bfq-fio.perf-script").read_text())
    assert event == "cpu-clock" and sum(folded.values()) == 56
    assert folded == parse_folded((DATA / "bfq-fio.folded").read_text())


def test_the_first_sample_folds_outermost_caller_first_with_kernel_frames_marked():
    first = (DATA / "bfq-fio.perf-script").read_text().split("\n\n")[0]
    (stack, n), = fold_script(first + "\n")[0].items()
    frames = [ln.split()[1] for ln in first.splitlines()[1:]]
    assert n == 1 and stack[0] == "migration/0" and stack[1:] == tuple(f + KERNEL for f in reversed(frames))


def test_a_module_frame_is_a_kernel_frame_and_the_bfq_functions_are_named():
    folded, _ = fold_script((DATA / "bfq-fio.perf-script").read_text())
    assert any("bfq_dispatch_request" + KERNEL in s for s in folded)


@pytest.mark.parametrize("symbol, dso, name", [
    ("native_safe_halt", "[kernel.kallsyms]", "native_safe_halt_[k]"),
    ("bfq_dispatch_request+0x1c", "[bfq]", "bfq_dispatch_request_[k]"),
    ("[unknown]", "/usr/lib/x86_64-linux-gnu/libc.so.6", "[libc.so.6]"),
    ("[unknown]", "[unknown]", "[unknown]"),
    ("__vdso_clock_gettime", "[vdso]", "__vdso_clock_gettime"),
    ("main", "/usr/bin/fio", "main"),
])
def test_a_frame_is_named_by_its_symbol_without_offset_or_by_its_dso(symbol, dso, name):
    assert frame_name(symbol, dso) == name


def test_a_command_name_with_spaces_and_a_repeated_user_frame_fold_to_one_frame_each():
    text = ("kworker/u4:1 hot  41/41    [001]    12.5: cpu-clock: \n"
            "\tffffffff81000000 do_idle ([kernel.kallsyms])\n"
            "\t7f00 [unknown] ([unknown])\n\t7f01 [unknown] ([unknown])\n\t7f02 start (/usr/bin/x)\n\n")
    assert fold_script(text)[0] == Counter({("kworker/u4:1_hot", "start", "[unknown]", "do_idle_[k]"): 1})


# -- kernel symbols: a section marker is never a function ----------------------------------------

GUEST_MAP = DATA / "guest-base-6.1.System.map"  # a guest-base 6.1 kernel's System.map around its markers


def test_a_guest_base_idle_sample_perf_named_after_a_marker_folds_to_the_idle_loop_golden():
    folded, _ = fold_script((DATA / "guest-base-idle.perf-script").read_text(), SymbolMap.parse(GUEST_MAP.read_text()))
    assert folded == parse_folded((DATA / "guest-base-idle.folded").read_text())
    frames = {f for stack in folded for f in stack}
    assert "native_safe_halt_[k]" in frames and not any(is_marker(f.removesuffix(KERNEL)) for f in frames)


def test_without_a_symbol_map_a_marker_frame_is_named_after_its_section_never_as_a_function():
    folded, _ = fold_script((DATA / "guest-base-idle.perf-script").read_text())
    idle = [s[-1] for s in folded if s[0] == "swapper"]
    assert idle == ["[after:.sched.text]_[k]"] * 2
    assert frame_name("__cpuidle_text_start", "[kernel.kallsyms]") == "[idle:.cpuidle.text]_[k]"
    # a profile folded and stored before: read back with the marker named the same way
    assert parse_folded("swapper;do_idle_[k];__sched_text_end_[k] 3\n") == Counter(
        {("swapper", "do_idle_[k]", "[after:.sched.text]_[k]"): 3})


def test_the_resolver_takes_the_function_at_a_markers_address_and_names_a_section_without_one():
    kernel = SymbolMap.parse(GUEST_MAP.read_text())
    end = next(int(line.split()[0], 16) for line in GUEST_MAP.read_text().splitlines() if line.endswith(" __sched_text_end"))
    assert kernel.name(end) == kernel.name(end + 5) == "native_safe_halt"
    assert kernel.name(0xffffffff8102de5c) == "read_hpet"
    assert kernel.name(0xffffffff81800113) == "[after:.static_call.text]"  # past _etext: no function there


@pytest.mark.parametrize("name", ["__start_tty", "__stop_tx", "__blk_mq_end_request", "__folio_start_writeback",
                                  "__block_write_begin", "_text_poke", "do_idle"])
def test_functions_whose_names_look_like_markers_are_functions(name):
    assert not is_marker(name)


def real_maps() -> list[Path]:
    """Real kernels' whole symbol maps on this machine: this kernel's kallsyms (when its addresses
    show) and System.map files of kernels built here or installed with their symbols."""
    found = [Path("/proc/kallsyms")] if Path("/proc/kallsyms").is_file() else []
    found += sorted(Path("/boot").glob("System.map-*")) + sorted(Path.home().glob(".local/share/vmbisect/kbuild/*/build/*/System.map"))
    return found


@pytest.mark.parametrize("path", real_maps(), ids=str)
def test_on_a_real_kernels_symbol_map_no_address_is_named_after_a_marker(path):
    kernel = SymbolMap.parse(path.read_text(errors="replace"))
    if not kernel:
        pytest.skip(f"{path} holds no symbols (addresses hidden, or Debian's stub System.map)")
    assert kernel.markers, "a kernel's map has section markers"
    for at in kernel.markers:
        for address in (at, at + 1, at + 0x40):
            name = kernel.name(address)
            assert name is None or not is_marker(name), f"{address:x} named {name}"


@pytest.mark.parametrize("text", ["not a header\n", "fio 1/1 [000] 1.0: cpu-clock: \n\tgarbage\n"])
def test_output_the_parser_does_not_know_is_an_infra_error_naming_the_line(text):
    with pytest.raises(InfraError, match="perf script line"):
        fold_script(text)


def test_folded_text_reads_back_and_a_line_without_count_is_refused():
    s = Counter({("a", "b"): 3, ("a",): 1})
    assert parse_folded(folded_text(s)) == s
    with pytest.raises(InfraError, match="folded stacks line 1"):
        parse_folded("a;b\n")


# -- shares and the diff -----------------------------------------------------------------------

def test_self_share_counts_the_sampled_frame_and_children_each_frame_once_per_sample():
    own, chain = shares(stacks("cmd;a;b 2\ncmd;a;a 1\ncmd;c 1\n"))
    assert own == {"b": 50.0, "a": 25.0, "c": 25.0}
    assert chain == {"a": 75.0, "b": 50.0, "c": 25.0}


def test_rows_are_ordered_by_the_largest_move_and_boots_apart_only_with_two_boots_a_side():
    parent = Profile("p", "cpu-clock", (stacks("x;a 9\nx;b 1\n"), stacks("x;a 8\nx;b 2\n")))
    culprit = Profile("c", "cpu-clock", (stacks("x;a 5\nx;b 5\n"), stacks("x;a 4\nx;b 6\n")))
    d = diff(parent, culprit)
    first = d.rows[0]
    assert abs(first.change) == pytest.approx(40.0) and first.apart
    assert not diff(Profile("p", "", parent.boots[:1]), Profile("c", "", culprit.boots[:1])).rows[0].apart
    assert key(d, [r for r in d.rows if r.kind == SELF and r.symbol == "b"][0]) == "perf-profile.self.cpu-clock.b"
    assert key(diff(Profile("p", "cycles", parent.boots), culprit), first) == f"perf-profile.{first.kind}.cycles-pp.a"


def test_top_leaves_out_a_children_row_that_repeats_its_self_row():
    d = diff(Profile("p", "cpu-clock", (stacks("x;a 1\nx;b 1\n"),)), Profile("c", "cpu-clock", (stacks("x;a 3\nx;b 1\n"),)))
    assert {(r.kind, r.symbol) for r in top(d)} == {(SELF, "a"), (SELF, "b")}


def real_diff():
    none, bfq = (parse_folded((DATA / f"sched-{s}.folded").read_text()) for s in ("none", "bfq"))
    return diff(Profile("none", "cpu-clock", (none,)), Profile("bfq", "cpu-clock", (bfq,)))


def test_on_the_real_capture_bfq_functions_are_sampled_with_bfq_only_and_direct_issue_with_none_only():
    d = real_diff()
    assert any(r.symbol.startswith("bfq_") for r in only_on(d, "culprit"))
    assert not any(r.symbol.startswith("bfq_") for r in only_on(d, "parent"))
    assert "blk_mq_try_issue_directly" + KERNEL in {r.symbol for r in only_on(d, "parent")}


def test_the_markdown_section_keeps_every_row_whole_with_long_keys_in_a_key_below_golden():
    lines = profile_render.markdown(Profiled(real_diff()))
    block = lines[lines.index("```") + 1:lines.index("```", lines.index("```") + 1)]
    rows = [line for line in block[3:] if line.strip() and not line.startswith("[")]
    assert all(re.match(r"^ *[\d.]+ +[+-][\d.]+ +[\d.]+ [! ] perf-profile\.", line) for line in rows), "no row wrapped"
    assert "\n".join(lines) + "\n" == (Path(__file__).parent.parent / "data" / "render" /
                                        "profile-sched-none-bfq.md").read_text()


def test_a_clocksource_read_taking_a_tenth_of_the_samples_gets_a_note_saying_what_it_means():
    notes = profile_render.emulated_notes(real_diff())
    assert len(notes) == 1 and notes[0].startswith("read_hpet (reading the clocksource) takes 17.1% of the parent's")
    assert "emulated device" in notes[0] and "clocksource=tsc tsc=reliable" in notes[0]
    quiet = diff(Profile("a", "cpu-clock", (stacks("x;do_idle_[k];read_hpet_[k] 1\nx;do_idle_[k] 99\n"),)),
                 Profile("b", "cpu-clock", (stacks("x;do_idle_[k] 100\n"),)))
    assert profile_render.emulated_notes(quiet) == []


def test_the_markdown_section_keeps_within_78_columns_and_lists_both_kinds():
    lines = profile_render.markdown(Profiled(real_diff()))
    assert max(len(line) for line in lines) <= 78
    text = "\n".join(lines)
    assert "perf-profile.self.cpu-clock." in text and "perf-profile.children.cpu-clock." in text
    assert "Sampled with the culprit only" in text and "bfq_dispatch_request" in text
    assert profile_render.markdown(Profiled(None, "perf not found")) == ["Kernel profile: none (perf not found)", ""]
    assert profile_render.markdown(None) == []


# -- flame graphs -----------------------------------------------------------------------------------

def test_the_tree_normalises_each_profile_to_its_own_samples():
    root = tree(stacks("x;a 1\nx;b 1\n"), stacks("x;a 30\nx;b 10\n"))
    assert root.children["x"].children["a"].mine == pytest.approx(0.5)
    assert root.children["x"].children["a"].other == pytest.approx(0.75)


def test_colour_is_red_for_growth_blue_for_shrinkage_deepest_at_the_largest_change():
    assert colour(0.1, 0.1) == "rgb(250,50,50)" and colour(-0.1, 0.1) == "rgb(50,50,250)"
    assert colour(0.0, 0.1) == "rgb(250,250,250)" and colour(0.05, 0.1) == "rgb(250,150,150)"


def frames(svg: str) -> dict[str, tuple[float, str]]:
    """frame name -> (width, fill) from the tooltips and rectangles."""
    out = {}
    for name, width, fill in re.findall(r"<title>([^:<]+): [^<]*</title><rect [^>]*width=\"([\d.]+)\"[^>]*fill=\"([^\"]+)\"",
                                        svg):
        out[name] = (float(width), fill)
    return out


def test_drawn_for_after_a_frame_only_before_ran_is_absent_and_drawn_for_before_it_is_blue():
    before, after = stacks("x;gone 1\nx;kept 1\n"), stacks("x;kept 1\nx;new 1\n")
    grew = frames(flame_svg(before, after, True, "t", "before", "after"))
    shrank = frames(flame_svg(before, after, False, "t", "before", "after"))
    assert "gone" not in grew and grew["new"][1].startswith("rgb(250,") and grew["new"][0] == pytest.approx(600.0)
    assert "new" not in shrank and shrank["gone"][1] == "rgb(50,50,250)"
    assert grew["kept"][1] == shrank["kept"][1] == "rgb(250,250,250)"


def test_every_name_in_the_flame_graph_is_escaped():
    evil = '<script>alert("x")</script>&'
    svg = flame_svg(stacks(f"x;{evil} 1\n"), stacks(f"x;{evil} 2\n"), True, evil, "b", "a")
    assert "<script>" not in svg and "&lt;script&gt;" in svg and svg.startswith("<svg") and svg.endswith("</svg>")


def test_the_html_section_has_both_graphs_and_escapes_the_table():
    page = profile_render.html(Profiled(real_diff()))
    assert page.count("<svg") == 2 and "bfq_dispatch_request" in page
    assert "<strong>Kernel profile:</strong> none (x &lt;y&gt;)" in profile_render.html(Profiled(None, "x <y>"))


# -- the profile boots ---------------------------------------------------------------------------

def test_the_boots_alternate_so_each_side_is_as_often_early_as_late():
    assert profile_boots.order(1) == ["parent", "culprit"]
    assert profile_boots.order(2) == ["parent", "culprit", "culprit", "parent"]


def test_the_event_is_the_pmu_cycles_only_where_the_guest_lists_a_cpu_pmu():
    assert profile_boots.event_for("breakpoint\nkprobe\nmsr\nsoftware\ntracepoint\nuprobe\n") == "cpu-clock"
    assert profile_boots.event_for("breakpoint\ncpu\nsoftware\n") == "cycles"


def test_the_sample_rate_is_499_a_second_unless_a_long_run_on_many_cpus_would_print_too_much():
    assert profile_boots.sample_hz(2, 10) == 499
    assert profile_boots.sample_hz(2, 60) == 166 and profile_boots.sample_hz(64, 3600) == profile_boots.MIN_HZ


def test_every_command_of_a_profiled_run_runs_under_perf_record_into_a_file_of_its_own():
    seen = []
    guest = profile_boots.PerfGuest(SimpleNamespace(exec=lambda argv, **k: seen.append(argv), accel="tcg"), "cpu-clock")
    guest.exec(["fio", "--output-format=json"], timeout_s=5)
    guest.exec(["true"])
    assert seen[0] == ["perf", "record", "-a", "-g", "-e", "cpu-clock", "-F", "499", "-o",
                       "/tmp/vmbisect-profile-0.data", "--", "fio", "--output-format=json"]
    assert guest.files == ["/tmp/vmbisect-profile-0.data", "/tmp/vmbisect-profile-1.data"] and guest.accel == "tcg"


CAMPAIGN = {"name": "p", "repository": "/src/linux", "good": "a", "bad": "b", "workload": {"name": "fio"},
            "metric": {"name": "read_iops", "threshold": "-10%"}, "guest": {"disks": {"count": 1}}, "explain": "profile"}
FOUND = Outcome(BisectOutcome.FOUND, "c" * 40, result=BisectResult(BisectOutcome.FOUND, "c" * 40, "p" * 40))


@pytest.fixture
def faked(monkeypatch, tmp_path):
    """Profile boots over fakes: the pool given, FakeBuilder kernels, the real capture."""
    monkeypatch.setattr(profile_boots, "perf_pool", fake_perf_pool)
    monkeypatch.setattr(profile_boots, "profile_pair", fake_profile_pair)
    monkeypatch.setattr(wiring, "bisection", lambda *a, **k: (FakeBuilder(), FakeMeasurer()))
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    return SimpleNamespace(store=store, cid=store.new_campaign("p", {}), said=[])


def test_a_found_culprit_gets_its_profile_row_and_no_boot_or_run(faked):
    rid = profile_boots.profile_culprit(parse_campaign(CAMPAIGN), faked.store, faked.cid, None, FOUND.result,
                                        faked.said.append, wiring)
    row, = faked.store.profiles(faked.cid)
    assert row.id == rid and row.parent == "p" * 40 and row.culprit == "c" * 40 and row.event == "cpu-clock"
    assert len(row.stacks["parent"]) == len(row.stacks["culprit"]) == 2
    assert faked.store.boots(faked.cid) == [] and list(faked.store.runs(faked.cid)) == []
    got = collect(faked.store, faked.cid, "p" * 40, "c" * 40)
    assert got is not None and got.diff is not None and len(got.diff.culprit.boots) == 2


@pytest.mark.parametrize("outcome, explain", [
    (Outcome(BisectOutcome.INCONCLUSIVE, candidates=("a", "b")), "profile"),
    (FOUND, "none"),
])
def test_no_profile_without_a_culprit_or_when_the_campaign_says_none(faked, outcome, explain):
    assert profile_boots.profile_culprit(parse_campaign({**CAMPAIGN, "explain": explain}), faked.store, faked.cid,
                                         None, outcome.result, faked.said.append, wiring) is None
    assert faked.store.profiles(faked.cid) == []


def test_a_profile_that_cannot_be_taken_is_a_note_and_never_the_campaigns_failure(faked, monkeypatch):
    @contextmanager
    def no_perf(*_a):
        raise InfraError("perf not found at /usr/bin/perf; install the Debian package linux-perf")
        yield

    monkeypatch.setattr(profile_boots, "perf_pool", no_perf)
    profile_boots.profile_culprit(parse_campaign(CAMPAIGN), faked.store, faked.cid, None, FOUND.result, faked.said.append,
                                  wiring)
    row, = faked.store.profiles(faked.cid)
    assert "linux-perf" in row.note and row.stacks == {}
    assert collect(faked.store, faked.cid, "p" * 40, "c" * 40) == Profiled(None, row.note)
    assert faked.said == [f"no kernel profile: {row.note}"]
