"""Active testing (Kossen, Farquhar, Gal & Rainforth, "Active Testing: Sample-Efficient Model
Evaluation", ICML 2021): choose the labels that measure a model, and estimate its pool accuracy
without bias from far fewer of them than a random test split needs.

    expected = expected_loss(p(y | x) of the unlabelled pool)       the model as its own surrogate
    w        = proposal_weights(expected)                           (1 − ε) e / Σe + ε / N
    draw B items one at a time without replacement, p ∝ w          (`stochastic_batch`, power, β = 1)
    R̂        = R̂_LURE(losses of the B labelled items, q, N)         (`activebayes.estimates`)

The items drawn become an evaluation set kept apart from training: they move to the "eval" split
(neither candidates nor training labels; a test split that carries draw probabilities), and the
project records the draw (`evaluation_record`: keys in draw order, each q_m, the pool size N,
the model's prediction of each item when drawn). Kept apart, because an item the model trained
on no longer measures it; the loss on training items is what LURE-weighted training (`debias`)
uses, not what an evaluation may. Later rounds' models are estimated on the same set with the
same weights (their training never saw it); the estimate then speaks for the pool as it was when
the set was drawn.

Shapes: N unlabelled candidates, B the budget, C classes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from activebayes.acquisition import stochastic_batch
from activebayes.errors import ConfigError
from activebayes.estimates import UNIFORM_SHARE, proposal_weights
from activebayes.round_estimates import PoolEstimate, item_losses, pool_estimate

SETTINGS_KEY = "evaluation"  # where the project's settings keep the draw
EVAL_SPLIT = "eval"


@dataclass(frozen=True)
class EvaluationDraw:
    """B items drawn for evaluation: positions [B] into the N candidates, in draw order, and each
    one's probability q_m at its draw [B]."""

    positions: np.ndarray
    probabilities: np.ndarray
    pool: int


def draw_evaluation_set(expected: np.ndarray, budget: int, seed: int, *, uniform_share: float = UNIFORM_SHARE) -> EvaluationDraw:
    """Draw `budget` of the N items with p ∝ `proposal_weights(expected)`, sequentially without
    replacement, seeded (the same seed and losses give the same set)."""
    n = len(expected)
    if isinstance(budget, bool) or not isinstance(budget, int) or not 1 <= budget <= n:
        raise ConfigError(f"budget: expected 1 <= B <= N = {n} unlabelled items, got {budget!r}")
    weights = torch.from_numpy(proposal_weights(np.asarray(expected, dtype=np.float64), uniform_share))
    selection = stochastic_batch(weights, budget, mode="power", beta=1.0, generator=torch.Generator().manual_seed(int(seed)))
    return EvaluationDraw(selection.indices.numpy(), selection.probabilities.numpy(), n)


def evaluation_record(
    keys: Sequence[str], draw: EvaluationDraw, predictions: Sequence[Mapping[str, Any]], *, labelled: int, loss: str, uniform_share: float = UNIFORM_SHARE
) -> dict[str, Any]:
    """What the project keeps of a draw: {"pool": N, "labelled": labels of the model that drew it,
    "loss": the expected loss it was proposed by, "uniform_share": ε, "items": [{"key", "q",
    "prediction"}, ...] in draw order}."""
    items = [{"key": str(k), "q": float(q), "prediction": dict(p)} for k, q, p in zip(keys, draw.probabilities.tolist(), predictions)]
    return {"pool": int(draw.pool), "labelled": int(labelled), "loss": loss, "uniform_share": float(uniform_share), "items": items}


def evaluation_estimate(
    record: Mapping[str, Any], labels: Mapping[str, str], task: str, classes: Sequence[str] | None,
    predictions: Mapping[str, Mapping[str, Any]] | None = None,
) -> PoolEstimate:  # fmt: skip
    """The estimate from the answered prefix of the evaluation draw (`labels`: key -> label), with
    the predictions recorded at the draw, or `predictions` (key -> prediction) of a later model."""
    answered = []
    for item in record.get("items", []):
        value = labels.get(item["key"])
        prediction = item["prediction"] if predictions is None else predictions.get(item["key"])
        if value is None or not prediction:
            break
        answered.append((item, value, prediction))
    if not answered:
        total = len(record.get("items", []))
        return PoolEstimate(reason=f"waiting for the labels of the {total} evaluation items", pool=int(record.get("pool", 0)))
    losses = item_losses([p for _, _, p in answered], [v for _, v, _ in answered], task, classes)
    return pool_estimate(None, losses, [item["q"] for item, _, _ in answered], int(record["pool"]), len(answered))
