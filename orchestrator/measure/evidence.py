"""The evidence a campaign's outputs show: each commit's whole boots on the host that measured
it last, with the boots the judge's rule leaves out taken away (leftout.evidence)."""

from __future__ import annotations

from collections import Counter

from orchestrator.measure.leftout import evidence
from orchestrator.stats import Boot
from orchestrator.store import Store


def boots_by_host(store: Store, campaign_id: int, metric: str) -> tuple[dict[str, list[Boot]], dict[str, str], str]:
    """Each commit's boots on the host that measured it last, without the boots the judge's rule
    leaves out (leftout.evidence; `excluded` lists them), that host by commit, and one line
    saying which hosts measured how many boots, of them how many stalled in a run ("" when no
    boot came up)."""
    rows = store.boots(campaign_id)
    host_of = {b.commit: b.host for b in rows if b.status == "ok"}
    per_host = {h: evidence(store.boot_samples(campaign_id, metric, h or None)) for h in set(host_of.values())}
    boots = {c: per_host[h][c] for c, h in host_of.items() if c in per_host[h]}
    used = Counter(b.host or "this machine" for b in rows if b.status in ("ok", "stalled"))
    stalled = Counter(b.host or "this machine" for b in rows if b.status == "stalled")
    lost = Counter(b.host or "this machine" for b in rows if b.status == "lost")

    def boots_of(n: int) -> str:
        return f"{n} boot" + ("" if n == 1 else "s")

    parts = [f"{h} ({boots_of(n)}" + (f", {stalled[h]} with a run stalled in the guest" if stalled[h] else "")
             + (f", {lost[h]} lost when the host failed" if lost[h] else "") + ")"
             for h, n in used.items()]
    parts += [f"{h} (0 boots, {n} lost when the host failed)" for h, n in lost.items() if h not in used]
    return boots, {c: h for c, h in host_of.items() if h}, ", ".join(parts)
