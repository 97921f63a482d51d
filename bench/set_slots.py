"""`python bench/set_slots.py`: what the lab's slots buy a set bisection. The real runner, judge,
search and SQLite store over tests/fakes.py's candidates and guests, every run of a guest taking
`--run-s` seconds of real time (a sleep, as a guest's run leaves the controller idle), so slots
overlap in time as real guests do; one slot per fake host.

Printed per case and number of slots S, over seeded trials: how often the expected set is named,
boots per campaign (median), boots of the busiest host (median), candidates the search asked and
those measured ahead that it did not need (medians), and the wall time (median seconds, and
against S = 1). A real guest's run takes about a minute under TCG, not `--run-s`: the ratio is
what carries over, the seconds do not."""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from orchestrator.campaign.file import Threshold  # noqa: E402
from orchestrator.setbisect.model import Change, Unit  # noqa: E402
from orchestrator.setbisect.setbisection import Rules, SetBisection  # noqa: E402
from orchestrator.store import Store  # noqa: E402
from tests.fakes import FakeMaker, FakeMeasurer, by_changes  # noqa: E402

UNITS = tuple(Unit.of(Change(n, "0", "1"), i) for i, n in enumerate("abcdefgh"))


def drop_when(needed: set[str]) -> Callable[[frozenset[str]], float]:
    return lambda applied: 8000.0 * 0.6 if needed <= applied else 8000.0


CASES = {"one of eight (f)": ({"f"}, ("f",)), "two together (c, f)": ({"c", "f"}, ("c", "f")),
         "three together (b, e, h)": ({"b", "e", "h"}, ("b", "e", "h"))}


@dataclass(frozen=True)
class Trial:
    right: bool
    boots: int
    busiest: int
    asked: int
    ahead: int
    wall: float


def trial(needed: set[str], expected: tuple[str, ...], slots: int, seed: int, run_s: float) -> Trial:
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(f"sqlite:///{Path(tmp) / 'sets.db'}")
        cid = store.new_campaign("bench", {}, "settings")
        hosts = [f"h{i}" for i in range(slots)]
        guests = [FakeMeasurer(by_changes(drop_when(needed)), noise=0.02, between=0.03, seed=seed * 100 + i, host=h,
                               run_s=run_s) for i, h in enumerate(hosts)]
        rules = Rules("iops", "higher", Threshold("relative", -0.1), runs_per_boot=2, boots=2, max_boots=8)
        started = time.monotonic()
        result = SetBisection(UNITS, FakeMaker(), guests[0], store, rules,
                              slots=guests if slots > 1 else ()).run(cid)
        wall = time.monotonic() - started
        per_host = Counter(b.host for b in store.boots(cid))
        return Trial(result.units == expected, sum(per_host.values()), max(per_host.values()), result.candidates,
                     result.ahead, wall)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--slots", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--run-s", type=float, default=0.05)
    args = p.parse_args()
    print(f"{'case':26} {'S':>2} {'right':>6} {'boots':>5} {'busiest':>7} {'asked':>5} {'ahead':>5} {'wall s':>6} vs S=1")
    for name, (needed, expected) in CASES.items():
        base = None
        for slots in args.slots:
            res = [trial(needed, expected, slots, seed, args.run_s) for seed in range(args.trials)]
            wall = statistics.median(r.wall for r in res)
            base = base or wall
            print(f"{name:26} {slots:>2} {sum(r.right for r in res):>3}/{len(res):<2} "
                  f"{statistics.median(r.boots for r in res):>5.0f} {statistics.median(r.busiest for r in res):>7.0f} "
                  f"{statistics.median(r.asked for r in res):>5.0f} {statistics.median(r.ahead for r in res):>5.0f} "
                  f"{wall:>6.1f} {wall / base:>5.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
