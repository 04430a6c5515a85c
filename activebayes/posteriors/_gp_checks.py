"""The Gaussian process's argument checks: each returns the value as the GP stores it, or raises
ConfigError (an option) or ShapeError (an input tensor) in one line naming the argument."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from activebayes.errors import ConfigError, ShapeError

_WORK = torch.float64


def positive(name: str, value: float | None) -> float | None:
    """A positive finite float, or None (a hyper-parameter to learn)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{name}: expected a positive finite float or None (learnt), got {value!r}")
    return float(value)


def log_normal(name: str, value: object) -> tuple[float, float]:
    """(μ, σ) of a LogNormal prior: two finite numbers, σ > 0."""
    ok = isinstance(value, (tuple, list)) and len(value) == 2 and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value
    )
    if not ok or not value[1] > 0:  # type: ignore[index]
        raise ConfigError(f"{name}: expected (μ, σ) of a LogNormal, two finite numbers with σ > 0, got {value!r}")
    return float(value[0]), float(value[1])  # type: ignore[index]


def count(name: str, value: object, low: int) -> int:
    """An integer >= low (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(f"{name}: expected an integer >= {low}, got {value!r}")
    return value


def matrix(name: str, x: object, n_features: int | None = None) -> Tensor:
    """x as a finite float64 tensor [N, D] (checked: a Tensor, rank 2, real, finite, D columns)."""
    if not isinstance(x, Tensor):
        raise ShapeError(f"{name}: expected a torch.Tensor [N, D], got {type(x).__name__}")
    if x.dim() != 2:
        raise ShapeError(f"{name}: expected 2 dimensions [N, D], got shape {tuple(x.shape)}")
    if x.dtype == torch.bool or x.is_complex():
        raise ShapeError(f"{name}: expected a real-valued tensor, got {x.dtype}")
    if n_features is not None and x.shape[1] != n_features:
        raise ShapeError(f"{name}: expected D={n_features} features as in fit, got shape {tuple(x.shape)}")
    if not bool(torch.isfinite(x).all()):
        raise ShapeError(f"{name}: contains NaN or infinite values")
    return x.to(_WORK)


def targets(y: object, n: int) -> Tensor:
    if not isinstance(y, Tensor):
        raise ShapeError(f"y: expected a torch.Tensor [N], got {type(y).__name__}")
    if y.dim() != 1:
        raise ShapeError(f"y: expected 1 dimension [N], got shape {tuple(y.shape)}")
    if y.shape[0] != n:
        raise ShapeError(f"y: expected N={n} targets to match x, got {y.shape[0]}")
    if y.dtype == torch.bool or y.is_complex():
        raise ShapeError(f"y: expected real-valued targets, got {y.dtype}")
    if not bool(torch.isfinite(y).all()):
        raise ShapeError("y: contains NaN or infinite values")
    return y.to(_WORK)
