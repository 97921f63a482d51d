"""Pure helpers for plot axes: compact number labels, tick positions and value-to-pixel maps."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

Scale = Callable[[float], float]


def whole_or_4g(x: float) -> str:
    """Whole numbers from 1000 up (IOPS read better as 10050 than 1.005e+04), else 4 digits."""
    return f"{x:.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def compact(v: float) -> str:
    """4 significant digits, with k, M or G from ten thousand up: 12346 -> "12.35k"."""
    rounded = float(f"{v:.4g}")
    for above, div, suffix in ((1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k")):
        if abs(rounded) >= above:
            return f"{rounded / div:.4g}{suffix}"
    return f"{rounded:.4g}"


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About `count` round ticks (steps of 1, 2, 2.5 or 5 times a power of ten) from at or
    below lo to at or above hi."""
    if hi <= lo:
        lo, hi = _widen(lo)
    raw = (hi - lo) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first, last = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
    return [round(k * step, 12) for k in range(first, last + 1)]


def _widen(v: float) -> tuple[float, float]:
    pad = abs(v) * 0.1 or 1.0
    return v - pad, v + pad


def is_log2_sweep(xs: Sequence[float]) -> bool:
    """Powers of two spanning at least 8x (numjobs 1..64) read best on a log2 axis."""
    if not xs or min(xs) <= 0:
        return False
    return all(math.log2(x) == round(math.log2(x)) for x in xs) and max(xs) / min(xs) >= 8


def linear(lo: float, hi: float, out_lo: float, out_hi: float) -> Scale:
    span = (hi - lo) or 1.0
    return lambda v: out_lo + (v - lo) / span * (out_hi - out_lo)


def log2(lo: float, hi: float, out_lo: float, out_hi: float) -> Scale:
    inner = linear(math.log2(lo), math.log2(hi), out_lo, out_hi)
    return lambda v: inner(math.log2(v))
