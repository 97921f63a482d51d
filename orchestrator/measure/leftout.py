"""The boots a campaign's evidence left out, and why, as every output shows them (the report,
the mail, `vmbisect status ID`, the dashboard): each lab host's whole boots put through the
judge's own rule (stats.stray_boots), and the boots cut short, which never count
(docs/campaign.md, "Quiet host")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from orchestrator.stats import Boot, Stray, Suspicion, Usual, stray_boots, suspicions


@dataclass(frozen=True)
class LeftOut:
    """A whole boot the rule leaves out: the store's boot id, its commit, why, the share of its
    CPUs' time other work took during it, and what made it suspect."""

    boot: int
    commit: str
    why: Stray
    taken: float
    suspicions: tuple[Suspicion, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"boot": self.boot, "commit": self.commit, "why": self.why.value, "taken": self.taken,
                "suspicions": [s.value for s in self.suspicions]}


@dataclass(frozen=True)
class Excluded:
    """What a campaign's evidence does not hold: whole boots the rule left out, and the store's
    ids of boots cut short (fewer runs than a whole boot: a controller killed, a workload that
    failed), which are never counted."""

    left_out: tuple[LeftOut, ...] = ()
    cut_short: tuple[int, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.left_out or self.cut_short)

    def to_dict(self) -> dict[str, Any]:
        return {"left_out": [b.to_dict() for b in self.left_out], "cut_short": list(self.cut_short)}


def left_out(per_host: Iterable[Mapping[str, Sequence[Boot]]]) -> tuple[LeftOut, ...]:
    """Every boot `stats.stray_boots` leaves out of each host's boots by commit (as the judge
    groups them: boots of different hosts are never compared), by boot id."""
    out: dict[int, LeftOut] = {}
    for groups in per_host:
        usual = Usual.of([b for boots in groups.values() for b in boots])
        stray = stray_boots(groups)
        for commit, boots in groups.items():
            for b in boots:
                if b.seq in stray:
                    out[b.id] = LeftOut(b.id, commit, stray[b.seq], b.taken, suspicions(b, usual))
    return tuple(out[k] for k in sorted(out))


def evidence(groups: Mapping[str, Sequence[Boot]]) -> dict[str, list[Boot]]:
    """One host's boots by commit without those `stats.stray_boots` leaves out: what the judge's
    decisions rest on, and so what the report's figures are."""
    stray = stray_boots(groups)
    return {commit: [b for b in boots if b.seq not in stray] for commit, boots in groups.items()}


AFTER = {Suspicion.UNSETTLED: "on a host that had not settled", Suspicion.OTHER_WORK: "with other work on its CPUs",
         Suspicion.SLOW_START: "after a slow start"}


def _boots(n: int) -> str:
    return f"{n} boot{'' if n == 1 else 's'}"


def _why(b: LeftOut) -> str:
    if b.why is Stray.OVERLAPPED:
        return "overlapped by other work on its CPUs"
    return " ".join(["far from its commit's other boots", *(AFTER[s] for s in b.suspicions)])


def _detail(b: LeftOut) -> str:
    return f"boot {b.boot}, {b.taken:.2f} of the CPUs taken" if b.why is Stray.OVERLAPPED else f"boot {b.boot}"


def sentence(e: Excluded) -> str:
    """"2 boots left out: 1 overlapped by other work on its CPUs (boot 14, 0.61 of the CPUs
    taken), 1 far from its commit's other boots after a slow start (boot 22); 1 boot cut short
    (not counted)"; "" when the evidence holds every boot."""
    parts = []
    if e.left_out:
        groups: dict[str, list[LeftOut]] = {}
        for b in e.left_out:
            groups.setdefault(_why(b), []).append(b)
        parts.append(f"{_boots(len(e.left_out))} left out: " + ", ".join(
            f"{len(bs)} {why} ({'; '.join(_detail(b) for b in bs)})" for why, bs in groups.items()))
    if e.cut_short:
        ids = ", ".join(map(str, e.cut_short))
        parts.append(f"{_boots(len(e.cut_short))} cut short (not counted: boot{'s' * (len(e.cut_short) > 1)} {ids})")
    return "; ".join(parts)
