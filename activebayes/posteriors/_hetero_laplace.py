"""Laplace for heteroscedastic regression in natural parameters (`Laplace(likelihood="heteroscedastic")`;
Immer, Palumbo, Marx and Vogt, "Effective Bayesian heteroscedastic regression with deep neural
networks", NeurIPS 2023).

The network outputs f = (f₁, f₂) [N, 2] per item, the natural parameters η₁ = f₁, η₂ = −½ exp(f₂)
of y | x ~ N(μ, σ²) with σ² = exp(−f₂), μ = f₁ σ² (`activebayes.likelihoods`). The NLL is convex in
η, so the generalised Gauss-Newton is PSD: with J_n = ∂f_n/∂θ [2, P],

    H = Σ_n J_nᵀ Λ_n J_n,   Λ_n = diag(1, η₂) Cov[(y, y²)] diag(1, η₂) = [[σ², −μ], [−μ, ½ + μ²/σ²]],

the Hessian of the NLL in η (the covariance of the sufficient statistics) pulled back through the
link; Λ_n = v₁v₁ᵀ + v₂v₂ᵀ with v₁ = (σ, −μ/σ), v₂ = (0, 1/√2), so KFAC and the diagonal GGN of
`_kfac` backpropagate K = 2 vectors per item. The posterior is N(θ*, (H + diag δ)⁻¹) over every
nn.Linear / nn.Conv2d tensor (subset="all"), or over the last nn.Linear's weight and bias alone
(subset="last_layer": every other parameter frozen at θ*, the same KFAC / diag of that layer).
The network is trained on standardised targets (`NetworkPosterior._standardise_targets`), so the
curvature, the evidence log q(D | δ) (`_kfac.log_marginal_likelihood`, φ = 1) and δ live in those
units; "marglik" maximises the evidence in one scalar δ (MacKay's fixed point).

Predictive (the linearised / GLM predictive, as for the other likelihoods): the network is
replaced by its first-order expansion in θ, so the outputs are Gaussian,
    f(x) ~ N(m, V),   m = f(x; θ*) [2],   V = J(x) Σ J(x)ᵀ [2, 2]   (`_glm.functional_variance`),
and y | x, D is the mixture ∫ N(y; μ(f), σ²(f)) N(f; m, V) df. Its mean and variance are exact
under that Gaussian (the link is not linearised), from E[X e^{tY}] = e^{t m_Y + t² V_YY / 2}
(m_X + t V_XY) and its second-moment analogue (`linearised_moments`):
    E[σ²] = exp(−m₂ + V₂₂/2),        E[μ] = exp(−m₂ + V₂₂/2) (m₁ − V₁₂),
    E[μ²] = exp(−2m₂ + 2V₂₂) ((m₁ − 2V₁₂)² + V₁₁),   Var[μ] = E[μ²] − E[μ]²,
    E[y] = E[μ],   Var[y] = Var[μ] (epistemic) + E[σ²] (aleatoric),
mapped back to the targets' units (location + scale · E[μ], scale² · variances). The
approximation is the linearisation (J(x) fixed at θ*) and the Laplace Gaussian over θ; nothing
further. `predict` draws S linearised function samples f_s = m + J(x)(θ_s − θ*) (θ_s shared by every
candidate, `_glm.NetworkGaussian.sample_outputs`) and returns each sample's (μ_s, σ²_s), whose
average converges to the closed form above.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from activebayes.errors import ConfigError
from activebayes.likelihoods import HETEROSCEDASTIC, heteroscedastic_loss
from activebayes.posteriors._curvature import maximise_scalar_evidence
from activebayes.posteriors._glm import NetworkGaussian
from activebayes.posteriors._kfac import as_outputs, curvature_layers, fit_curvature, network_log_likelihood, prior_precisions
from activebayes.posteriors._network import inputs_for
from activebayes.posteriors._network_laplace import network_inputs, sampled_outputs
from activebayes.predictive import GaussianPredictive
from activebayes.training import train


def linearised_moments(mean: Tensor, cov: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(E[μ], Var[μ], E[σ²]), each [N], under f ~ N(mean [N, 2], cov [N, 2, 2]) with the link
    μ = f₁ e^{−f₂}, σ² = e^{−f₂} (module docstring); computed in float64."""
    m1, m2 = mean[..., 0].double(), mean[..., 1].double()
    v11, v12, v22 = cov[..., 0, 0].double(), cov[..., 0, 1].double(), cov[..., 1, 1].double()
    noise = torch.exp(-m2 + 0.5 * v22)
    mu = noise * (m1 - v12)
    # Var[μ] = e^{−2m₂ + V₂₂} (e^{V₂₂} ((m₁ − 2V₁₂)² + V₁₁) − (m₁ − V₁₂)²), clamped at 0 against rounding
    spread = torch.exp(-2.0 * m2 + v22) * (torch.exp(v22) * ((m1 - 2.0 * v12).square() + v11) - (m1 - v12).square())
    return mu, spread.clamp_min(0.0), noise


