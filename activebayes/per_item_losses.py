"""Per-item losses [M] of a model's predictions on labelled items, the L_{i_m} that
`activebayes.estimates` averages: the 0-1 loss, the categorical and Gaussian NLLs, the squared
error, and the Gaussian NLL's skewed part; and `finite_vector`, the check of every [M] argument.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from activebayes.errors import ShapeError

PROBABILITY_FLOOR = 1e-12  # p(y) below this counts as this in a categorical NLL


def finite_vector(name: str, values: Sequence[float] | np.ndarray) -> np.ndarray:
    """`values` as a float64 vector [M]; ShapeError naming `name` for another shape or a value
    that is not finite."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ShapeError(f"{name}: expected a vector [M], got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ShapeError(f"{name}: expected finite numbers, got {array[~np.isfinite(array)][:3].tolist()}")
    return array


def zero_one_loss(predicted: Sequence[object], labels: Sequence[object]) -> np.ndarray:
    """[M] 1 where the predicted class differs from the label, else 0 (compared as text)."""
    if len(predicted) != len(labels):
        raise ShapeError(f"predicted, labels: expected as many predictions as labels, got {len(predicted)} and {len(labels)}")
    return np.asarray([float(str(p) != str(y)) for p, y in zip(predicted, labels)], dtype=np.float64)


def categorical_nll(label_probabilities: Sequence[float] | np.ndarray) -> np.ndarray:
    """[M] −log p(y_m | x_m), p clamped below at PROBABILITY_FLOOR."""
    p = finite_vector("label_probabilities", label_probabilities)
    return -np.log(np.clip(p, PROBABILITY_FLOOR, 1.0))


def squared_error(means: Sequence[float] | np.ndarray, targets: Sequence[float] | np.ndarray) -> np.ndarray:
    """[M] (y_m − μ_m)²."""
    return np.square(finite_vector("targets", targets) - finite_vector("means", means))


def gaussian_nll(means: Sequence[float] | np.ndarray, sds: Sequence[float] | np.ndarray, targets: Sequence[float] | np.ndarray) -> np.ndarray:
    """[M] −log N(y_m; μ_m, σ_m²) = ½ log 2πσ_m² + (y_m − μ_m)² / 2σ_m² (σ clamped at 1e-12)."""
    var = np.square(np.maximum(finite_vector("sds", sds), 1e-12))
    return 0.5 * np.log(2 * np.pi * var) + gaussian_misfit(means, sds, targets)


def gaussian_misfit(means: Sequence[float] | np.ndarray, sds: Sequence[float] | np.ndarray, targets: Sequence[float] | np.ndarray) -> np.ndarray:
    """[M] (y_m − μ_m)² / 2σ_m², the Gaussian NLL's nonnegative, skewed part (½χ²_1 for a calibrated
    predictive); the rest, ½ log 2πσ_m², is a log of the predictive variance (σ clamped at 1e-12)."""
    var = np.square(np.maximum(finite_vector("sds", sds), 1e-12))
    return squared_error(means, targets) / (2 * var)

