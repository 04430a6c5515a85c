"""Entropies in log space (private helpers shared by the scores and the batch selectors).

Categorical entropies use torch.special.entr(p) = -p log p, which is exactly 0 at p = 0, so
probabilities of exactly 0 or 1 never give NaN. Gaussian-mixture entropies (for the regression
EIG) are computed by the trapezoid rule on a per-candidate grid (Gauss-Hermite per component where
the grid would be too coarse) or bounded by moment matching; see `mixture_entropy`. A
GaussianPredictive with latent fields is exactly Gaussian and has closed forms (`latent_variances`).
Nothing here synchronises with the host.
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
_MIXTURE_BUDGET = 1 << 22  # elements of the [S, M, n] grid / [S, J, S, n] Gauss-Hermite tensors held at once
_GRID_HALF_WIDTH = 8.0  # the grid spans every component's μ ± 8σ (mass outside: 1.2e-15)


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


def working_dtype(pred: GaussianPredictive) -> torch.dtype:
    """The dtype scores of `pred` are returned in: mean's, half precision promoted to float32."""
    return pred.mean.dtype if pred.mean.dtype in (torch.float32, torch.float64) else torch.float32


def latent_variances(pred: GaussianPredictive, *, min_var: float = 1e-12) -> tuple[Tensor, Tensor]:
    """σ_f² [N] and σ_ε² [N], float64, of a predictive with latent fields (`pred.has_latent`).

    σ_f² = latent_var (clamped at 0), σ_ε² = Σ_s w_s var[s, n] / Σ_s w_s (= var[·, n], equal
    across samples by the latent contract) clamped at `min_var`. The exact predictive is
    y_n ~ N(latent_mean[n], σ_f² + σ_ε²).
    """
    weights = pred.sample_weights().double()
    noise = torch.einsum("s,sn->n", weights, pred.var.double()) / weights.sum()
    return pred.latent_var.double().clamp_min(0.0), noise.clamp_min(min_var)  # type: ignore[union-attr]


def check_mixture_options(n_nodes: int, n_grid: int) -> None:
    """ConfigError unless n_nodes >= 1 (Gauss-Hermite nodes) and n_grid >= 2 (grid points)."""
    if isinstance(n_nodes, bool) or not isinstance(n_nodes, int) or n_nodes < 1:
        raise ConfigError(f"n_nodes: expected a positive number of Gauss-Hermite nodes, got {n_nodes!r}")
    if isinstance(n_grid, bool) or not isinstance(n_grid, int) or n_grid < 2:
        raise ConfigError(f"n_grid: expected an integer >= 2 of grid points, got {n_grid!r}")


def _grid_entropy(mean: Tensor, var: Tensor, log_norm: Tensor, n_grid: int) -> tuple[Tensor, Tensor]:
    """Trapezoid estimate of H = −∫ p log p dy per candidate, and where it is trusted.

    mean, var, log_norm [S, n] (float64; log_norm = log w_s − ½ log 2πσ_s²). Grid y_m = a + m h,
    m = 0..M−1, a = min_s(μ_s − 8σ_s), h = (max_s(μ_s + 8σ_s) − a) / (M − 1), per candidate:
        H ≈ h [Σ_m −p(y_m) log p(y_m) − ½ (end terms)],   p(y) = Σ_s w_s N(y; μ_s, σ_s²)
    summed directly (no logsumexp: where p underflows to 0 so does −p log p, and w_s/√(2πσ_s²)
    cannot overflow for σ_s² >= min_var), with (y_m − μ_s)/σ_s = (a − μ_s)/σ_s + m h/σ_s built in
    one [S, M, n] tensor updated in place. Returns (H [n], h <= min_s σ_s [n] bool). O(S M) per
    candidate.
    """
    sd = var.sqrt()
    low = (mean - _GRID_HALF_WIDTH * sd).amin(0)  # [n]
    step = ((mean + _GRID_HALF_WIDTH * sd).amax(0) - low) / (n_grid - 1)  # [n]
    ticks = torch.arange(n_grid, dtype=mean.dtype, device=mean.device)  # [M]
    offset, stride = (low - mean) / sd, step / sd  # [S, n]
    z = torch.addcmul(offset[:, None, :], ticks[None, :, None], stride[:, None, :])  # [S, M, n]
    density = z.square_().mul_(-0.5).add_(log_norm[:, None, :]).exp_().sum(0)  # p(y_m) [M, n]
    f = torch.special.entr(density)  # −p log p, 0 where p underflows
    trapezoid = step * (f.sum(0) - 0.5 * (f[0] + f[-1]))
    return trapezoid, step <= sd.amin(0)


