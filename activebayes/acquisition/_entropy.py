"""Entropies in log space (private helpers shared by the scores and the batch selectors).

Categorical entropies use torch.special.entr(p) = -p log p, which is exactly 0 at p = 0, so
probabilities of exactly 0 or 1 never give NaN. Gaussian-mixture entropies (for the regression
EIG) are estimated by Gauss-Hermite quadrature or bounded by moment matching; see
`mixture_entropy`. Nothing here synchronises with the host.
"""

from __future__ import annotations

import functools
import math
from enum import StrEnum

import numpy as np
import torch
from torch import Tensor

from activebayes.errors import ConfigError, ShapeError
from activebayes.predictive import GaussianPredictive, Predictive, as_predictive

_LOG_2PI_E = math.log(2.0 * math.pi * math.e)
_MIXTURE_BUDGET = 1 << 22  # elements of the [S, J, S, n] quadrature tensor held at once


class MixtureEntropy(StrEnum):
    """How `eig` estimates the entropy of a Gaussian mixture Σ_s w_s N(μ_s, σ_s²)."""

    QUADRATURE = "quadrature"
    MOMENT_MATCHED = "moment-matched"


def parse_option(enum: type[StrEnum], value: str, argument: str) -> StrEnum:
    """`enum(value)`, or a ConfigError naming the argument and the valid choices."""
    try:
        return enum(value)
    except ValueError:
        valid = ", ".join(repr(member.value) for member in enum)
        raise ConfigError(f"{argument}: expected one of {valid}, got {value!r}") from None


def draw_device(generator: torch.Generator | None, data: Tensor) -> torch.device:
    """Where random numbers are drawn: the generator's device (a CPU generator also serves CUDA
    data; the draws are then copied over), or the data's device without a generator."""
    return generator.device if generator is not None else data.device


def categorical(pred: Predictive | GaussianPredictive | Tensor, function: str) -> Predictive:
    """The argument as a categorical Predictive; a GaussianPredictive raises ShapeError."""
    pred = as_predictive(pred)
    if not isinstance(pred, Predictive):
        raise ShapeError(
            f"{function}: expected a categorical Predictive or probs tensor [S, N, C], "
            f"got a {type(pred).__name__} (only variance, entropy, bald, eig and random accept one)"
        )
    return pred


def working_probs(pred: Predictive) -> Tensor:
    """probs [S, N, C] in float32 or float64 (half precision is promoted to float32)."""
    probs = pred.probs
    return probs if probs.dtype in (torch.float32, torch.float64) else probs.float()


def entropy(probs: Tensor) -> Tensor:
    """H[p] = -Σ_c p_c log p_c over the last dimension, with 0 log 0 = 0: [..., C] -> [...]."""
    return torch.special.entr(probs.clamp(0.0, 1.0)).sum(-1)


def expected_entropy(probs: Tensor, weights: Tensor) -> Tensor:
    """E_θ H[p(y | x, θ)] = Σ_s w_s H[probs[s, n]]: probs [S, N, C], weights [S] -> [N]."""
    return torch.einsum("s,sn->n", weights.to(probs.dtype), entropy(probs))


def gaussian_entropy(var: Tensor) -> Tensor:
    """Differential entropy ½ log(2πe σ²) of N(μ, σ²), elementwise."""
    return 0.5 * (torch.log(var) + _LOG_2PI_E)


@functools.lru_cache(maxsize=16)
def _hermite(n_nodes: int, device: torch.device) -> tuple[Tensor, Tensor]:
    """Gauss-Hermite nodes t_j and weights h_j/√π (summing to 1), float64 on device.

    Cached per device: the host-to-device copy happens once, later calls stay free of syncs.
    """
    nodes, weights = np.polynomial.hermite.hermgauss(n_nodes)
    as_tensor = functools.partial(torch.tensor, dtype=torch.float64, device=device)
    return as_tensor(nodes), as_tensor(weights / math.sqrt(math.pi))


