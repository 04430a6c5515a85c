"""CLI names of the acquisition functions, each bound to its score and its batch selector.

How a scorer uses an entry (`acq = resolve_acquisition(name)`):

* `acq.needs_joint` False: stream the pool, `scores = cat([acq.score(pred_b) for each batch])`,
  then `acq.select(scores, k, generator)`.
* `acq.needs_joint` True (batch-bald): stream the pool with `acq.prefilter_score` (BALD), keep
  `keep = bald_prefilter(scores, 2000)`, predict those candidates once more as one Predictive, and
  `keep[acq.select(pred_keep, k, generator).indices]` are the queries.
* `acq.needs_model` True (nipv, Gaussian-process regression only): stream the pool with
  `acq.prefilter_score` (the predictive variance), keep the best 2000 the same way, and
  `activebayes.acquisition.nipv.nipv_select(posterior, x_keep, reference, k)` chooses among them
  with the fitted model itself (integrated variance over `reference`, a seeded subset of the pool).
* `acq.needs_targets` True (epig, power-epig): `acq.score(pred, target_pred)` takes the
  candidates' predictive and that of M target inputs x* under the SAME posterior samples; a pool
  is streamed through `activebayes.acquisition.epig.TargetPosterior(posterior, targets)` (each
  batch predicted together with the targets in one call) and scored with `paired_epig`, then
  `acq.select(scores, k, generator)`.

`acq.tasks` names the project tasks an entry serves: the regression ones are random, variance,
eig, bald, epig, power-epig (closed forms from a GaussianPredictive's latent fields, or the joint
Gaussian for epig) and nipv; nipv is regression only.

`select` always returns a `BatchSelection` (indices [K] long, scores [K]). It takes the scores
[N] from `score` or, as a convenience, a Predictive / probs tensor [S, N, C] that it scores
itself; batch-bald needs the Predictive. "random" ignores the scores and draws a uniformly random
subset with the generator; its `score` is 0 for every candidate (a random number is no score to
record). Stochastic entries use β = 1. Random and the stochastic entries give each chosen item's
probability at its draw (`BatchSelection.probabilities`); the greedy ones give None.

>>> resolve_acquisition("power-bald").select(torch.tensor([0.0, 1.0, 0.0]), 1).indices
tensor([1])
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import torch
from torch import Tensor

from activebayes.acquisition import scores as S
from activebayes.acquisition._entropy import draw_device
from activebayes.acquisition.batch import (
    BatchSelection,
    check_k,
    check_scores,
    stochastic_batch,
    top_k,
    uniform_draw_probabilities,
)
from activebayes.acquisition.batch_bald import batch_bald
from activebayes.acquisition.epig import epig
from activebayes.errors import ConfigError, ShapeError, unknown_name
from activebayes.predictive import GaussianPredictive, Predictive

Score = Callable[[Predictive | GaussianPredictive | Tensor], Tensor]
Selector = Callable[[Tensor, int, "torch.Generator | None"], BatchSelection]


def _zeros(pred: Predictive | GaussianPredictive | Tensor) -> Tensor:
    """0 for every candidate, [N] (the score recorded for random acquisition)."""
    return torch.zeros_like(S.random_scores(pred))


def _uniform(scores: Tensor, k: int, generator: torch.Generator | None) -> BatchSelection:
    check_scores(scores)
    check_k(k, scores.shape[0])
    perm = torch.randperm(scores.shape[0], generator=generator, device=draw_device(generator, scores))[:k]
    perm = perm.to(scores.device)
    return BatchSelection(perm, scores[perm], uniform_draw_probabilities(scores.shape[0], k))


def greedy(scores: Tensor, k: int, generator: torch.Generator | None = None) -> BatchSelection:
    """The selector of plain score functions: the k best scores (`generator` is unused)."""
    return top_k(scores, k)


def _stochastic(mode: str) -> Selector:
    def select(scores: Tensor, k: int, generator: torch.Generator | None) -> BatchSelection:
        return stochastic_batch(scores, k, mode=mode, generator=generator)

    return select


@dataclass(frozen=True)
class Acquisition:
    """One registered acquisition.

    name: the CLI name. score: per-candidate score f(pred) -> [N] (None for batch-bald, which
    needs the joint). needs_joint: select wants the Predictive of the (pre-filtered) candidates.
    prefilter_score: for needs_joint entries, the score to pre-filter a large pool with.
    needs_model: selects with the fitted model (nipv). needs_targets: `score(pred, target_pred)`
    needs the predictive of target inputs too (epig); `select` then takes scores [N] only.
    tasks: the project tasks served.
    """

    name: str
    score: Score | None
    selector: Callable[..., BatchSelection]
    needs_joint: bool = False
    prefilter_score: Score | None = None
    needs_model: bool = False
    needs_targets: bool = False
    tasks: frozenset[str] = frozenset({"classification"})

    def select(
        self, pred_or_scores: Predictive | GaussianPredictive | Tensor, k: int, generator: torch.Generator | None = None
    ) -> BatchSelection:
        """The k candidates to ask about, as a BatchSelection (see the module docstring)."""
        if self.needs_model:
            raise ConfigError(f"{self.name}: selects with the fitted model; use activebayes.acquisition.nipv.nipv_select")
        if self.needs_joint:
            if isinstance(pred_or_scores, Tensor) and pred_or_scores.dim() != 3:
                raise ShapeError(
                    f"{self.name}: expected a Predictive or probs [S, N, C] of the candidates, "
                    f"got a tensor of shape {tuple(pred_or_scores.shape)} (scores are not enough)"
                )
            return self.selector(pred_or_scores, k, generator=generator)
        if isinstance(pred_or_scores, Tensor) and pred_or_scores.dim() == 1:
            scores = pred_or_scores
        elif self.needs_targets:
            raise ShapeError(
                f"{self.name}: expected scores [N] (score(pred, target_pred) first: the scores need the targets' "
                f"predictive), got a {type(pred_or_scores).__name__}"
            )
        else:
            scores = self.score(pred_or_scores)
        return self.selector(scores, k, generator)


_BOTH = frozenset({"classification", "regression"})


def _model_only(*_: object, **__: object) -> BatchSelection:
    raise ConfigError("nipv: selects with the fitted model; use activebayes.acquisition.nipv.nipv_select")


def _loop_only(*_: object, **__: object) -> BatchSelection:
    raise ConfigError("auto: the loop picks an arm per round (activebayes.acquisition.auto); select with that arm's entry")


ACQUISITIONS: dict[str, Acquisition] = {
    acq.name: acq
    for acq in [
        Acquisition("random", _zeros, _uniform, tasks=_BOTH),
        Acquisition("variance", partial(S.variance, part="total"), greedy, tasks=_BOTH),
        Acquisition("mean-std", S.mean_std, greedy),
        Acquisition("variation-ratio", S.variation_ratio, greedy),
        Acquisition("entropy", S.entropy, greedy),
        Acquisition("bald", S.bald, greedy, tasks=_BOTH),
        Acquisition("margin", S.margin, greedy),
        Acquisition("least-confidence", S.least_confidence, greedy),
        Acquisition("eig", S.eig, greedy, tasks=_BOTH),
        Acquisition("nipv", None, _model_only, needs_model=True, prefilter_score=partial(S.variance, part="total"),
                    tasks=frozenset({"regression"})),
        Acquisition("batch-bald", None, batch_bald, needs_joint=True, prefilter_score=S.bald),
        Acquisition("power-bald", S.bald, _stochastic("power")),
        Acquisition("softmax-bald", S.bald, _stochastic("softmax")),
        Acquisition("softrank-bald", S.bald, _stochastic("softrank")),
        Acquisition("power-entropy", S.entropy, _stochastic("power")),
        Acquisition("power-margin", S.margin, _stochastic("power")),
        Acquisition("auto", None, _loop_only, tasks=_BOTH),
        Acquisition("epig", epig, greedy, needs_targets=True, tasks=_BOTH),
        Acquisition("power-epig", epig, _stochastic("power"), needs_targets=True, tasks=_BOTH),
    ]
}


def resolve_acquisition(name: str) -> Acquisition:
    """The entry registered under a CLI name ("bald", "batch-bald", ...; "_" reads as "-")."""
    key = name.strip().lower().replace("_", "-") if isinstance(name, str) else name
    try:
        return ACQUISITIONS[key]
    except (KeyError, TypeError):
        raise unknown_name("acquisition", name, ACQUISITIONS) from None
