"""Batch selectors: turn scores [N] into the K candidates to ask about.

Every selector returns a `BatchSelection` (indices [K] long, scores [K]), in the order chosen.

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
    """

    indices: Tensor
    scores: Tensor

    def __len__(self) -> int:
        return self.indices.shape[0]


class StochasticMode(StrEnum):
    """Sampling distributions of Kirsch et al. (2023), "Stochastic Batch Acquisition"."""

    POWER = "power"  # p_i ∝ s_i^β
    SOFTMAX = "softmax"  # p_i ∝ exp(β s_i)
    SOFTRANK = "softrank"  # p_i ∝ r_i^(−β), r_i the descending rank (1 = best)


def check_scores(scores: Tensor) -> None:
    if not isinstance(scores, Tensor) or scores.dim() != 1:
        got = f"shape {tuple(scores.shape)}" if isinstance(scores, Tensor) else type(scores).__name__
        raise ShapeError(f"scores: expected a tensor [N] of per-candidate scores, got {got}")


def check_k(k: int, n: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= n:
        raise ShapeError(f"k: expected an integer batch size with 0 <= k <= N={n}, got {k!r}")


def top_k(scores: Tensor, k: int) -> BatchSelection:
    """The k largest scores, best first: scores [N] -> BatchSelection of K = k."""
    check_scores(scores)
    check_k(k, scores.shape[0])
    values, indices = torch.topk(scores, k, sorted=True)
    return BatchSelection(indices, values)


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
    a uniformly random batch; β -> ∞ gives `top_k`. The noise is drawn on `generator`'s device.
    """
    check_scores(scores)
    check_k(k, scores.shape[0])
    mode = parse_option(StochasticMode, mode, "mode")
    if not beta >= 0.0:
        raise ConfigError(f"beta: expected a coldness >= 0, got {beta!r}")
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
    return BatchSelection(indices, scores[indices])


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
