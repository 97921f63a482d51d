"""`vmbisect bisect CAMPAIGN.yaml`: run a bisection campaign to its culprit."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.errors import UserError
from orchestrator.results import BisectOutcome, StopKind, Stopped

if TYPE_CHECKING:
    from orchestrator.bisect.adapters import WorkloadChoice
    from orchestrator.bisect.engine import Outcome
    from orchestrator.campaign import Campaign
    from orchestrator.store import Store


def add_store_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", metavar="URL", help="SQLAlchemy URL (default: SQLite in the data directory)")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("bisect", help="bisect a kernel range on a metric, as a campaign file says")
    from orchestrator.commands.fromcompare import add_options

    p.add_argument("campaign", type=Path, nargs="?", help="campaign file (YAML; see docs/campaign.md; with kind: "
                   "settings, docs/settings-bisect.md)")
    p.add_argument("--json", action="store_true", help="progress as JSON lines instead of a live view")
    add_options(p)
    add_store_option(p)


@contextmanager
def paused_on_infra_error(store: Store, campaign_id: int) -> Iterator[None]:
    """The host's fault (libvirt gone, disk full) pauses the campaign instead of failing it:
    state "paused" with the reason, and `vmbisect resume ID` continues where it stopped."""
    from orchestrator.errors import InfraError, host_fault

    if store.campaign(campaign_id).state == "paused":
        store.set_state(campaign_id, "running", {})  # the pause's reason is no longer why
    try:
        try:
            yield
        except OSError as exc:  # a full disk under the builder, the image cache or a log file
            fault = host_fault(exc)
            if fault is None:
                raise
            raise fault from exc
    except InfraError as exc:
        try:
            store.set_state(campaign_id, "paused", Stopped(StopKind.PAUSED, str(exc)).to_dict())
        except Exception:  # noqa: BLE001 - the store itself may be what failed; the campaign stays running
            pass
        raise InfraError(f"{exc}; campaign {campaign_id} paused, continue with: vmbisect resume {campaign_id}") \
            from exc


def summary(outcome: Outcome, campaign_id: int) -> str:
    from orchestrator.bisect.engine import confidence_words

    result = outcome.result
    if outcome.outcome is BisectOutcome.FOUND:
        head = f"culprit: {outcome.culprit}\n{confidence_words(outcome.confidence, [])}"
        for key, part in (("confirmation", result.confirmation if result else None),
                          ("revert", result.revert if result else None)):
            if part:
                head += f"\n{key}: {part['verdict']}" + ("" if part["text"].startswith(part["verdict"])
                                                         else f": {part['text']}")
    elif outcome.outcome is BisectOutcome.INCONCLUSIVE:
        head = "inconclusive: the first bad commit is one of: " + " ".join(c[:12] for c in outcome.candidates)
    else:
        head = "only skipped commits left; the first bad commit is one of: " + " ".join(
            c[:12] for c in outcome.candidates)
    notes = "".join(f"\nnote: {n}" for n in outcome.notes)
    return f"{head}{notes}\nreport: vmbisect report {campaign_id} --format md"


def preflight(campaign: Campaign) -> WorkloadChoice:
    """Everything about a campaign that can be checked without building or booting, checked
    before it is recorded: workload, parameters, metric and its direction, the threshold's sign,
    the disks the workload needs, run_s against the workload's own time, the kernel recipe, the
    repository and both revisions (read from the user's repository, nothing cloned), the lab
    file and its host."""
    from orchestrator.backends.git_bisect import git
    from orchestrator.bisect.adapters import choose_workload
    from orchestrator.campaign import check_threshold_sign
    from orchestrator.hosts.lab import lab_from
    from orchestrator.kbuild.recipe import parse_recipe

    if campaign.lab is not None:
        lab_from(campaign.lab, campaign.host)  # the file's hosts, and `host:` one of them
    choice = choose_workload(campaign)
    check_threshold_sign(campaign.metric.threshold, choice.direction)
    needs = choice.workload.needs_disks
    if campaign.guest.disks.count < needs:
        raise UserError(f"guest.disks.count: {choice.workload.name} needs at least {needs} data disk(s), "
                        f"got {campaign.guest.disks.count}")
    own = float(choice.params.get("runtime", 0)) + float(choice.params.get("ramp_time", 0))
    if own >= campaign.timeouts.run_s:
        raise UserError(f"timeouts.run_s: {campaign.timeouts.run_s:g} s is not more than the workload's own "
                        f"{own:g} s (runtime + ramp_time)")
    try:
        parse_recipe(list(campaign.kernel.config) + ([f"cc={campaign.kernel.cc}"] if campaign.kernel.cc else []))
    except UserError as exc:
        raise UserError(f"kernel.{exc}") from None
    repo = campaign.repository
    if not _is_dir(repo) or git(repo, "rev-parse", "--git-dir", check=False).returncode != 0:
        raise UserError(f"repository: {repo} is not a git repository")
    for field, rev in (("good", campaign.good), ("bad", campaign.bad)):
        if git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}",
               check=False).returncode != 0:
            raise UserError(f"{field}: {rev!r} is not a commit in {repo}")
    return choice


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # a name too long for the file system
        return False


def run(a: argparse.Namespace) -> int:
    from orchestrator.commands.kinds import execute
    from orchestrator.specs import record
    from orchestrator.store import Store

    if a.from_compare is not None:
        from orchestrator.commands.fromcompare import run as from_compare
        return from_compare(a)
    if a.campaign is None or a.write_campaign is not None:
        raise UserError("campaign: give a campaign file, or --from-compare ID ROW (which --write-campaign needs)")
    name, spec = checked_file(a.campaign)
    store = Store(a.store)
    campaign_id = record(store, name, spec)
    return execute(store, campaign_id, uri=a.uri, as_json=a.json)


def checked_file(path: Path) -> tuple[str, Any]:
    """A campaign file checked completely before anything is recorded: its name and its typed
    spec. Without a `kind:` key a commit bisection (orchestrator/campaign.py, then `preflight`);
    with one, the kind table's files (`kind: settings`, ...). `bisect` and `submit` share it."""
    from orchestrator.campaign import parse_campaign, read_campaign_file
    from orchestrator.commands.kinds import FILES
    from orchestrator.errors import choices_error
    from orchestrator.specs import BisectSpec

    raw = read_campaign_file(path)
    if isinstance(raw, dict) and "kind" in raw:
        kind = raw["kind"]
        if kind not in FILES:
            raise choices_error("kind", kind, [*FILES, "(none: a commit bisection)"])
        spec = FILES[kind](raw, path)
        return spec.campaign.name, spec
    campaign = parse_campaign(raw, base=path.parent, source=path)
    preflight(campaign)
    return campaign.name, BisectSpec.of(raw, campaign)
