"""Sampling-free predictive: propagate a Gaussian through a network in one forward pass.

For a network whose weights have a diagonal (mean-field) Gaussian posterior, or only some of
them (the others are point estimates), the activations a of every layer are approximated by a
Gaussian with a diagonal covariance, N(m, diag v), carried layer by layer in ONE forward pass
(moment propagation; as in the sampling-free predictive of Klasson, Solin & Trapp, and the
"assumed density filtering" line of work before it). Every rule below is a pure function of
(mean, var) tensors of the same shape [N, ...]; `var=None` stands for an exactly known
(deterministic) activation, so the layers before the first Gaussian weights run once, as a
plain forward pass.

Rules (elementwise squares; all weights independent of each other and of the input):

    Linear, W ~ N(M, diag V_W) [out, in], b ~ N(m_b, v_b) [out], input a ~ N(m, diag v) [..., in]:
        mean = M m + m_b
        var  = V_W (m² + v) + M² v + v_b                   (exact first two moments of W a + b)
    Conv2d: the same, with the convolution for the matrix product (it is bilinear in the
        weights and the input, so each output is again a sum of independent products):
        mean = conv(m; M) + m_b,  var = conv(m² + v; V_W) + conv(v; M²) + v_b.
    Deterministic weights (V_W = 0, v_b = 0): mean = layer(m), var = the same op with squared
        weights applied to v, no bias.
    ReLU (the default, `relu="exact"`): the exact moments of ReLU(a), a ~ N(m, v), s = √v,
        mean = m Φ(m/s) + s φ(m/s),  E[ReLU(a)²] = (m² + v) Φ(m/s) + m s φ(m/s),  var = E[·²] − mean².
        `relu="linearised"` (the paper's rule): mean ReLU(m), var 1[m > 0] v, which drops the
        mass of a below 0 (or above it) and under-states the spread of units near 0.
    Other elementwise activations f (tanh, GELU, ...), linearised at the mean: mean = f(m),
        var = f'(m)² v (f' by forward-mode autodiff).
    MaxPool2d: the mean's argmax in each window, carrying the variance at that position.
    Flatten / Unflatten: reshape both; Dropout (every kind): the identity (eval mode);
    `activebayes.nets.Standardize`: mean (m − μ)/σ, var v/σ².
    Softmax, for logits f ~ N(μ, diag σ²) [N, C] (`predict_proba` of the analytic predictive),
        the mean-field approximation (Lu, Ie & Sha 2020, their "mean-field 1"), each class
        against every other through the probit of their logit difference (λ = π/8),
            E[softmax(f)]_c ≈ 1 / Σ_k exp(−(μ_c − μ_k) / sqrt(1 + λ (σ_c² + σ_k²))),
        renormalised to sum to 1; for C = 2 it is MacKay's probit of f₁ − f₂. The probit
        approximation (MacKay 1992), E[softmax(f)] ≈ softmax(μ / sqrt(1 + λ σ²)), scales each
        logit on its own (`probit_softmax`, Laplace's link).

Accuracy (bench/analytic.py --data digits, README_EXPERIMENTS "The analytic predictive on
digits"): for an MFVI 64-64-10 MLP on sklearn digits the largest error of a class probability
against a 40,000-sample Monte Carlo fell from 0.22 (linearised ReLU, probit) to 0.05 (exact ReLU,
mean-field), the mean error from 0.011 to 0.003, where the logits' variances are ~2; a posterior
broad enough to give logit variances of ~20 leaves 0.11 (0.31 before). The remaining error is
the propagation's own: the activations of a layer are taken as independent Gaussians, while they
share the randomness of every weight before them. Where the logits' variances are ~0.05, every
rule is within 0.007, about the noise of a 1,000-sample Monte Carlo (0.005).

Only `nn.Sequential` networks (nested ones too) of the modules above are propagated; any
other module raises a ConfigError naming it (`check_propagatable` checks a network up front).

>>> import torch
>>> from torch import nn
>>> net = nn.Sequential(nn.Linear(2, 4), nn.ReLU(), nn.Linear(4, 3))
>>> mean, var = propagate(net, torch.zeros(5, 2), {"2.weight": torch.full((3, 4), 0.01)})
>>> mean.shape, var.shape
(torch.Size([5, 3]), torch.Size([5, 3]))
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from activebayes.errors import ConfigError
from activebayes.gaussian_likelihood import regression_output
from activebayes.nets import Standardize
from activebayes.predictive import GaussianPredictive, Predictive
from activebayes.errors import classification_only, regression_only

#: Elementwise activations, linearised at the mean.
ELEMENTWISE = (nn.ReLU, nn.LeakyReLU, nn.ELU, nn.SELU, nn.CELU, nn.GELU, nn.SiLU, nn.Mish, nn.Tanh, nn.Sigmoid,
               nn.Softplus, nn.Hardtanh, nn.ReLU6, nn.Hardswish, nn.Hardsigmoid)
#: Identities at prediction time.
IDENTITIES = (nn.Identity, nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout, nn.FeatureAlphaDropout)
RESHAPES = (nn.Flatten, nn.Unflatten)
AFFINE = (nn.Linear, nn.Conv2d)
SUPPORTED = (*AFFINE, *ELEMENTWISE, *IDENTITIES, *RESHAPES, nn.MaxPool2d, Standardize)
RELU_MODES = ("exact", "linearised")


# ---------------------------------------------------------------------------- the rules
def gaussian_affine(op, mean: Tensor, var: Tensor | None, weight: Tensor, weight_var: Tensor | None,
                    bias: Tensor | None = None, bias_var: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
    """Moments of op(a, W) + b for an op bilinear in the input and the weights (F.linear, a
    convolution), with a ~ N(mean, diag var), W ~ N(weight, diag weight_var), b ~ N(bias, diag bias_var):

        mean' = op(m, M) + m_b,   var' = op(m² + v, V_W) + op(v, M²) + v_b.

    `op(input, weight)` without a bias; None for var / weight_var / bias_var is a zero variance
    (a None result: the output is deterministic). Shapes: those of `op`.
    """
    out = op(mean, weight)
    if bias is not None:
        out = out + _bias_view(bias, out)
    terms = []
    if weight_var is not None:
        second = mean.square() if var is None else mean.square() + var
        terms.append(op(second, weight_var))
    if var is not None:
        terms.append(op(var, weight.square()))
    if bias_var is not None:
        terms.append(_bias_view(bias_var, out).expand_as(out))
    if not terms:
        return out, None
    out_var = terms[0]
    for term in terms[1:]:
        out_var = out_var + term
    return out, out_var


def _bias_view(bias: Tensor, out: Tensor) -> Tensor:
    """b [C] broadcast against out [N, C] (dense) or [N, C, H, W] (convolution)."""
    return bias.reshape(bias.shape[0], *([1] * (out.dim() - 2))) if out.dim() > 2 else bias


def linear_moments(mean: Tensor, var: Tensor | None, weight: Tensor, weight_var: Tensor | None = None,
                   bias: Tensor | None = None, bias_var: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
    """Dense layer: a [..., in], W [out, in], b [out] -> [..., out] (`gaussian_affine` with F.linear):
    mean = M m + m_b, var = V_W (m² + v) + M² v + v_b."""
    return gaussian_affine(F.linear, mean, var, weight, weight_var, bias, bias_var)


def conv2d_moments(conv: nn.Conv2d, mean: Tensor, var: Tensor | None, weight: Tensor, weight_var: Tensor | None = None,
                   bias: Tensor | None = None, bias_var: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
    """nn.Conv2d (zero padding) on a [N, c, h, w] with Gaussian or fixed weights: `gaussian_affine`
    with the convolution of `conv`'s stride, padding, dilation and groups."""
    if conv.padding_mode != "zeros":
        raise ConfigError(f"predictive: 'analytic' supports Conv2d with zero padding only, got padding_mode={conv.padding_mode!r}")

    def op(x: Tensor, w: Tensor) -> Tensor:
        return F.conv2d(x, w, None, conv.stride, conv.padding, conv.dilation, conv.groups)

    return gaussian_affine(op, mean, var, weight, weight_var, bias, bias_var)