def _moments(pred: GaussianPredictive, min_var: float) -> tuple[Tensor, Tensor, Tensor]:
    mean = pred.mean if pred.mean.dtype in (torch.float32, torch.float64) else pred.mean.float()
    var = pred.var.to(mean.dtype).clamp_min(min_var)
    return mean, var, pred.sample_weights().to(mean.dtype)


def mixture_entropy(
    pred: GaussianPredictive,
    *,
    estimator: MixtureEntropy = MixtureEntropy.QUADRATURE,
    n_nodes: int = 32,
    min_var: float = 1e-12,
) -> Tensor:
    """Entropy of the predictive mixture p(y | x_n) = Σ_s w_s N(y; μ_sn, σ²_sn), [N] in nats.

    quadrature: H = -Σ_s w_s E_{N(μ_s, σ_s²)}[log p(y)], each expectation by Gauss-Hermite
        quadrature with `n_nodes` nodes y = μ_s + √2 σ_s t_j, log p(y) by logsumexp over the S
        components. Exact when the components are equal (log p is then quadratic in y) and when
        they are far apart; otherwise the error has no fixed sign and is small (within 2e-3 nats of a
        Monte-Carlo estimate at 32 nodes in the tests). Computed in float64 (a node μ + √2σt
        must resolve σ ≪ |μ|), O(S² J N) work chunked over N.
    moment-matched: ½ log(2πe Var[y]) with Var[y] = E_θ[σ²] + Var_θ[μ], the entropy of the Gaussian
        with the mixture's variance. An upper bound (the Gaussian maximises entropy for a given
        variance), so an EIG built on it is biased upwards; it is tight for equal components.

    Variances are clamped to at least `min_var` so noise-free samples (σ² = 0) stay finite.
    """
    mean, var, weights = _moments(pred, min_var)
    if estimator == MixtureEntropy.MOMENT_MATCHED:
        centre = torch.einsum("s,sn->n", weights, mean)
        total = torch.einsum("s,sn->n", weights, var + (mean - centre) ** 2)
        return gaussian_entropy(total.clamp_min(min_var))
    if n_nodes < 1:
        raise ConfigError(f"n_nodes: expected a positive number of quadrature nodes, got {n_nodes}")
    out_dtype = mean.dtype
    mean, var, weights = mean.double(), var.double(), weights.double()  # nodes μ ± √2σt need it
    nodes, node_w = _hermite(n_nodes, mean.device)  # [J], [J]
    S, N = mean.shape
    log_norm = torch.log(weights)[:, None] - 0.5 * torch.log(2.0 * math.pi * var)  # [S, N]
    chunk = max(1, _MIXTURE_BUDGET // max(1, S * S * n_nodes))
    parts = []
    for start in range(0, N, chunk):
        mu, v, ln = mean[:, start : start + chunk], var[:, start : start + chunk], log_norm[:, start : start + chunk]
        y = mu[:, None, :] + math.sqrt(2.0) * v.sqrt()[:, None, :] * nodes[None, :, None]  # [S, J, n]
        z = (y[:, :, None, :] - mu[None, None, :, :]) ** 2 / v[None, None, :, :]  # [S, J, S', n]
        log_mix = torch.logsumexp(ln[None, None, :, :] - 0.5 * z, dim=2)  # [S, J, n]
        parts.append(-torch.einsum("s,j,sjn->n", weights, node_w, log_mix))
    return (torch.cat(parts) if parts else mean.new_zeros(0)).to(out_dtype)


def expected_gaussian_entropy(pred: GaussianPredictive, *, min_var: float = 1e-12) -> Tensor:
    """E_θ H[N(μ_θ, σ²_θ)] = Σ_s w_s ½ log(2πe σ²_sn), [N]."""
    _, var, weights = _moments(pred, min_var)
    return torch.einsum("s,sn->n", weights, gaussian_entropy(var))
