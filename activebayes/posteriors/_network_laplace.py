"""The whole-network Laplace posterior (`Laplace(subset="all")`; laplace-torch's subset_of_weights="all"):
its fit around the trained network, and the linearised predictive's moments and weight samples of
any `_glm.NetworkGaussian` posterior (subset="all", and the heteroscedastic `_hetero_laplace`).

Fit: every nn.Linear and nn.Conv2d tensor θ_l gets N(θ*, (φH + diag δ)⁻¹), with H the KFAC or
diagonal GGN of the whole network at θ* (`_kfac`) or, for hessian="full", the exact GGN in its
N·C-row dual form (`_gram`), φ = 1 for classification and φ = 1/σ² for regression, σ² the
noise variance that online training learnt (`marglik_`) or else one fitted from the trained
network's residuals (`gaussian_likelihood.fit_noise_variance`). δ, one precision per parameter
tensor, is, in this order:
    prior_precision="tangent": the single δ of the tangent linear model's evidence at its own mode (`_tangent`);
    the δ that online marglik training learnt per tensor (prior_precision "marglik" or "online");
    prior_precision="marglik" otherwise: the single δ maximising the evidence
        log p(D | δ) ≈ log p(D | θ*) − ½ Σ_i log(φ λ_i + δ) + ½ P log δ − ½ δ ‖θ*‖²
        over the curvature's eigenvalues λ_i (`_curvature.maximise_scalar_evidence`, MacKay's fixed point);
    a number, or one per tensor, as given.

Predictive (the linearised network, `_glm`): f(x) ~ N(f(x; θ*), J(x) Σ J(x)ᵀ); `network_moments`
returns its mean [N, C] and covariance [N, C, C] (or diagonal [N, C]); `network_deviations` draws
S deviations θ_s − θ* ~ N(0, Σ) ONCE per S from standard normal noise z [S, P] seeded with `seed_`
on the CPU (`_glm.standard_noise`), so every candidate's function sample
f(x; θ*) + J(x)(θ_s − θ*) (`sampled_outputs`) uses the same θ_s: jointly consistent across a pool
and independent of the batching.

The functions take the `Laplace` object and read or set its attributes (as `_hetero_laplace`).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor, nn

from activebayes.errors import ConfigError, ShapeError
from activebayes.gaussian_likelihood import fit_noise_variance, network_outputs
from activebayes.posteriors._curvature import maximise_scalar_evidence
from activebayes.posteriors._glm import standard_noise
from activebayes.posteriors._gram import fit_network_curvature, network_gaussian
from activebayes.posteriors._kfac import as_outputs, curvature_layers, network_log_likelihood, prior_precisions
from activebayes.posteriors._tangent import fit_tangent
from activebayes.training import as_tensor


def fit_whole_network(laplace: Any, net: nn.Module, x: Tensor, y: Tensor) -> None:
    """`Laplace._fit_network` for subset="all" (module docstring) around the trained network `net`
    (eval mode, its trainable parameters still requiring grad; x [N, ...], y labels or targets [N]
    on its device): fit the curvature, choose σ² and δ, and set the fitted attributes."""
    layers = curvature_layers(net)
    with torch.no_grad():
        n_out = as_outputs(net(x[:1])).shape[1]
    if laplace.likelihood_ == "gaussian" and n_out != 1:
        raise ConfigError(f"{laplace._network_argument}: for regression expected one output per item, got {n_out}")
    if laplace.likelihood_ == "categorical" and (y.min() < 0 or y.max() >= n_out):
        raise ShapeError(f"y: expected labels in [0, {n_out - 1}], got range [{int(y.min())}, {int(y.max())}]")
    laplace._tangent = None
    if laplace.prior_precision == "tangent":
        if laplace.likelihood_ != "categorical":
            raise ConfigError(f"prior_precision: 'tangent' is for classification, got likelihood={laplace.likelihood_!r}")
        laplace._tangent = fit_tangent(net, x, y)
    tangent = laplace._tangent
    curvature = tangent.curvature if tangent else fit_network_curvature(net, x, y, laplace.hessian.value, laplace.likelihood_)
    for p in net.parameters():
        p.requires_grad_(False)
    factor = 1.0
    if laplace.likelihood_ == "gaussian":
        residuals = network_outputs(net, x) - y
        laplace.noise_ = laplace.marglik_.sigma_noise**2 if laplace.marglik_ is not None else fit_noise_variance(residuals, y)
        factor = 1.0 / laplace.noise_
    deltas = laplace._learnt([p for layer in layers for p in layer.parameters(recurse=False)])
    if tangent is not None:
        deltas = prior_precisions(tangent.delta, len(curvature.blocks), device=x.device)
    elif deltas is None and laplace.prior_precision == "marglik":
        norm2 = float(sum(m.square().sum() for m in curvature.mean))
        deltas = prior_precisions(maximise_scalar_evidence(curvature.eigenvalues(factor), norm2), len(curvature.blocks), device=x.device)
    elif deltas is None:
        deltas = prior_precisions(laplace.prior_precision, len(curvature.blocks), device=x.device)
    laplace.posterior_ = network_gaussian(net, layers, curvature, deltas, factor)
    laplace.model_, laplace.layer_, laplace.prior_precision_ = net, None, deltas
    laplace.log_likelihood_ = network_log_likelihood(curvature, None if laplace.noise_ is None else math.sqrt(laplace.noise_))


def network_inputs(laplace: Any, x: Tensor) -> Tensor:
    """x [N, ...] checked and cast to the fitted network's dtype and device."""
    param = next(laplace.model_.parameters())
    return as_tensor("x", x, param.dtype).to(param.device)


def network_moments(laplace: Any, x: Tensor, *, diagonal: bool) -> tuple[Tensor, Tensor]:
    """(f_map [N, C], f_var [N, C, C], or its diagonal [N, C] with `diagonal`) of the linearised network."""
    laplace._check_fitted()
    f, var = laplace.posterior_.functional_variance(network_inputs(laplace, x), diagonal=diagonal)
    return f, var.to(f.dtype)


def network_deviations(laplace: Any, n_samples: int | None = None) -> list[Tensor]:
    """S draws θ_s − θ* ~ N(0, Σ), one tensor [S, *θ_l.shape] per parameter tensor (module
    docstring); kept on `laplace._samples`, so every call with the same S returns the same draws."""
    laplace._check_fitted()
    s = laplace._sample_count(n_samples)
    if s not in laplace._samples:
        post = laplace.posterior_
        noise = standard_noise(s, post.noise_size, laplace.seed_).to(post.deltas.device)
        dtype = next(laplace.model_.parameters()).dtype
        laplace._samples = {s: [d.to(dtype) for d in post.deviations(noise)]}
    return laplace._samples[s]


def sampled_outputs(laplace: Any, x: Tensor, n_samples: int | None = None) -> Tensor:
    """S linearised function samples f(x; θ*) + J(x)(θ_s − θ*) [S, N, C], θ_s shared by every x."""
    laplace._check_fitted()
    return laplace.posterior_.sample_outputs(network_inputs(laplace, x), network_deviations(laplace, n_samples))


__all__ = ["fit_whole_network", "network_deviations", "network_inputs", "network_moments", "sampled_outputs"]