def relu_moments(mean: Tensor, var: Tensor | None, *, mode: str = "exact") -> tuple[Tensor, Tensor | None]:
    """ReLU(a), a ~ N(m, diag v): "exact" (the Gaussian's rectified moments, module docstring)
    or "linearised" (mean ReLU(m), var 1[m > 0] v)."""
    if var is None:
        return mean.clamp_min(0), None
    if mode == "linearised":
        return mean.clamp_min(0), var * (mean > 0)
    std = var.clamp_min(1e-30).sqrt()
    z = mean / std
    cdf = torch.special.ndtr(z)
    pdf = torch.exp(-0.5 * z.square()) / math.sqrt(2 * math.pi)
    first = mean * cdf + std * pdf
    second = (mean.square() + var) * cdf + mean * std * pdf
    return first, (second - first.square()).clamp_min(0)


def elementwise_moments(fn, mean: Tensor, var: Tensor | None) -> tuple[Tensor, Tensor | None]:
    """An elementwise f linearised at the mean: mean f(m), var f'(m)² v (f' by forward-mode AD)."""
    if var is None:
        return fn(mean), None
    out, slope = torch.func.jvp(fn, (mean,), (torch.ones_like(mean),))
    return out, slope.square() * var


def max_pool2d_moments(pool: nn.MaxPool2d, mean: Tensor, var: Tensor | None) -> tuple[Tensor, Tensor | None]:
    """Max-pooling: the window's argmax of the mean, and the variance at that position."""
    args = (pool.kernel_size, pool.stride, pool.padding, pool.dilation)
    if var is None:
        return F.max_pool2d(mean, *args, ceil_mode=pool.ceil_mode), None
    out, index = F.max_pool2d(mean, *args, ceil_mode=pool.ceil_mode, return_indices=True)
    picked = var.flatten(-2).gather(-1, index.flatten(-2)).view_as(out)
    return out, picked


