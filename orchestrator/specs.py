"""What a stored campaign is: its kind (the store's `kind` column) and the typed spec of that
kind, which the store keeps as JSON and gives back as the same dataclass.

    bisect   BisectSpec   a campaign file (docs/campaign.md): the engine's bisection
    verify   VerifySpec   a campaign file and one suspect commit (`vmbisect verify`)
    compare  CompareSpec  a comparison's variants, workload and guest (`vmbisect compare`)
    settings SettingsSpec a settings campaign file: which command-line parameters or guest settings
                          move the metric (orchestrator/setbisect/)

`to_dict` is what the store keeps; `from_dict` reads it back and checks it (a campaign file is
parsed again, so a stored spec is never trusted further than a file would be); `load` picks
the class by the row's kind. Commands dispatch on the kind, never on the JSON's shape.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Mapping, Union

from orchestrator.campaign import Campaign, parse_campaign
from orchestrator.errors import UserError
from orchestrator.setbisect.campaign import SettingsCampaign, parse_settings
from orchestrator.vm.options import GuestOptions

if TYPE_CHECKING:
    from orchestrator.store import CampaignRow, Store


@dataclass(frozen=True)
class BisectSpec:
    """A bisection: the campaign file's mapping with the repository (and lab file) made absolute."""

    KIND: ClassVar[str] = "bisect"
    file: Mapping[str, Any]
    campaign: Campaign = field(compare=False)

    @classmethod
    def of(cls, raw: Mapping[str, Any], campaign: Campaign) -> "BisectSpec":
        """The spec of a campaign file `raw` already parsed as `campaign` (relative to its file)."""
        absolute = {"repository": str(campaign.repository)}
        if campaign.lab is not None:
            absolute["lab"] = str(campaign.lab)
        return cls({**raw, **absolute}, campaign)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.file)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "BisectSpec":
        return cls(dict(data), parse_campaign(data))


@dataclass(frozen=True)
class VerifySpec:
    """A verification: a campaign file, the suspect commit, the tip it is also reverted on
    ("" for none) and the boots per side. Stored as the campaign file's mapping with the
    verification's own arguments under `verify`."""

    KIND: ClassVar[str] = "verify"
    bisect: BisectSpec
    commit: str
    revert_on: str
    boots: int

    @property
    def campaign(self) -> Campaign:
        return self.bisect.campaign

    def to_dict(self) -> dict[str, Any]:
        return {**self.bisect.to_dict(), "verify": {"commit": self.commit, "revert_on": self.revert_on,
                                                    "boots": self.boots}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "VerifySpec":
        own = data.get("verify")
        if not isinstance(own, Mapping) or not {"commit", "revert_on", "boots"} <= set(own):
            raise UserError("verify: the stored verification lacks its commit, revert_on and boots")
        return cls(BisectSpec.from_dict({k: v for k, v in data.items() if k != "verify"}),
                   str(own["commit"]), str(own["revert_on"]), int(own["boots"]))


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


@dataclass(frozen=True)
class SettingsSpec:
    """A settings bisection (orchestrator/setbisect/, docs/settings-bisect.md): the campaign
    file's mapping with its paths (kernel.file, kernel.repository, lab) made absolute."""

    KIND: ClassVar[str] = "settings"
    file: Mapping[str, Any]
    campaign: SettingsCampaign = field(compare=False)

    @classmethod
    def of(cls, raw: Mapping[str, Any], campaign: SettingsCampaign) -> "SettingsSpec":
        k = campaign.kernel
        kernel = {**raw["kernel"], **({"file": str(k.file)} if k.file else {}),
                  **({"repository": str(k.repository)} if k.repository else {})}
        lab = {"lab": str(campaign.common.lab)} if campaign.common.lab is not None else {}
        return cls({**raw, "kind": cls.KIND, "kernel": kernel, **lab}, campaign)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.file)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "SettingsSpec":
        return cls(dict(data), parse_settings(data))


CampaignSpec = Union[BisectSpec, VerifySpec, CompareSpec, SettingsSpec]
SPECS: dict[str, type[BisectSpec] | type[VerifySpec] | type[CompareSpec] | type[SettingsSpec]] = {
    s.KIND: s for s in (BisectSpec, VerifySpec, CompareSpec)}
SPECS[SettingsSpec.KIND] = SettingsSpec
KINDS = tuple(SPECS)


def load(kind: str, data: Mapping[str, Any]) -> CampaignSpec:
    """The typed spec of a stored campaign of `kind`."""
    if kind not in SPECS:
        raise UserError(f"kind: unknown campaign kind {kind!r}; known: {', '.join(KINDS)}")
    return SPECS[kind].from_dict(data)


def stored(row: "CampaignRow") -> CampaignSpec:
    """The typed spec of a campaign row."""
    return load(row.kind, json.loads(row.spec or "{}"))


def record(store: "Store", name: str, spec: CampaignSpec) -> int:
    """A new campaign of the spec's kind; its id."""
    return store.new_campaign(name, spec.to_dict(), spec.KIND)


def _register_config() -> None:
    """The `config` kind's spec (orchestrator/configbisect/spec.py: a campaign file with two
    .config sides), added to SPECS."""
    from orchestrator.configbisect.spec import ConfigSpec

    SPECS[ConfigSpec.KIND] = ConfigSpec  # type: ignore[assignment]


_register_config()
