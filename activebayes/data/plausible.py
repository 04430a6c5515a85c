"""Regression answers far outside the labels given so far: a typo (26462 for 264.62, a sign, a
unit) is recorded like any other answer, and the next round fits to it. The check only warns.

With the labels so far L (at least MIN_LABELS), Q1 and Q3 their quartiles and IQR = Q3 − Q1,
an answer v is far outside when

    v < Q1 − FAR · IQR   or   v > Q3 + FAR · IQR,

Tukey's fences at FAR = 10 instead of 1.5 (his "far out" values are beyond 3 IQR), so that only
answers an order of magnitude away from the spread are named. Where the labels so far are all
equal (IQR = 0) the fence is FAR · max(|Q1|, |Q3|, tiny) from them.

A regression target that does not vary (`constant_value`) cannot be learnt: every model's best
prediction is that one value. Labels L (at least two, finite) count as constant when

    max L − min L <= SAME · max(|max L|, |min L|),

with SAME = 1e-9: equal, or different only by the rounding of a number written with about nine
significant digits (2.999999999 and 3.0).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

FAR = 10.0
MIN_LABELS = 5
SAME = 1e-9


def far_outside(answers: Mapping[str, float], labels: Sequence[float]) -> dict[str, float]:
    """{key: value} of the `answers` far outside `labels` (module docstring); {} with fewer than
    MIN_LABELS labels."""
    known = np.asarray([float(v) for v in labels], dtype=np.float64)
    known = known[np.isfinite(known)]
    if known.size < MIN_LABELS:
        return {}
    q1, q3 = np.quantile(known, [0.25, 0.75])
    spread = q3 - q1 if q3 > q1 else max(abs(q1), abs(q3), np.finfo(np.float64).tiny)
    low, high = q1 - FAR * spread, q3 + FAR * spread
    return {key: value for key, value in answers.items() if not low <= value <= high}


def constant_value(labels: Sequence[float]) -> float | None:
    """The value every one of `labels` takes (the first, when they differ by rounding alone; module
    docstring), or None when they vary or fewer than two of them are finite numbers."""
    known = np.asarray([float(v) for v in labels], dtype=np.float64)
    known = known[np.isfinite(known)]
    if known.size < 2:
        return None
    low, high = float(known.min()), float(known.max())
    return float(known[0]) if high - low <= SAME * max(abs(low), abs(high)) else None


__all__ = ["FAR", "MIN_LABELS", "SAME", "constant_value", "far_outside"]
