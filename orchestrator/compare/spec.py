"""A comparison as the user asked for it, as the store keeps it (the `compare` kind's spec)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, ClassVar, Mapping

from orchestrator.errors import UserError
from orchestrator.vm.options import GuestOptions

# The options of `vmbisect compare` before the kind column: argparse's names -> CompareSpec's.
_LEGACY_NAMES = {"variant": "variants", "param": "params", "sweep": "sweeps", "metric": "metrics",
                 "report": "reports", "timeout": "timeout_s"}
_LEGACY_GUEST = {"memory": "memory_mib", "disk_size": "disk_size_mib"}


@dataclass(frozen=True)
class CompareSpec:
    """A comparison as the user asked for it (docs/compare.md): variants (`NAME=SPEC`), the
    workload with its parameters and sweeps, the metrics to judge by, repetitions and boots,
    defaults for variants that name no kernel, the repository and recipe for `commit:`
    variants, significance level, title, report files and the guest. `compare/plan.py` turns
    it into a checked plan."""

    KIND: ClassVar[str] = "compare"
    variants: tuple[str, ...]
    workload: str
    params: tuple[str, ...] = ()
    sweeps: tuple[str, ...] = ()
    metrics: tuple[str, ...] = ()
    reps: int = 5
    boots: int | None = None
    kernel: str | None = None
    initrd_modules_from: str | None = None
    append: str = ""
    repo: Path | None = None
    config: tuple[str, ...] = ()
    alpha: float = 0.05
    title: str | None = None
    all_metrics: bool = False
    reports: tuple[Path, ...] = ()
    timeout_s: float = 120.0
    guest: GuestOptions = GuestOptions()
    lab: Path | None = None  # the lab file (absolute); None: this machine
    host: str | None = None  # the lab host every run is on; None: the first free one, then that one
    profile: bool = False  # --profile: the first two variants profiled after the runs (docs/explain.md)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, GuestOptions):
                value = value.to_dict()
            elif isinstance(value, tuple):
                value = [str(v) if isinstance(v, Path) else v for v in value]
            elif isinstance(value, Path):
                value = str(value)
            out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "CompareSpec":
        """The spec as `to_dict` wrote it, or a store's from before the kind column
        (`{"kind": "compare", "args": <argparse's options>}`)."""
        if "args" in data and "variants" not in data:
            return cls._from_options(data["args"])
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise UserError(f"compare: unknown key {unknown[0]!r} in the stored comparison; "
                            f"known: {', '.join(sorted(known))}")
        values = dict(data)
        for name in ("variants", "params", "sweeps", "metrics", "config"):
            values[name] = tuple(values.get(name) or ())
        values["reports"] = tuple(Path(p) for p in values.get("reports") or ())
        for name in ("repo", "lab"):
            if values.get(name) is not None:
                values[name] = Path(values[name])
        values["guest"] = GuestOptions.from_dict(values.get("guest") or {})
        return cls(**values)

    @classmethod
    def _from_options(cls, options: Mapping[str, Any]) -> "CompareSpec":
        guest_names = {f.name for f in fields(GuestOptions)}
        guest = {_LEGACY_GUEST.get(k, k): v for k, v in options.items() if _LEGACY_GUEST.get(k, k) in guest_names}
        own = {f.name for f in fields(cls)} - {"guest"}
        values = {_LEGACY_NAMES.get(k, k): v for k, v in options.items() if _LEGACY_NAMES.get(k, k) in own}
        return cls.from_dict({**values, "guest": guest})