def _hermite_entropy(mean: Tensor, var: Tensor, log_norm: Tensor, weights: Tensor, n_nodes: int) -> Tensor:
    """H = −Σ_s w_s E_{N(μ_s, σ_s²)}[log p(y)], each expectation by `n_nodes`-point Gauss-Hermite
    at y_sj = μ_s + √2 σ_s t_j: mean, var, log_norm [S, n] (float64), weights [S] -> [n]. O(S² J).

    log p(y_sj) = logsumexp_s' [log_norm_s' − ½ z²] with z = (y_sj − μ_s')/σ_s' =
    (μ_s − μ_s')/σ_s' + t_j √2 σ_s/σ_s', one [S', S, J, n] tensor updated in place.
    """
    nodes, node_w = _hermite(n_nodes, mean.device)  # [J], [J]
    sd = var.sqrt()
    offset = (mean[None, :, :] - mean[:, None, :]) / sd[:, None, :]  # [S', S, n]
    scale = math.sqrt(2.0) * sd[None, :, :] / sd[:, None, :]  # [S', S, n]
    z = torch.addcmul(offset[:, :, None, :], nodes[None, None, :, None], scale[:, :, None, :])  # [S', S, J, n]
    log_mix = torch.logsumexp(z.square_().mul_(-0.5).add_(log_norm[:, None, None, :]), dim=0)  # [S, J, n]
    return -torch.einsum("s,j,sjn->n", weights, node_w, log_mix)


def mixture_entropy_float64(
    pred: GaussianPredictive, estimator: MixtureEntropy, n_nodes: int, n_grid: int, min_var: float
) -> Tensor:
    """`mixture_entropy` in float64, [N]."""
    mean, var, weights = (t.double() for t in _moments(pred, min_var))
    if estimator == MixtureEntropy.MOMENT_MATCHED:
        centre = torch.einsum("s,sn->n", weights, mean)
        total = torch.einsum("s,sn->n", weights, var + (mean - centre) ** 2)
        return gaussian_entropy(total.clamp_min(min_var))
    check_mixture_options(n_nodes, n_grid)
    S, N = mean.shape
    log_norm = torch.log(weights)[:, None] - 0.5 * torch.log(2.0 * math.pi * var)  # [S, N]
    chunk = max(1, _MIXTURE_BUDGET // max(1, S * n_grid, S * S * n_nodes))
    parts = []
    for start in range(0, N, chunk):
        mu, v, ln = (t[:, start : start + chunk] for t in (mean, var, log_norm))
        grid, fine = _grid_entropy(mu, v, ln, n_grid)
        parts.append(torch.where(fine, grid, _hermite_entropy(mu, v, ln, weights, n_nodes)))
    return torch.cat(parts) if parts else mean.new_zeros(0)


def mixture_entropy(
    pred: GaussianPredictive,
    *,
    estimator: MixtureEntropy = MixtureEntropy.QUADRATURE,
    n_nodes: int = 32,
    n_grid: int = 256,
    min_var: float = 1e-12,
) -> Tensor:
    """Entropy of the mixture p(y | x_n) = Σ_s w_s N(y; μ_sn, σ²_sn) of the samples, [N] in nats.

    The samples are always read as the mixture's components (latent fields are not consulted;
    the scores use their closed forms before coming here).

    quadrature: H = −∫ p log p dy by the trapezoid rule on a uniform grid of M = `n_grid` points
        per candidate spanning [min_s(μ_s − 8σ_s), max_s(μ_s + 8σ_s)], spacing h. For sums of
        Gaussians the trapezoid rule converges geometrically in σ_min/h (σ_min = min_s σ_s; for
        ∫ N(y; μ, σ²) the relative error is ≈ 2 exp(−2π²σ²/h²)). Measured against a 200 001-point
        reference on 600 random mixtures (S <= 9, σ spread over 1.7 decades) with h <= σ_min: error
        at most 3e-5 nats (at h ≈ σ_min), median 4e-11, at most 3e-8 where h <= 0.63 σ_min (as for
        ½N(0, 0.01) + ½N(0, 1) at M = 256: 0.7009567, exact 0.7009567). O(S M) per candidate.
        Where h > σ_min (the components spread over more than ~M narrowest widths), that candidate
        falls back (torch.where, no host sync) to per-component Gauss-Hermite with `n_nodes` nodes,
        H = −Σ_s w_s E_{N(μ_s, σ_s²)}[log p(y)], log p by logsumexp: exact for equal components and
        for well-separated ones, but off by up to ~0.1 nats where components overlap with very
        different widths (0.820 for the 0.701 nats above). Both estimates are computed for every
        candidate, O(S M + S² J) work, chunked over N. Computed in float64.
    moment-matched: ½ log(2πe Var[y]) with Var[y] = E_θ[σ²] + Var_θ[μ], the entropy of the Gaussian
        with the mixture's variance. An upper bound (the Gaussian maximises entropy for a given
        variance), so an EIG built on it is biased upwards; it is tight for equal components.

    Variances are clamped to at least `min_var` so noise-free samples (σ² = 0) stay finite (they
    then usually take the Gauss-Hermite branch). Returned in the working dtype of pred.mean.
    """
    return mixture_entropy_float64(pred, estimator, n_nodes, n_grid, min_var).to(working_dtype(pred))


def expected_gaussian_entropy(pred: GaussianPredictive, *, min_var: float = 1e-12) -> Tensor:
    """E_θ H[N(μ_θ, σ²_θ)] = Σ_s w_s ½ log(2πe σ²_sn), [N] in float64."""
    _, var, weights = _moments(pred, min_var)
    return torch.einsum("s,sn->n", weights.double(), gaussian_entropy(var.double()))
