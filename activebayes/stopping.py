"""When to stop labelling: stabilising predictions (Bloodgood & Vijay-Shanker, "A method for
stopping active learning based on stabilizing predictions and the need for user-adjustable
stopping", CoNLL 2009).

A fixed stop set of S pool items is predicted by every round's model. Consecutive rounds t − 1
and t agree on a share p_o of it; Cohen's kappa corrects that for the agreement two models with
the same class frequencies would reach by chance:

    κ_t = (p_o − p_e) / (1 − p_e),   p_e = Σ_c f_c^(t−1) f_c^(t)      (f_c: share predicted as c)

Bloodgood and Vijay-Shanker stop once the mean κ over the last `window` = 3 pairs of consecutive
rounds reaches `threshold`: the model has stopped changing its mind, so more labels chosen the
same way are unlikely to pay. Their threshold is 0.99; ours is THRESHOLD = 0.98, one value for
every task, chosen on studies/estimates (README_EXPERIMENTS.md) as the loosest threshold that
stopped no run before its test accuracy had plateaued (come within 1 point of its last value),
over the digits, wine, breast_cancer, MNIST and the benchmark's 13 classification tables. A
network retrained from scratch every round flips 1 to 3 % of its predictions between rounds
even once its accuracy has settled, so 0.99 never fired on the digits or MNIST; 0.97 fired on
every digits run but before the plateau in a third of the runs where it fired. For regression the agreement coefficient is Lin's concordance
correlation of the two rounds' predicted means (1 for identical predictions, the continuous
analogue of kappa), with the same rule; a prediction counts as changed when it moved by more
than `REGRESSION_TOLERANCE` of the spread (sd) of the stop set's predictions.

A round keeps its stop set's predictions in its metrics, packed small (`pack_predictions`:
1 byte a class for up to 256 classes, 4 bytes a regression mean, base64), with a fingerprint of
the stop set's items so that rounds are compared only over the same items.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from activebayes.errors import ConfigError, ShapeError

WINDOW = 3  # pairs of consecutive rounds averaged (Bloodgood & Vijay-Shanker 2009)
THRESHOLD = 0.98  # the kappa threshold (module docstring; Bloodgood & Vijay-Shanker's is 0.99)
STOP_SET_SIZE = 1000  # items of the pool predicted every round
STOP_SET_SEED = 0x5709  # the stop set depends on the pool alone, never on a study's seed
REGRESSION_TOLERANCE = 0.05  # a regression prediction "changed" when it moved > 5 % of the spread


def stop_set_positions(n_items: int, size: int = STOP_SET_SIZE) -> np.ndarray:
    """Sorted positions [min(size, n)] into the project's n items (in item order), drawn
    uniformly without replacement by a generator with a fixed seed: the same set every round."""
    if n_items <= size:
        return np.arange(n_items)
    rng = np.random.default_rng(STOP_SET_SEED)
    return np.sort(rng.choice(n_items, size=size, replace=False))


def fingerprint(item_ids: Sequence[int] | np.ndarray) -> str:
    """A short hash (16 hex digits) of the stop set's item ids, to compare rounds on the same set."""
    ids = np.asarray(item_ids, dtype="<i8")
    return hashlib.sha256(ids.tobytes()).hexdigest()[:16]


def pack_predictions(values: np.ndarray) -> str:
    """Predicted classes [S] (integers in 0..65535) as uint8/uint16, or predicted means [S]
    (floats) as float32, little-endian, then base64, prefixed "u1:", "u2:" or "f4:"."""
    array = np.asarray(values)
    if array.ndim != 1:
        raise ShapeError(f"values: expected a vector [S], got shape {array.shape}")
    if np.issubdtype(array.dtype, np.integer):
        if array.size and (array.min() < 0 or array.max() > 65535):
            raise ShapeError("values: class indices must lie in 0..65535")
        kind = "u1" if not array.size or array.max() < 256 else "u2"
        raw = array.astype("<" + kind).tobytes()
    else:
        kind, raw = "f4", array.astype("<f4").tobytes()
    return kind + ":" + base64.b64encode(raw).decode("ascii")