def softmax(logits: Tensor) -> Tensor:
    """softmax over the last axis, written out: on CPU several times faster than torch.softmax
    for the few classes of a [S, N, C] tensor (the same values within float rounding)."""
    e = (logits - logits.amax(-1, keepdim=True)).exp_()
    return e.div_(e.sum(-1, keepdim=True))


def probit_softmax(mean: Tensor, var: Tensor) -> Tensor:
    """E[softmax(f)] for f ~ N(mean, diag var) [..., C] by the probit approximation (MacKay 1992):
    softmax(μ / sqrt(1 + π σ² / 8))."""
    return softmax(mean * torch.rsqrt(1.0 + math.pi / 8.0 * var))


_PAIR_ELEMENTS = 1 << 22  # [rows, C, C] numbers per chunk of `mean_field_softmax`


def mean_field_softmax(mean: Tensor, var: Tensor) -> Tensor:
    """E[softmax(f)] for f ~ N(mean, diag var) [N, C] by the mean-field approximation (module
    docstring): p_c ∝ 1 / Σ_k exp(−(μ_c − μ_k) / sqrt(1 + π/8 (σ_c² + σ_k²))), [N, C].

    The C × C logit differences are formed for a chunk of rows at a time (at most 2²² numbers).
    """
    rows = max(1, _PAIR_ELEMENTS // (mean.shape[-1] ** 2))
    parts = []
    for m, v in zip(mean.split(rows), var.split(rows)):
        gap = m.unsqueeze(-1) - m.unsqueeze(-2)  # [n, C, C]: μ_c − μ_k
        scale = torch.rsqrt(1.0 + math.pi / 8.0 * (v.unsqueeze(-1) + v.unsqueeze(-2)))
        p = torch.exp(-gap * scale).sum(-1).reciprocal()  # the k = c term is exp(0) = 1
        parts.append(p / p.sum(-1, keepdim=True))
    return torch.cat(parts) if parts else mean.clone()


# ---------------------------------------------------------------------------- a whole network
def _unsupported(name: str, module: nn.Module) -> ConfigError:
    where = f"module {name!r}" if name else "the network"
    return ConfigError(
        f"predictive: 'analytic' cannot propagate moments through {where} ({type(module).__name__}); it supports "
        "nn.Sequential networks of Linear, Conv2d, MaxPool2d, Flatten, Dropout, Standardize and elementwise activations; "
        "use predictive='sampled'"
    )


def check_propagatable(network: nn.Module) -> None:
    """Raise the ConfigError `propagate` would, without running the network."""

    def walk(module: nn.Module, name: str) -> None:
        if isinstance(module, nn.Sequential):
            for child_name, child in module.named_children():
                walk(child, f"{name}.{child_name}" if name else child_name)
        elif not isinstance(module, SUPPORTED):
            raise _unsupported(name, module)

    walk(network, "")


def propagate(network: nn.Module, x: Tensor, variances: Mapping[str, Tensor], *,
              relu: str = "exact") -> tuple[Tensor, Tensor]:
    """Mean and variance of the network's outputs [N, ...] for a deterministic input x [N, ...].

    Args:
        network: an nn.Sequential (nested ones too) of the supported modules (module docstring),
            its parameters the posterior means; dropout is the identity whatever the mode.
        variances: {parameter name in `network` ("0.weight", "3.bias"): its posterior variance,
            the parameter's shape}; parameters not named are point estimates (zero variance).
        relu: "exact" ReLU moments (the default) or "linearised" (as the paper).

    Raises ConfigError naming an unsupported module, or a variance no Linear/Conv2d consumed.
    """
    if relu not in RELU_MODES:
        raise ConfigError(f"relu: expected one of 'exact', 'linearised', got {relu!r}")
    used: set[str] = set()

    def run(module: nn.Module, name: str, mean: Tensor, var: Tensor | None) -> tuple[Tensor, Tensor | None]:
        prefix = f"{name}." if name else ""
        if isinstance(module, nn.Sequential):
            for child_name, child in module.named_children():
                mean, var = run(child, prefix + child_name, mean, var)
            return mean, var
        if isinstance(module, AFFINE):
            w_var, b_var = variances.get(prefix + "weight"), variances.get(prefix + "bias")
            used.update(k for k in (prefix + "weight", prefix + "bias") if k in variances)
            if isinstance(module, nn.Linear):
                return linear_moments(mean, var, module.weight, w_var, module.bias, b_var)
            return conv2d_moments(module, mean, var, module.weight, w_var, module.bias, b_var)
        if isinstance(module, nn.ReLU):
            return relu_moments(mean, var, mode=relu)
        if isinstance(module, ELEMENTWISE):
            return elementwise_moments(module, mean, var)
        if isinstance(module, IDENTITIES):
            return mean, var
        if isinstance(module, RESHAPES):
            return module(mean), None if var is None else module(var)
        if isinstance(module, nn.MaxPool2d):
            return max_pool2d_moments(module, mean, var)
        if isinstance(module, Standardize):
            return (mean - module.mean) / module.std, None if var is None else var / module.std**2
        raise _unsupported(name, module)

    with torch.no_grad():
        mean, var = run(network, "", x, None)
    unused = sorted(set(variances) - used)
    if unused:
        raise ConfigError(f"predictive: 'analytic' propagates Gaussian weights of Linear and Conv2d layers only, "
                          f"got variances for {', '.join(unused)}")
    return mean, torch.zeros_like(mean) if var is None else var


# ---------------------------------------------------------------------------- the predictive
def standard_normal_draws(n_samples: int, n_outputs: int, seed: int) -> Tensor:
    """ε [S, C] float64, drawn on the CPU from a generator seeded by (seed, S, C)."""
    mixed = (seed * 0x9E3779B97F4A7C15 + n_samples * 0xBF58476D1CE4E5B9 + n_outputs * 0x94D049BB133111EB) % (2**63 - 1)
    return torch.randn(n_samples, n_outputs, generator=torch.Generator().manual_seed(mixed), dtype=torch.float64)


def gaussian_output_predictive(mean: Tensor, var: Tensor, *, likelihood: str, n_samples: int, seed: int,
                               noise: float | None = None) -> Predictive | GaussianPredictive:
    """S samples of the Gaussian over the outputs, f_n ~ N(mean[n], diag var[n]), as a predictive.

    ε [S, C] is drawn once per call (`standard_normal_draws`, seeded by `seed`) and shared by
    every item: f_sn = μ_n + σ_n ⊙ ε_s, so an item's samples do not depend on the batch it sits in
    or its position (pool-consistent; across items the draws are coupled through ε, the same
    standardised noise for all, which is no more than the diagonal Gaussian's marginals say).

    classification: mean, var [N, C] -> Predictive(softmax(f_s)) [S, N, C];
    regression ("gaussian"): mean, var [N] -> GaussianPredictive(mean [S, N] = f_s, var = σ²
        (`noise`)) with latent_mean = μ, latent_var = σ²_f, the exact Gaussian predictive.
    """
    if likelihood == "gaussian":
        eps = standard_normal_draws(n_samples, 1, seed).to(mean)[:, 0]
        samples = mean + var.sqrt() * eps.unsqueeze(1)
        return GaussianPredictive(samples, torch.full_like(samples, float(noise)), check=False,  # type: ignore[arg-type]
                                  latent_mean=mean, latent_var=var)
    eps = standard_normal_draws(n_samples, mean.shape[-1], seed).to(mean)
    logits = mean + var.sqrt() * eps.unsqueeze(1)  # [S, N, C]
    return Predictive(softmax(logits), check=False)


PREDICTIVES = ("sampled", "analytic")
_CHUNK = 8192  # rows per propagated batch: bounds the activations' memory


class AnalyticPredictive:
    """Mixin (before NetworkPosterior in the bases) for the posteriors with a `predictive`
    option: "sampled" (their own Monte Carlo `predict`) or "analytic" (this module).

    The subclass provides `output_moments(x) -> (mean, var)` of its network's outputs [N, C]
    (or [N, 1] / [N] for regression) and, in its `predict`, returns `self._analytic_predict(x,
    n_samples)` when `predictive == "analytic"`. With "analytic":
        predict_proba(x)     = mean_field_softmax(mean, var)                    [N, C]
        predict(x, S)        = `gaussian_output_predictive` (S seeded draws)    [S, N, C]
        predict_mean_var(x)  = (mean, var) [N] of the latent output in closed form (+ σ² with
                               observation_noise), regression.
    """

    predictive: str = "sampled"

    def output_moments(self, x: Tensor) -> tuple[Tensor, Tensor]:
        raise NotImplementedError

    def _latent_moments(self, x: Tensor) -> tuple[Tensor, Tensor]:
        mean, var = self.output_moments(x)
        if self.likelihood_ == "gaussian":  # type: ignore[attr-defined]
            return regression_output(mean, 0), regression_output(var, 0)
        return mean, var

    def _analytic_predict(self, x: Tensor, n_samples: int | None) -> Predictive | GaussianPredictive:
        count = self._sample_count(n_samples)  # type: ignore[attr-defined]
        mean, var = self._latent_moments(x)
        return gaussian_output_predictive(mean, var, likelihood=self.likelihood_, n_samples=count,  # type: ignore[attr-defined]
                                          seed=self.seed_, noise=self.noise_)  # type: ignore[attr-defined]

    def predict_proba(self, x: Tensor) -> Tensor:
        if self.predictive != "analytic":
            return super().predict_proba(x)  # type: ignore[misc]
        self._check_fitted()  # type: ignore[attr-defined]
        if self.likelihood_ == "gaussian":  # type: ignore[attr-defined]
            raise regression_only("predict_proba")
        return mean_field_softmax(*self.output_moments(x))

    def predict_mean_var(self, x: Tensor, n_samples: int | None = None, *, observation_noise: bool = False) -> tuple[Tensor, Tensor]:
        if self.predictive != "analytic":
            return super().predict_mean_var(x, n_samples, observation_noise=observation_noise)  # type: ignore[misc]
        self._check_fitted()  # type: ignore[attr-defined]
        if self.likelihood_ != "gaussian":  # type: ignore[attr-defined]
            raise classification_only("predict_mean_var")
        mean, var = self._latent_moments(x)
        return mean, var + self.noise_ if observation_noise else var  # type: ignore[attr-defined]


def propagate_in_chunks(network: nn.Module, x: Tensor, variances: Mapping[str, Tensor], *,
                        relu: str = "exact") -> tuple[Tensor, Tensor]:
    """`propagate` over x in chunks of rows, concatenated."""
    parts = [propagate(network, chunk, variances, relu=relu) for chunk in x.split(_CHUNK)]
    return torch.cat([m for m, _ in parts]), torch.cat([v for _, v in parts])


__all__ = [
    "PREDICTIVES", "AnalyticPredictive", "check_propagatable", "propagate_in_chunks", "conv2d_moments", "elementwise_moments", "gaussian_affine", "gaussian_output_predictive",
    "linear_moments", "max_pool2d_moments", "mean_field_softmax", "probit_softmax", "propagate", "relu_moments", "softmax", "standard_normal_draws",
]
