"""The `config` kind's campaign file and spec (docs/config-bisect.md): one commit, a good and a
bad side, each a .config file or a config recipe, and everything a bisection campaign file says
about the workload, the metric, the guest and the lab.

    kind: config
    name: lockdep-cost
    repository: ~/linux
    commit: v6.1
    good: {recipe: [guest-base]}                 # or {config: good.config}
    bad: {recipe: [guest-base, lockdep]}
    workload: fio-randread-4k
    metric: {name: read_iops, threshold: -10%}

The keys the two kinds share are read by orchestrator/campaign/file.py's own parser (the same checks,
the same one-line errors); a side's .config file is read once, when the file is, and kept in the
stored spec, so a resumed campaign bisects the configs it started with.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from orchestrator import yamlcheck
from orchestrator.campaign.file import Campaign, parse_campaign, stored_clock, with_clock
from orchestrator.errors import UserError
from orchestrator.kbuild.configdiff import values
from orchestrator.kbuild.recipe import parse_recipe
from orchestrator.setbisect.configsides import ConfigSide

KIND = "config"
MAX_CONFIG_BYTES = 4 * 1024 * 1024
# The campaign file's keys a config bisection uses; the others (revisions to bisect, confirm,
# skip_policy, first_parent, kernel.config) belong to commit bisection.
KEYS = ("kind", "name", "repository", "commit", "good", "bad", "workload", "metric", "kernel", "guest", "accel",
        "append", "boots_per_commit", "max_boots_per_commit", "runs_per_boot", "timeouts", "alpha", "lab", "host",
        "notify")
_SIDE_KEYS = ["config", "recipe"]


def _config_text(path: Path, where: str) -> str:
    try:
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise UserError(f"{where}: {path} is larger than {MAX_CONFIG_BYTES // 2**20} MiB; a .config is "
                            "a few hundred KiB")
        text = path.read_text()
    except OSError as exc:
        raise UserError(f"{where}: cannot read {path}: {exc.strerror}") from None
    except ValueError:
        raise UserError(f"{where}: {path} is not UTF-8 text; give a kernel .config") from None
    if not values(text) and "is not set" not in text:
        raise UserError(f"{where}: {path} holds no CONFIG_ line; give a kernel .config")
    return text


def parse_side(value: Any, where: str, base: Path, stored: str | None = None) -> ConfigSide:
    """`{config: PATH}` (a whole .config: read now, unless `stored` is its text as the store
    kept it) or `{recipe: [ITEMS]}`."""
    data = yamlcheck.mapping(value, where)
    yamlcheck.known(data, where, _SIDE_KEYS)
    if ("config" in data) == ("recipe" in data):
        raise UserError(f"{where}: give one of config (a .config file) or recipe (a list of recipe items, "
                        "e.g. [guest-base, lockdep])")
    if "recipe" in data:
        items = data["recipe"]
        if isinstance(items, str):
            items = [items]
        texts = tuple(yamlcheck.text(i, f"{where}.recipe") for i in yamlcheck.items(items, f"{where}.recipe",
                                                                                   "recipe items", 64))
        if not texts:
            raise UserError(f"{where}.recipe: empty; give a base and fragments, e.g. [guest-base, lockdep]")
        try:
            parse_recipe(list(texts))
        except UserError as exc:
            raise UserError(f"{where}.recipe: {str(exc).removeprefix('config: ')}") from None
        return ConfigSide(" ".join(texts), recipe=texts)
    name = yamlcheck.text(data["config"], f"{where}.config")
    if not name:
        raise UserError(f"{where}.config: empty; give the path of a .config file")
    path = Path(name).expanduser()
    path = path if path.is_absolute() else (base / path).resolve()
    if stored is not None:
        return ConfigSide(str(path), text=stored)
    return ConfigSide(str(path), text=_config_text(path, f"{where}.config"))


def side_dict(side: ConfigSide) -> dict[str, Any]:
    return {"recipe": list(side.recipe)} if side.recipe else {"config": side.label, "text": side.text}


def _stored_texts(data: Any) -> dict[str, str]:
    """The sides' .config texts a stored spec holds (`good.text`, `bad.text`), checked."""
    out: dict[str, str] = {}
    for side in ("good", "bad"):
        value = data.get(side) if isinstance(data, Mapping) else None
        if isinstance(value, Mapping) and "text" in value:
            text = value["text"]
            if not isinstance(text, str) or len(text) > MAX_CONFIG_BYTES or "\0" in text:
                raise UserError(f"{side}.text: the stored .config is not text of at most "
                                f"{MAX_CONFIG_BYTES // 2**20} MiB")
            out[side] = text
    return out


@dataclass(frozen=True)
class ConfigSpec:
    """A config bisection: `file` is the campaign file's mapping as stored (repository and lab
    absolute, each .config side's text kept), `campaign` its shared keys parsed (good = bad =
    the commit), `good`/`bad` the two sides."""

    KIND: ClassVar[str] = KIND
    file: Mapping[str, Any]
    campaign: Campaign = field(compare=False)
    commit: str = ""
    good: ConfigSide = ConfigSide("")
    bad: ConfigSide = ConfigSide("")

    def to_dict(self) -> dict[str, Any]:
        return dict(self.file)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ConfigSpec":
        return parse_config_campaign(stored_clock(data), Path("."))


def parse_config_campaign(data: Any, base: Path = Path("."), source: Path | None = None) -> ConfigSpec:
    """A `kind: config` campaign file's data as a ConfigSpec, every key checked (one-line errors
    naming the key); relative paths are relative to `base` (the file's directory)."""
    texts = _stored_texts(data)
    if texts:  # a stored spec: the .config texts are checked here, the rest as a file's keys
        data = {**data, **{side: {k: v for k, v in data[side].items() if k != "text"} for side in texts}}
    yamlcheck.check_tree(data, "campaign", "a campaign file is a page")
    top = dict(yamlcheck.mapping(data, "campaign"))
    yamlcheck.known(top, "", list(KEYS))
    if top.get("kind") != KIND:
        raise UserError(f"kind: expected {KIND!r} for a config bisection, got {yamlcheck.shown(top.get('kind'))}")
    for required in ("commit", "good", "bad"):
        if required not in top:
            raise UserError(f"{required}: missing (required)")
    kernel = yamlcheck.mapping(top.get("kernel", {}), "kernel")
    if "config" in kernel:
        raise UserError("kernel.config: a config bisection's configs are its good and bad sides; "
                        "kernel takes only cc here")
    shared = {k: v for k, v in top.items() if k not in ("kind", "commit", "good", "bad")}
    campaign = parse_campaign({**shared, "good": top["commit"], "bad": top["commit"]}, base, source)
    good, bad = (parse_side(top[side], side, base, texts.get(side)) for side in ("good", "bad"))
    stored = {**with_clock(top, campaign.guest.clock), "repository": str(campaign.repository),
              "good": side_dict(good), "bad": side_dict(bad)}
    if campaign.lab is not None:
        stored["lab"] = str(campaign.lab)
    return ConfigSpec(stored, campaign, campaign.good, good, bad)
