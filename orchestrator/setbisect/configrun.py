"""A `config` campaign's run: the sides prepared once (normalised, grouped, ordered; kept in the
campaign's directory so a resumed campaign and its report read the same units without running
olddefconfig again), then the set bisection (orchestrator/setbisect/setbisection.py) over those units
with ConfigMaker's candidates."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.ports import Event
from orchestrator.setbisect.configsides import ConfigSides, ConfigSource, prepare
from orchestrator.setbisect.configspec import ConfigSpec, side_dict
from orchestrator.setbisect.setbisection import Rules

if TYPE_CHECKING:
    from orchestrator.campaign.workload import WorkloadChoice

SIDES_FILE = "config-sides.json"
SIDES_FORMAT = 1
# The one build directory every config bisection of a repository builds its candidates in: make
# rebuilds only what a candidate's options touch, and the disk holds one build tree, not one per
# candidate.
SLOT = "config-bisection"


def inputs_digest(spec: ConfigSpec, commit: str) -> str:
    """What the sides are made of: the commit and both sides as given."""
    doc = {"format": SIDES_FORMAT, "commit": commit, "good": side_dict(spec.good), "bad": side_dict(spec.bad),
           "cc": spec.campaign.kernel.cc}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def stored_sides(workdir: Path, digest: str) -> ConfigSides | None:
    path = workdir / SIDES_FILE
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return ConfigSides.from_dict(doc["sides"]) if doc.get("inputs") == digest else None


def sides_for(spec: ConfigSpec, commit: str, source: ConfigSource, workdir: Path,
              on_event: Callable[[Event], None] = lambda _e: None) -> ConfigSides:
    """The campaign's sides: as stored in `workdir` for these inputs, else prepared and stored."""
    digest = inputs_digest(spec, commit)
    found = stored_sides(workdir, digest)
    if found is not None:
        return found
    on_event(Event("prepare", message="normalising both sides with olddefconfig and grouping the options that "
                                      "differ (a few seconds per option)"))
    sides = prepare(source, commit, spec.good, spec.bad, spec.campaign.kernel.cc)
    workdir.mkdir(parents=True, exist_ok=True)
    tmp = workdir / (SIDES_FILE + ".tmp")
    tmp.write_text(json.dumps({"inputs": digest, "sides": sides.to_dict()}) + "\n")
    os.replace(tmp, workdir / SIDES_FILE)
    on_event(Event("prepare", message=f"{len(sides.changes)} options differ; {len(sides.grouping.groups)} units"))
    return sides


def rules(spec: ConfigSpec, choice: "WorkloadChoice") -> Rules:
    c = spec.campaign
    return Rules(c.metric.name, choice.direction, c.metric.threshold, c.runs_per_boot, c.boots_per_commit,
                 c.max_boots_per_commit, c.alpha)

