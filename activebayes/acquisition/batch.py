"""Batch selectors: turn scores [N] into the K candidates to ask about.

Every selector returns a `BatchSelection` (indices [K] long, scores [K]), in the order chosen;
a stochastic selector also gives each chosen item's probability at its draw (`probabilities`).

>>> import torch
>>> top_k(torch.tensor([0.1, 0.7, 0.3]), 2).indices
tensor([1, 2])
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import torch
from torch import Tensor

from activebayes.acquisition._entropy import draw_device, parse_option
from activebayes.acquisition.scores import bald
from activebayes.errors import ConfigError, ShapeError
from activebayes.predictive import GaussianPredictive, Predictive


@dataclass(frozen=True)
class BatchSelection:
    """The candidates a selector chose.

    indices: [K] long, positions in the scored pool, in the order they were chosen.
    scores: [K], the score each had when chosen: the acquisition score for `top_k` and
        `stochastic_batch` (unperturbed), the marginal gain I[y_i; θ | y_<i] for `batch_bald`.
    probabilities: [K] float64, the proposal probability q_m(i_m) with which the m-th item was
        drawn among the candidates still left at its draw (`draw_probabilities`), for a
        stochastic selector (`stochastic_batch`, a uniformly random batch); None for a
        deterministic one (`top_k`, `batch_bald`). The unbiased estimates of
        `activebayes.estimates` weight each labelled item by it.
    """

    indices: Tensor
    scores: Tensor
    probabilities: Tensor | None = None

    def __len__(self) -> int:
        return self.indices.shape[0]


class StochasticMode(StrEnum):
    """Sampling distributions of Kirsch et al. (2023), "Stochastic Batch Acquisition"."""

    POWER = "power"  # p_i ∝ s_i^β
    SOFTMAX = "softmax"  # p_i ∝ exp(β s_i)
    SOFTRANK = "softrank"  # p_i ∝ r_i^(−β), r_i the descending rank (1 = best)


def check_scores(scores: Tensor) -> None:
    """scores: a tensor [N] without NaN (a NaN would be ranked first by `torch.topk`)."""
    if not isinstance(scores, Tensor) or scores.dim() != 1:
        got = f"shape {tuple(scores.shape)}" if isinstance(scores, Tensor) else type(scores).__name__
        raise ShapeError(f"scores: expected a tensor [N] of per-candidate scores, got {got}")
    if scores.is_floating_point() and bool(torch.isnan(scores).any()):
        first = int(torch.isnan(scores).nonzero()[0, 0])
        raise ShapeError(f"scores: {int(torch.isnan(scores).sum())} of {scores.shape[0]} are NaN (the first at position {first}); "
                         "an acquisition score must be a number for every candidate")  # fmt: skip


def check_k(k: int, n: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= n:
        raise ShapeError(f"k: expected an integer batch size with 0 <= k <= N={n}, got {k!r}")


def top_k(scores: Tensor, k: int) -> BatchSelection:
    """The k largest scores, best first, ties by position (the lower index first, as
    `activebayes.scoring.score_pool` breaks them across batches): scores [N] -> BatchSelection
    of K = k. Variation ratios and other coarse scores tie often, and `torch.topk` orders ties
    as its kernel happens to, which differs with N and the device."""
    check_scores(scores)
    check_k(k, scores.shape[0])
    indices = torch.sort(scores, descending=True, stable=True).indices[:k]
    return BatchSelection(indices, scores[indices])


def draw_probabilities(log_weights: Tensor, chosen: Tensor) -> Tensor:
    """q_m(i_m) of K items drawn one by one without replacement with p_i ∝ w_i = exp(log_weights_i):

        q_m(i_m) = w_{i_m} / Σ_{j not among i_1 .. i_{m−1}} w_j          (m = 1 .. K)

    log_weights: [N] (any scale: −inf for an item that cannot be drawn). chosen: [K] long, in
    the order drawn. Returns [K] float64 (on log_weights' device). The mass still left at draw m
    is summed as (mass of the items never chosen) + (mass of i_m .. i_K), sums of positive terms
    only, so a batch that takes most of the mass loses no precision to a subtraction; the sums
    are log-sum-exps, so weights that differ by more than float64's range (exp(−1,500) beside 1,
    as a large β gives) still give each draw its probability instead of 0/0.

    >>> draw_probabilities(torch.log(torch.tensor([1.0, 2.0, 1.0])), torch.tensor([1, 0]))
    tensor([0.5000, 0.5000], dtype=torch.float64)
    """
    lw = log_weights.double()
    chosen_lw = lw[chosen]  # [K]
    never = torch.ones_like(lw, dtype=torch.bool)
    never[chosen] = False
    unchosen = torch.logsumexp(lw[never], 0) if bool(never.any()) else lw.new_tensor(-torch.inf)
    later = torch.flip(torch.logcumsumexp(torch.flip(chosen_lw, [0]), 0), [0])  # [K]: log mass of i_m .. i_K
    return torch.exp(chosen_lw - torch.logaddexp(unchosen, later))  # in log space: no 0/0 at a large β


def uniform_draw_probabilities(n: int, k: int) -> Tensor:
    """q_m = 1 / (n − m + 1), m = 1 .. k: each draw of a uniformly random batch of k among n,
    as [k] float64."""
    return 1.0 / (n - torch.arange(k, dtype=torch.float64))


def _gumbel(n: int, like: Tensor, generator: torch.Generator | None) -> Tensor:
    u = torch.rand(n, generator=generator, device=draw_device(generator, like), dtype=like.dtype).to(like.device)
    tiny = torch.finfo(like.dtype).tiny
    return -torch.log(-torch.log(u.clamp_min(tiny)))


def stochastic_batch(
    scores: Tensor,
    k: int,
    *,
    mode: StochasticMode | str = StochasticMode.POWER,
    beta: float = 1.0,
    generator: torch.Generator | None = None,
) -> BatchSelection:
    """Stochastic batch acquisition (Kirsch, Farquhar, Atighehchian, Jesson, Branchaud-Charron
    & Gal 2023): draw k candidates without replacement with probabilities

        power: p_i ∝ s_i^β,   softmax: p_i ∝ exp(β s_i),   softrank: p_i ∝ r_i^(−β),

    r_i the rank of s_i in descending order (1 = best, ties by position). Sampling uses the
    Gumbel-top-k trick: the indices of the k largest log p_i + g_i, g_i ~ Gumbel(0, 1) i.i.d.,
    i.e. β·log s_i + g_i, β·s_i + g_i and −β·log r_i + g_i (the paper's Gumbel noise of scale
    1/β, rescaled). "power" needs s_i >= 0: scores are clamped at the dtype's smallest positive
    number (BALD can come out at −1e−7 from rounding), so zero scores are drawn last. β = 0 gives
    a uniformly random batch; β -> ∞ gives `top_k`, and β = inf is that limit (ties by position,
    each draw's probability 1, no noise drawn). The noise is drawn on `generator`'s device.

    The k largest perturbed logits, in descending order, are distributed as k sequential draws
    without replacement with p_i ∝ exp(logits_i) (the Gumbel-top-k trick), so the selection's
    `probabilities` are those draws' q_m (`draw_probabilities`).
    """
    check_scores(scores)
    check_k(k, scores.shape[0])
    mode = parse_option(StochasticMode, mode, "mode")
    if not beta >= 0.0:
        raise ConfigError(f"beta: expected a coldness >= 0, got {beta!r}")
    if beta == float("inf"):  # the limit: every logit ±inf, so the draw is top_k's choice with certainty
        chosen = top_k(scores, k)
        return BatchSelection(chosen.indices, chosen.scores, torch.ones(k, dtype=torch.float64, device=scores.device))
    work = scores if scores.dtype in (torch.float32, torch.float64) else scores.float()
    if mode == StochasticMode.POWER:
        logits = beta * torch.log(work.clamp_min(torch.finfo(work.dtype).tiny))
    elif mode == StochasticMode.SOFTMAX:
        logits = beta * work
    else:
        order = torch.argsort(work, descending=True, stable=True)
        ranks = torch.empty_like(work)
        ranks[order] = torch.arange(1, work.shape[0] + 1, dtype=work.dtype, device=work.device)
        logits = -beta * torch.log(ranks)
    indices = torch.topk(logits + _gumbel(work.shape[0], work, generator), k, sorted=True).indices
    return BatchSelection(indices, scores[indices], draw_probabilities(logits, indices))


def bald_prefilter(pred_or_scores: Predictive | Tensor, size: int) -> Tensor:
    """Indices [min(size, N)] of the highest-BALD candidates, best first.

    The pre-filter pattern for `batch_bald` on a large pool (its cost grows with the pool):

        keep = bald_prefilter(bald_scores_of_the_pool, 2000)     # stream the pool, keep the best
        chosen = batch_bald(pred.candidates(keep), k).indices    # joint acquisition on those
        queries = keep[chosen]                                   # back to pool positions

    Accepts BALD scores [N] (as a scorer streaming the pool produces them) or a Predictive /
    probs tensor [S, N, C], whose BALD it computes.
    """
    if isinstance(pred_or_scores, GaussianPredictive) or not (
        isinstance(pred_or_scores, Tensor) and pred_or_scores.dim() == 1
    ):
        scores = bald(pred_or_scores)
    else:
        scores = pred_or_scores
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise ShapeError(f"size: expected a non-negative number of candidates to keep, got {size!r}")
    return top_k(scores, min(size, scores.shape[0])).indices
