"""The Gaussian process's internal units and its gpytorch modules (`activebayes.posteriors.gp`).

Inputs are mapped to x̃_d = (x_d − lo_d) / r_d by BoTorch's `Normalize` with the bounds of
`input_bounds`, targets to ỹ = (y − m_y) / s_y by `Standardize` (s_y as `standardize_scale`).
`gp_modules` builds, in those units, the Gaussian likelihood and the kernel (ScaleKernel of RBF or
Matérn-5/2, plus the linear part) with BoTorch 0.18's `SingleTaskGP` priors and lower bounds,
    ℓ̃_d ~ LogNormal(√2 + ½ log D, √3),  ℓ̃_d >= 0.025;   σ̃_ε² ~ LogNormal(μ, σ),  σ̃_ε² >= 1e-4,
each starting at its prior's mode, and a hyper-parameter given in the original units converted
(σ̃_ε² = σ_ε² / s_y², ℓ̃_d = ℓ_d / r_d, ã = a / s_y²) and frozen, its bound lowered to
min(bound, half the value).
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import gpytorch
import torch
from gpytorch.constraints import GreaterThan
from gpytorch.priors import LogNormalPrior
from torch import Tensor

from activebayes.posteriors._gp_kernels import Kernel, covariance, parts, set_unit_variances

WORK = torch.float64  # the GP's arithmetic
MIN_NOISE = 1e-4  # BoTorch's MIN_INFERRED_NOISE_LEVEL: lower bound on a learnt σ̃_ε²
MIN_LENGTHSCALE = 2.5e-2  # BoTorch's lower bound on a learnt ℓ̃ (normalised units)
_MIN_RANGE = 1e-8  # a feature whose training range is below this is not rescaled (Normalize's rule)


def input_bounds(x: Tensor, ard: bool) -> Tensor:
    """Normalize's bounds [2, D] of inputs x [N, D]: per-feature minimum and minimum + range (one
    shared range, the largest, without ard; a range below 1e-8 counts as 1)."""
    lo, hi = x.amin(0), x.amax(0)
    span = hi - lo
    if not ard:
        span = span.max().expand_as(span)
    span = torch.where(span >= _MIN_RANGE, span, torch.ones_like(span))
    return torch.stack([lo, lo + span])


def standardize_scale(y: Tensor) -> float:
    """s_y as `Standardize` computes it from targets y [N]: the Bessel-corrected std, 1 below 1e-8
    or for one target."""
    if y.shape[0] < 2:
        return 1.0
    std = float(y.std(unbiased=True))
    return std if std >= 1e-8 else 1.0


def gp_modules(gp: Any, bounds: Tensor, y_scale: float, centre: Tensor) -> tuple[gpytorch.likelihoods.GaussianLikelihood, gpytorch.kernels.Kernel]:
    """Likelihood and ScaleKernel(RBF | Matérn-5/2) (+ the linear part centred at `centre` [D],
    normalised units) in the internal units, priors and fixed values set (module docstring).

    Args:
        gp: the GaussianProcess whose settings (kernel, ard, priors, noise_prior, noise,
            lengthscale, outputscale) are read.
        bounds: `input_bounds` [2, D] (float64, on the fitting device); y_scale: s_y.
    """
    n_features = bounds.shape[-1]
    span = bounds[1] - bounds[0]  # [D]
    noise_s = None if gp.noise is None else gp.noise / y_scale**2
    noise_bound = MIN_NOISE if noise_s is None else min(MIN_NOISE, 0.5 * noise_s)
    loc, scale = gp.noise_prior
    noise_prior = LogNormalPrior(loc, scale) if gp.priors and noise_s is None else None
    likelihood = gpytorch.likelihoods.GaussianLikelihood(
        noise_prior=noise_prior,
        noise_constraint=GreaterThan(noise_bound, transform=None, initial_value=max(math.exp(loc - scale**2), 2 * noise_bound)),
    )  # initial value: the prior's mode (BoTorch's start, exp(−5), with the default), above the bound

    ls_s = None if gp.lengthscale is None else gp.lengthscale / (span if gp.ard else span[:1])
    ls_bound = MIN_LENGTHSCALE if ls_s is None else min(MIN_LENGTHSCALE, 0.5 * float(ls_s.min()))
    loc, scale = math.sqrt(2.0) + 0.5 * math.log(n_features), math.sqrt(3.0)
    ls_prior = LogNormalPrior(loc, scale) if gp.priors and ls_s is None else None
    base_kw = dict(
        ard_num_dims=n_features if gp.ard else None,
        lengthscale_prior=ls_prior,
        lengthscale_constraint=GreaterThan(ls_bound, transform=None, initial_value=math.exp(loc - scale**2)),
    )
    base = (gpytorch.kernels.RBFKernel(**base_kw) if gp.kernel.smooth == Kernel.RBF
            else gpytorch.kernels.MaternKernel(nu=2.5, **base_kw))
    covar = covariance(gp.kernel, base, centre)
    likelihood, covar = likelihood.to(bounds), covar.to(bounds)
    value = partial(torch.tensor, dtype=WORK, device=bounds.device)  # gpytorch's setters go via float32 for a float
    set_unit_variances(covar)
    scaled = parts(covar)[0]
    if noise_s is not None:
        likelihood.noise = value(noise_s)
        likelihood.raw_noise.requires_grad_(False)
    if ls_s is not None:
        base.lengthscale = ls_s.reshape(base.lengthscale.shape)
        base.raw_lengthscale.requires_grad_(False)
    if gp.outputscale is not None:
        scaled.outputscale = value(gp.outputscale / y_scale**2)
        scaled.raw_outputscale.requires_grad_(False)
    return likelihood, covar