def check_options(laplace: Any) -> None:
    """One-line ConfigErrors for the options heteroscedastic Laplace does not take."""
    if laplace.hessian.value == "full":
        raise ConfigError("hessian: likelihood='heteroscedastic' takes 'kron' or 'diag', got 'full'")
    if laplace.prior_precision == "online" or laplace.train_config.marglik is not None:
        raise ConfigError("prior_precision: online marginal-likelihood training fits the categorical and gaussian likelihoods; "
                          "with likelihood='heteroscedastic' use 'marglik' (post hoc) or a number, and train without marglik")
    if laplace.predictive == "analytic":
        raise ConfigError("predictive: likelihood='heteroscedastic' predicts with the linearised network's samples; use 'sampled'")


def covered_layers(net: nn.Module, subset: str) -> list[nn.Module]:
    """The layers the posterior covers: every nn.Linear / nn.Conv2d ("all"), or the last nn.Linear
    ("last_layer"; every other parameter is frozen first), as `_kfac.curvature_layers` finds them."""
    if subset == "last_layer":
        from activebayes.posteriors.laplace import last_linear

        last = last_linear(net)
        for p in net.parameters():
            p.requires_grad_(False)
        for p in last.parameters():
            p.requires_grad_(True)
    return curvature_layers(net)


def fit_heteroscedastic(laplace: Any, x: Tensor, y: Tensor) -> None:
    """`Laplace._fit_network` for likelihood="heteroscedastic" (module docstring): train on the
    Gaussian NLL of the standardised targets y [N] (or copy `model`), fit the KFAC / diagonal GGN
    of the covered layers, choose δ and set the fitted attributes."""
    check_options(laplace)
    dev = laplace.device_
    net = laplace._network(laplace.seed_)
    x = inputs_for(net, x)
    if laplace.model is None:
        net = train(net, x, y, laplace.train_config, seed=laplace.seed_, device=dev, loss_fn=heteroscedastic_loss)
    net = net.to(dev).eval()
    x, y = x.to(dev), y.to(dev)
    with torch.no_grad():
        n_out = as_outputs(net(x[:1])).shape[1]
    if n_out != 2:
        raise ConfigError(f"{laplace._network_argument}: likelihood='heteroscedastic' expects two outputs per item "
                          f"(the natural parameters' f₁, f₂), got {n_out}")  # fmt: skip
    layers = covered_layers(net, laplace.subset)
    laplace._trainable = [id(p) for p in net.parameters() if p.requires_grad]
    curvature = fit_curvature(net, x, y, laplace.hessian.value, HETEROSCEDASTIC)
    for p in net.parameters():
        p.requires_grad_(False)
    if laplace.prior_precision == "marglik":
        norm2 = float(sum(m.square().sum() for m in curvature.mean))
        delta = maximise_scalar_evidence(curvature.eigenvalues(1.0), norm2)
    else:
        delta = laplace.prior_precision
    deltas = prior_precisions(delta, len(curvature.blocks), device=x.device)
    laplace._samples = {}
    laplace.marglik_, laplace.noise_ = None, None
    laplace.posterior_ = NetworkGaussian(net, layers, curvature, deltas, 1.0)
    laplace.model_, laplace.layer_, laplace.prior_precision_ = net, None, deltas
    laplace.log_likelihood_ = network_log_likelihood(curvature)


def heteroscedastic_mean_var(laplace: Any, x: Tensor, *, observation_noise: bool = False) -> tuple[Tensor, Tensor]:
    """(E[y | x, D] [N], Var [N]) of the linearised predictive in the targets' units (module
    docstring): the epistemic Var[μ], plus the aleatoric E[σ²] with `observation_noise`."""
    laplace._check_fitted()
    f, cov = laplace.posterior_.functional_variance(network_inputs(laplace, x))
    mu, spread, noise = linearised_moments(f, cov)
    scale = laplace.target_scale_
    var = scale**2 * (spread + noise if observation_noise else spread)
    return (laplace.target_location_ + scale * mu).to(f.dtype), var.to(f.dtype)


def heteroscedastic_predict(laplace: Any, x: Tensor, n_samples: int | None = None) -> GaussianPredictive:
    """S linearised function samples f_s(x) [S, N, 2] as each sample's (μ_s, σ²_s) [S, N] in the
    targets' units (`NetworkPosterior._predictive`)."""
    return laplace._predictive(sampled_outputs(laplace, x, n_samples))


__all__ = ["check_options", "covered_layers", "fit_heteroscedastic", "heteroscedastic_mean_var", "heteroscedastic_predict", "linearised_moments"]
