"""The Gaussian process's covariance functions, in the GP's internal units (inputs normalised to
[0, 1] per feature, targets standardised; `activebayes.posteriors.gp`).

    k(x̃, x̃') = a k_s(x̃, x̃')                                  kernel "rbf" | "matern52"
    k(x̃, x̃') = a k_s(x̃, x̃') + v Σ_d (x̃_d − c_d)(x̃'_d − c_d)     kernel "rbf+linear" | "matern52+linear"

k_s is RBF exp(−r²/2) or Matérn-5/2 (1 + √5 r + 5r²/3) exp(−√5 r), r² = Σ_d (x̃_d − x̃'_d)²/ℓ̃_d²,
inside a ScaleKernel (outputscale a). The linear part is Bayesian linear regression with its
weights integrated out: f = s + Σ_d w_d (x̃_d − c_d), w_d ~ N(0, v) independent of the smooth part
s, one variance v shared by every feature (as ridge regression shares one penalty: one more
hyper-parameter, where a v_d per feature overfitted 10 labels of 10 features, its 95 % intervals
covering a third of the test targets of friedman1; studies/regression/kernels.py). It is
centred at c, the mean of the training inputs, so that the prior mean (zero: the mean of the
targets) is what the line takes at the middle of the data and the line's prior variance is
smallest there; without the centre a line through the corner x̃ = 0 would be forced through the
targets' mean at that corner.
The variance v is learnt with the other hyper-parameters (flat prior, start 1), and can
shrink to zero, so "matern52+linear" contains "matern52": the marginal likelihood of the larger
model at its optimum is never below the smaller one's.
"""

from __future__ import annotations

from enum import StrEnum

import gpytorch
import torch
from gpytorch.constraints import GreaterThan
from torch import Tensor

_MIN_LINEAR_VARIANCE = 1e-8  # lower bound on a learnt v (internal units)


class Kernel(StrEnum):
    RBF = "rbf"
    MATERN52 = "matern52"
    RBF_LINEAR = "rbf+linear"
    MATERN52_LINEAR = "matern52+linear"

    @property
    def smooth(self) -> str:
        """The stationary part: "rbf" or "matern52"."""
        return self.value.split("+")[0]

    @property
    def linear(self) -> bool:
        """Whether the kernel has the centred linear part."""
        return self.value.endswith("+linear")


class CentredLinearKernel(gpytorch.kernels.LinearKernel):
    """k(x, x') = v Σ_d (x_d − c_d)(x'_d − c_d) with a fixed centre c [D] (a buffer).

    x [..., N, D], x' [..., M, D] -> [..., N, M] dense ([..., N] with diag). Dense rather than
    gpytorch's low-rank root: added to the stationary part, a low-rank term makes gpytorch take a
    Cholesky root of the stationary matrix alone, which is near-singular on a joint posterior and
    then warned about the jitter it added."""

    def __init__(self, centre: Tensor, **kwargs) -> None:
        super().__init__(**kwargs)
        self.register_buffer("centre", centre.detach().clone())

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False, **params) -> Tensor:
        scale = self.variance.sqrt()
        u, w = (x1 - self.centre) * scale, (x2 - self.centre) * scale
        return (u * w).sum(-1) if diag else u @ w.transpose(-2, -1)


def covariance(kernel: Kernel, base: gpytorch.kernels.Kernel, centre: Tensor) -> gpytorch.kernels.Kernel:
    """ScaleKernel(base), plus a CentredLinearKernel at `centre` [D] (one variance) for a
    "+linear" kernel; every variance starts at 1."""
    scaled = gpytorch.kernels.ScaleKernel(base)
    if not kernel.linear:
        return scaled
    linear = CentredLinearKernel(
        centre, variance_constraint=GreaterThan(_MIN_LINEAR_VARIANCE, transform=None, initial_value=1.0),
    )  # fmt: skip
    return scaled + linear


def parts(covar: gpytorch.kernels.Kernel) -> tuple[gpytorch.kernels.ScaleKernel, CentredLinearKernel | None]:
    """(the ScaleKernel, the linear part or None) of a kernel built by `covariance`."""
    if isinstance(covar, gpytorch.kernels.ScaleKernel):
        return covar, None
    scaled, linear = covar.kernels  # type: ignore[attr-defined]  # an AdditiveKernel of the two
    return scaled, linear


def set_unit_variances(covar: gpytorch.kernels.Kernel) -> None:
    """Every variance of `covar` to 1 (float64: gpytorch's setters go via float32 for a float)."""
    scaled, linear = parts(covar)
    one = torch.ones((), dtype=scaled.raw_outputscale.dtype, device=scaled.raw_outputscale.device)
    scaled.outputscale = one
    if linear is not None:
        linear.variance = torch.ones_like(linear.variance)
