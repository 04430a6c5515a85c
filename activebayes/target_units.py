"""Regression targets in units of their own spread, and predictions back in the targets' units:
the one standardisation that `NetworkPosterior` (heteroscedastic likelihood) and
`StandardisedTargets` (every other Gaussian network posterior) both apply. With m and s the
training targets' mean and population standard deviation (s = 1 when it is 0),

    standardise_targets(y)                    ỹ = (y − m) / s,
    in_target_units(μ, σ², m, s)              (m + s μ, s² σ²).
"""

from __future__ import annotations

import torch
from torch import Tensor


def standardise_targets(y: Tensor) -> tuple[Tensor, float, float]:
    """((y − m) / s in y's dtype, m, s) of regression targets y [N]: m their mean, s their
    population sd (1 when it is 0 or N = 1)."""
    y64 = y.detach().to(torch.float64)
    sd = float(y64.std(correction=0)) if y64.numel() > 1 else 0.0
    location, scale = float(y64.mean()), sd if sd > 0 else 1.0
    return ((y64 - location) / scale).to(y.dtype), location, scale


def in_target_units(mean: Tensor, var: Tensor, location: float, scale: float) -> tuple[Tensor, Tensor]:
    """(m + s μ, s² σ²): a prediction (mean, variance), any shape, of targets standardised by
    `standardise_targets` (m = `location`, s = `scale`) in the targets' own units."""
    return location + scale * mean, scale**2 * var
