"""classify() against real captured kernel build logs (tests/data/kbuild/README.md says how each was made)."""

from pathlib import Path

import pytest

from orchestrator.kbuild.classify import INFRA, KERNEL, classify

DATA = Path(__file__).resolve().parent.parent / "data" / "kbuild"
LOGS = sorted(DATA.glob("*.log"))


@pytest.mark.parametrize("log", LOGS, ids=[p.stem for p in LOGS])
def test_real_log_classifies_to_its_golden_kind_and_first_lines(log):
    kind, *lines = log.with_suffix(".expected").read_text().splitlines()
    assert classify(log.read_text()) == (kind, lines)


def test_golden_logs_cover_both_kinds():
    kinds = {p.with_suffix(".expected").read_text().split("\n", 1)[0] for p in LOGS}
    assert kinds == {INFRA, KERNEL}


@pytest.mark.parametrize("line, kind", [
    ("make: gcc-10: No such file or directory", INFRA),
    ("bash: bc: command not found", INFRA),
    ("cc1: out of memory allocating 65536 bytes after a total of 1 bytes", INFRA),
    ("fatal error: openssl/opensslv.h: No such file or directory", INFRA),
    ("ld: vmlinux.o: in function `f': undefined reference to `g'", KERNEL),
    ("arch/x86/entry/entry_64.S:12: Error: no such instruction: `frob'", KERNEL),
    ("include/linux/foo.h:3:10: fatal error: linux/bar.h: No such file or directory", KERNEL),
])
def test_single_line_patterns(line, kind):
    assert classify(f"  CC      x.o\n{line}\nmake: *** [Makefile:1] Error 2\n")[0] == kind


def test_a_host_fault_anywhere_wins_over_compiler_errors_it_caused():
    log = "x.c:1:1: error: cannot write\nas: x.o: No space left on device\nmake: *** [a] Error 1\n"
    assert classify(log) == (INFRA, ["as: x.o: No space left on device", "make: *** [a] Error 1"])


def test_a_log_without_error_lines_is_the_kernels_with_its_tail():
    assert classify("a\nb\nc\n") == (KERNEL, ["a", "b", "c"])
