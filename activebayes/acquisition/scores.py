"""Per-candidate acquisition scores: pure functions f(pred) -> Tensor[N], larger = ask first.

Every function accepts a `Predictive` (probs [S, N, C], weights [S]), a bare probs tensor
[S, N, C] (equal weights) and, where it means something, a `GaussianPredictive` (mean, var [S, N]).
A GaussianPredictive with latent fields (latent_mean, latent_var [N]: an exactly Gaussian
predictive N(μ_f, σ_f² + σ_ε²), as `GaussianProcess.predict` returns) is scored in closed form.
Sample weights w_s are honoured everywhere (p̄ = Σ_s w_s p_s). Informations are in nats.
Entropies are computed in log space with 0 log 0 = 0, so probabilities of exactly 0 or 1 give
finite scores. The functions keep the input's dtype and device and never synchronise with the
host, so a scorer can stream a pool through them on a GPU.

>>> import torch
>>> probs = torch.tensor([[[1.0, 0.0]], [[0.0, 1.0]]])   # two samples that disagree for sure
>>> bald(probs)                                          # log 2: the label settles θ
tensor([0.6931])
"""

from __future__ import annotations

from enum import StrEnum

import torch
from torch import Tensor

from activebayes.acquisition import _entropy as E
from activebayes.acquisition._entropy import MixtureEntropy
from activebayes.errors import ShapeError
from activebayes.predictive import GaussianPredictive, Predictive, as_predictive

AnyPredictive = Predictive | GaussianPredictive | Tensor


class VariancePart(StrEnum):
    """Which term of the law of total variance `variance` returns."""

    TOTAL = "total"
    EPISTEMIC = "epistemic"
    ALEATORIC = "aleatoric"


def _reference(pred: Predictive | GaussianPredictive) -> Tensor:
    return pred.probs if isinstance(pred, Predictive) else pred.mean


def random_scores(pred: AnyPredictive, generator: torch.Generator | None = None) -> Tensor:
    """Uniform scores u_n ~ U[0, 1), [N]: top-k of them is a uniformly random subset.

    Drawn on `generator`'s device and moved to the predictive's; None uses torch's global
    generator.
    """
    pred = as_predictive(pred)
    ref = _reference(pred)
    dtype = ref.dtype if ref.dtype in (torch.float32, torch.float64) else torch.float32
    u = torch.rand(pred.n_candidates, generator=generator, device=E.draw_device(generator, ref), dtype=dtype)
    return u.to(ref.device)


def variance(pred: AnyPredictive, part: VariancePart | str = VariancePart.TOTAL) -> Tensor:
    """Law of total variance, Var[y] = E_θ Var[y | θ] + Var_θ E[y | θ], [N].

    Classes: y is the one-hot label, and the variances are summed over the C classes:
        aleatoric = Σ_c Σ_s w_s p_sc (1 − p_sc),   epistemic = Σ_c Σ_s w_s (p_sc − p̄_c)²,
        total = Σ_c p̄_c (1 − p̄_c) = 1 − Σ_c p̄_c²  (= aleatoric + epistemic).
    Regression (GaussianPredictive): aleatoric = Σ_s w_s σ²_s, epistemic = Σ_s w_s (μ_s − μ̄)²,
    total = their sum; with latent fields, epistemic = latent_var = σ_f² exactly (not the nodes'
    spread) and aleatoric = σ_ε².
    """
    part = E.parse_option(VariancePart, part, "part")
    pred = as_predictive(pred)
    if isinstance(pred, GaussianPredictive):
        aleatoric = torch.einsum("s,sn->n", pred.sample_weights(), pred.var)
        epistemic = pred.moments(observation_noise=False)[1].to(aleatoric.dtype)
        return {"total": aleatoric + epistemic, "aleatoric": aleatoric, "epistemic": epistemic}[part]
    probs, w = E.working_probs(pred), pred.sample_weights()
    mean = torch.einsum("s,snc->nc", w.to(probs.dtype), probs)
    if part == VariancePart.TOTAL:
        return (mean * (1.0 - mean)).sum(-1)
    if part == VariancePart.ALEATORIC:
        return torch.einsum("s,sn->n", w.to(probs.dtype), (probs * (1.0 - probs)).sum(-1))
    return torch.einsum("s,sn->n", w.to(probs.dtype), ((probs - mean) ** 2).sum(-1))


def mean_std(pred: AnyPredictive) -> Tensor:
    """Mean STD (Gal, Islam & Ghahramani 2017): (1/C) Σ_c sqrt(E_θ[p_c²] − E_θ[p_c]²), [N].

    The variance inside is computed as Σ_s w_s (p_sc − p̄_c)², which is never negative.
    """
    pred = E.categorical(pred, "mean_std")
    probs = E.working_probs(pred)
    w = pred.sample_weights().to(probs.dtype)
    mean = torch.einsum("s,snc->nc", w, probs)
    var = torch.einsum("s,snc->nc", w, (probs - mean) ** 2)
    return var.clamp_min(0.0).sqrt().mean(-1)


