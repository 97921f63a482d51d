"""The `config` kind's candidates (orchestrator/setbisect/model.py CandidateMaker): good's
.config with some units' options at bad's values, normalised by `make olddefconfig` at the
campaign's commit, built by the one kernel source (Kernels.build_config: the same store, cache
and faults as every build). A candidate is known by its normalised .config's sha256: two
candidates olddefconfig brings to the same .config are one kernel, built once and booted as one
(the set bisection carries one's verdict to the other)."""

from __future__ import annotations

from typing import Protocol

from orchestrator.kbuild.configdiff import config_sha, values
from orchestrator.kbuild.kconfig import NOT_SET
from orchestrator.ports import Build
from orchestrator.setbisect.configsides import ConfigSides
from orchestrator.setbisect.model import Made


class ConfigKernels(Protocol):
    """What the maker builds with (orchestrator/measure/kernels.py Kernels)."""

    def olddefconfig(self, commit: str, config_text: str) -> str: ...

    def build_config(self, commit: str, config_text: str, modules: str | None = None,
                     slot: str | None = None) -> Build: ...


class ConfigMaker:
    """Candidates of `sides` at `commit`, every one built in the build directory `slot`."""

    def __init__(self, kernels: ConfigKernels, commit: str, sides: ConfigSides, slot: str | None = None) -> None:
        self.kernels, self.commit, self.sides, self.slot = kernels, commit, sides, slot

    def normalised(self, applied: frozenset[str]) -> str:
        return self.kernels.olddefconfig(self.commit, self.sides.candidate(applied))

    def make(self, applied: frozenset[str]) -> Made:
        text = self.normalised(applied)
        build = self.kernels.build_config(self.commit, text, slot=self.slot)
        return Made(build.kernel, identity=f"config {config_sha(text)}", notes=tuple(self.dropped(applied, text)),
                    cache_hit=build.cache_hit, build_s=build.duration_s)

    def taken_out(self, named: frozenset[str]) -> frozenset[str]:
        """The units bad - `named` must leave out too, or olddefconfig brings `named` back: every
        unit that sets (as one of its options, or by a select or default olddefconfig follows)
        an option of a unit taken out, to closure. PROVE_LOCKING selects DEBUG_LOCK_ALLOC:
        bad without DEBUG_LOCK_ALLOC is bad without PROVE_LOCKING too."""
        groups = {g.lead: g for g in self.sides.grouping.groups}
        out = set(named)
        grew = True
        while grew:
            options = {o for name in out for o in groups[name].options}
            more = {lead for lead, g in groups.items()
                    if lead not in out and options & (set(g.options) | set(g.pulls))}
            out |= more
            grew = bool(more)
        return frozenset(out)

    def dropped(self, applied: frozenset[str], text: str) -> list[str]:
        """The options of `applied` the normalisation did not keep at bad's value."""
        got = values(text)
        bad = {c.option: c.bad for c in self.sides.changes}
        wanted = [o for name in sorted(applied) for o in self.sides.group(name).options]
        return [f"olddefconfig set {o.removeprefix('CONFIG_')} to {got.get(o, NOT_SET)}, not {bad[o]}"
                for o in wanted if got.get(o, NOT_SET) != bad[o]]
