"""Series colours: the Okabe-Ito palette, distinguishable with the common colour-vision
deficiencies; yellow and black come last (yellow is faint on white)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")


def assign(keys: Iterable[str], fixed: Mapping[str, str] | None = None) -> dict[str, str]:
    """A colour per key in order of first appearance: `fixed` ones as given, the others take
    the palette's colours that `fixed` does not use, cycling when there are more keys."""
    fixed = dict(fixed or {})
    free = [c for c in OKABE_ITO if c not in fixed.values()] or list(OKABE_ITO)
    out: dict[str, str] = {}
    for key in keys:
        if key not in out:
            out[key] = fixed[key] if key in fixed else free[len([k for k in out if k not in fixed]) % len(free)]
    return out