def variation_ratio(pred: AnyPredictive) -> Tensor:
    """1 − (weighted share of the modal vote), the votes being each sample's argmax_c p_sc, [N].

    Five equally weighted samples voting 1, 2, 1, 1, 4 give 1 − 3/5 = 0.4. An argmax tie within a
    sample goes to the lowest class index.
    """
    pred = E.categorical(pred, "variation_ratio")
    probs = E.working_probs(pred)
    S, N, C = probs.shape
    votes = probs.argmax(-1).T  # [N, S]
    w = pred.sample_weights().to(probs.dtype)
    shares = torch.zeros(N, C, dtype=probs.dtype, device=probs.device)
    shares.scatter_add_(1, votes, w[None, :].expand(N, S))  # [N, C]
    return 1.0 - shares.max(-1).values


def entropy(pred: AnyPredictive) -> Tensor:
    """Predictive entropy H[p(y | x)] = −Σ_c p̄_c log p̄_c, [N] in nats.

    For a GaussianPredictive: the entropy of the mixture Σ_s w_s N(μ_s, σ²_s) by the default
    quadrature of `eig`; with latent fields exactly ½ log(2πe (σ_f² + σ_ε²)) (float64 inside).
    """
    pred = as_predictive(pred)
    if isinstance(pred, GaussianPredictive):
        if pred.has_latent:
            latent, noise = E.latent_variances(pred)
            return E.gaussian_entropy(latent + noise).to(E.working_dtype(pred))
        return E.mixture_entropy(pred)
    probs = E.working_probs(pred)
    return E.entropy(torch.einsum("s,snc->nc", pred.sample_weights().to(probs.dtype), probs))


def bald(pred: AnyPredictive) -> Tensor:
    """BALD (Houlsby et al. 2011): I[y; θ | x] = H[p̄] − Σ_s w_s H[p_s], [N] in nats.

    Clamped at 0 against float rounding, so 0 <= bald <= entropy. A GaussianPredictive goes to
    `eig` with its default estimator.
    """
    pred = as_predictive(pred)
    if isinstance(pred, GaussianPredictive):
        return eig(pred)
    probs, w = E.working_probs(pred), pred.sample_weights()
    mean = torch.einsum("s,snc->nc", w.to(probs.dtype), probs)
    return (E.entropy(mean) - E.expected_entropy(probs, w)).clamp_min(0.0)


def margin(pred: AnyPredictive) -> Tensor:
    """1 − (p̄_(1) − p̄_(2)): one minus the gap between the two largest mean probabilities, [N].

    The smaller the margin the larger the score (in [0, 1]); the ranking is that of −margin.
    Needs C >= 2.
    """
    pred = E.categorical(pred, "margin")
    if pred.n_classes < 2:
        raise ShapeError(f"margin: expected at least C=2 classes in probs [S, N, C], got C={pred.n_classes}")
    probs = E.working_probs(pred)
    top = torch.einsum("s,snc->nc", pred.sample_weights().to(probs.dtype), probs).topk(2, dim=-1).values
    return 1.0 - (top[:, 0] - top[:, 1])


def least_confidence(pred: AnyPredictive) -> Tensor:
    """1 − max_c p̄_c, [N]."""
    pred = E.categorical(pred, "least_confidence")
    probs = E.working_probs(pred)
    return 1.0 - torch.einsum("s,snc->nc", pred.sample_weights().to(probs.dtype), probs).max(-1).values


def eig(
    pred: AnyPredictive,
    *,
    estimator: MixtureEntropy | str = MixtureEntropy.QUADRATURE,
    n_nodes: int = 32,
    n_grid: int = 256,
    min_var: float = 1e-12,
) -> Tensor:
    """Expected information gain I[y; θ | x] = H[p(y | x)] − E_θ H[p(y | x, θ)], [N] in nats.

    Categorical: identical to `bald`. Gaussian with latent fields (f ~ N(μ_f, σ_f²),
    y | f ~ N(f, σ_ε²)): exactly I[y; f] = ½ log(1 + σ_f²/σ_ε²), computed in float64 and returned
    in the input's dtype; `estimator`, `n_nodes` and `n_grid` are then unused (σ_ε² is still
    clamped at `min_var`). Other Gaussian mixtures (y | θ_s ~ N(μ_s, σ²_s)):
        EIG = H[Σ_s w_s N(μ_s, σ²_s)] − Σ_s w_s ½ log(2πe σ²_s),
    the mixture entropy by `estimator` (see `_entropy.mixture_entropy`): "quadrature" (trapezoid
    rule on an `n_grid`-point grid per candidate, within ~3e-5 nats, falling back per
    candidate to Gauss-Hermite with `n_nodes` nodes per component where the components spread over
    more than ~n_grid of the narrowest widths) or "moment-matched" (½ log(2πe Var[y]), an upper
    bound, so the EIG is biased upwards; closed form ½ log(1 + Var_θ[μ]/σ²) for equal σ²).
    Variances are clamped at `min_var`. The result is clamped at 0.
    """
    estimator = E.parse_option(MixtureEntropy, estimator, "estimator")
    pred = as_predictive(pred)
    if isinstance(pred, Predictive):
        return bald(pred)
    if pred.has_latent:
        latent, noise = E.latent_variances(pred, min_var=min_var)
        return (0.5 * torch.log1p(latent / noise)).to(E.working_dtype(pred))
    mixture = E.mixture_entropy_float64(pred, estimator, n_nodes, n_grid, min_var)
    information = mixture - E.expected_gaussian_entropy(pred, min_var=min_var)
    return information.clamp_min(0.0).to(E.working_dtype(pred))