def unpack_predictions(text: str) -> np.ndarray:
    """The inverse of `pack_predictions`: int64 classes or float64 means [S]."""
    kind, _, body = str(text).partition(":")
    if kind not in ("u1", "u2", "f4"):
        raise ShapeError(f"packed predictions: unknown kind {kind!r}")
    array = np.frombuffer(base64.b64decode(body), dtype="<" + kind)
    return array.astype(np.float64 if kind == "f4" else np.int64)


def changed_share(previous: np.ndarray, current: np.ndarray, *, regression: bool = False) -> float:
    """The share of the stop set whose prediction changed between two rounds: a different class,
    or (regression) a mean that moved by more than REGRESSION_TOLERANCE × the sd of the current
    round's predicted means."""
    a, b = _pair(previous, current)
    if regression:
        spread = float(np.std(b))
        return float(np.mean(np.abs(b - a) > REGRESSION_TOLERANCE * spread)) if spread > 0 else float(np.mean(a != b))
    return float(np.mean(a != b))


def cohen_kappa(previous: np.ndarray, current: np.ndarray) -> float:
    """κ of two rounds' predicted classes (module docstring); 1 when both predict one and the
    same class everywhere (p_e = 1)."""
    a, b = _pair(previous, current)
    observed = float(np.mean(a == b))
    classes = np.union1d(a, b)
    chance = float(sum(np.mean(a == c) * np.mean(b == c) for c in classes))
    if chance >= 1.0:
        return 1.0 if observed >= 1.0 else 0.0
    return (observed - chance) / (1.0 - chance)


def concordance(previous: np.ndarray, current: np.ndarray) -> float:
    """Lin's concordance correlation 2 s_ab / (s_a² + s_b² + (ā − b̄)²) of two rounds' predicted
    means; 1 when they are identical (including both constant)."""
    a, b = (x.astype(np.float64) for x in _pair(previous, current))
    denominator = a.var() + b.var() + (a.mean() - b.mean()) ** 2
    if denominator <= 0:
        return 1.0
    return float(2 * np.mean((a - a.mean()) * (b - b.mean())) / denominator)


def _pair(previous: np.ndarray, current: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(previous), np.asarray(current)
    if a.shape != b.shape or a.ndim != 1 or a.size == 0:
        raise ShapeError(f"predictions: expected two vectors [S] of the same stop set, got shapes {a.shape} and {b.shape}")
    return a, b


@dataclass(frozen=True)
class StopSignal:
    """The stopping rule's reading after the latest round.

    agreements: κ (or concordance) of each pair of consecutive rounds, oldest first.
    changed: the share of stop-set predictions changed by the latest round (None before a pair).
    changed_window: the share changed over the last `window` rounds (latest round against the
    round `window` pairs before; None while fewer rounds exist).
    mean_agreement: mean of the last `window` agreements (None while fewer exist).
    stop: mean_agreement >= threshold.
    """

    agreements: tuple[float, ...]
    changed: float | None
    changed_window: float | None
    mean_agreement: float | None
    window: int
    threshold: float
    stop: bool


def stop_signal(
    agreements: Sequence[float],
    changed: float | None = None,
    changed_window: float | None = None,
    *,
    window: int = WINDOW,
    threshold: float = THRESHOLD,
) -> StopSignal:
    """Bloodgood & Vijay-Shanker's rule over the agreements of consecutive rounds, oldest first:
    stop once the mean of the last `window` reaches `threshold`."""
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ConfigError(f"window: expected a positive number of rounds, got {window!r}")
    if not 0.0 < threshold <= 1.0:
        raise ConfigError(f"threshold: expected an agreement in (0, 1], got {threshold!r}")
    values = tuple(float(a) for a in agreements)
    mean = float(np.mean(values[-window:])) if len(values) >= window else None
    return StopSignal(values, changed, changed_window, mean, window, threshold, mean is not None and mean >= threshold)


def first_stop(rounds: Sequence[object], *, window: int = WINDOW, threshold: float = THRESHOLD) -> int | None:
    """The labelled count of the first round at which the rule fires, reading each round's
    recorded "agreement" (`RoundInfo.metrics`) in round order; None when it never does."""
    agreements: list[float] = []
    for rnd in rounds:
        value = (getattr(rnd, "metrics", None) or {}).get("agreement")
        if isinstance(value, (int, float)):
            agreements.append(float(value))
            if stop_signal(agreements, window=window, threshold=threshold).stop:
                return int(getattr(rnd, "labelled_count"))
    return None
