"""The typed specs of the campaign kinds run from a campaign file, which the store keeps as
JSON and gives back as the same dataclass:

    bisect   BisectSpec   a campaign file (docs/campaign.md): the engine's bisection
    verify   VerifySpec   a campaign file and one suspect commit (`vmbisect verify`)
    settings SettingsSpec a settings campaign file: which command-line parameters or guest settings
                          move the metric (orchestrator/setbisect/)

A comparison's spec is orchestrator/compare/spec.py's, a config bisection's
orchestrator/setbisect/configspec.py's. `to_dict` is what the store keeps; `from_dict` reads it
back and checks it (a campaign file is parsed again, so a stored spec is never trusted further
than a file would be); the kind table (orchestrator/kinds/table.py) picks the class by the
row's kind, never by the JSON's shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Protocol

from orchestrator.campaign.file import Campaign, parse_campaign, stored_clock, with_clock
from orchestrator.errors import UserError
from orchestrator.setbisect.campaign import SettingsCampaign, parse_settings


class CampaignSpec(Protocol):
    """What every kind's spec is (orchestrator/kinds/kind.py Kind.spec): its kind's name, and
    the JSON the store keeps of it, read back by the class's `from_dict`."""

    KIND: ClassVar[str]

    def to_dict(self) -> dict[str, Any]: ...

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "CampaignSpec": ...


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
        return cls({**with_clock(raw, campaign.guest.clock), **absolute}, campaign)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.file)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "BisectSpec":
        stored = stored_clock(data)
        return cls(stored, parse_campaign(stored))


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
        return cls({**with_clock(raw, campaign.common.guest.clock), "kind": cls.KIND, "kernel": kernel, **lab},
                   campaign)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.file)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "SettingsSpec":
        stored = stored_clock(data)
        return cls(stored, parse_settings(stored))
