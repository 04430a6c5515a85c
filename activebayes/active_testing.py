"""Active testing (Kossen, Farquhar, Gal & Rainforth, "Active Testing: Sample-Efficient Model
Evaluation", ICML 2021): choose the labels that measure a model, and estimate its pool accuracy
without bias from far fewer of them than a random test split needs.

    expected = expected_loss(p(y | x) of the unlabelled pool)       the model as its own surrogate
    w        = proposal_weights(expected)                           (1 − ε) e / Σe + ε / N
    draw B items one at a time without replacement, p ∝ w          (`stochastic_batch`, power, β = 1)
    R̂        = R̂_LURE(losses of the B labelled items, q, N)         (`activebayes.estimates`)

and its 95 % interval is `lure_estimate`'s (Student's t on B − 1 degrees of freedom for the
normal quantile; a regression's MSE, Satterthwaite's scaled χ² on at most B degrees of freedom).

The items drawn become an evaluation set kept apart from training: they move to the "eval" split
(neither candidates nor training labels; a test split that carries draw probabilities), and the
project records the draw (`evaluation_record`: keys in draw order, each q_m, the pool size N,
a fingerprint of the pool's items, the model's prediction of each item when drawn).

The draw can be extended (`continue_draw`, `extended_record`): Kossen et al. draw one item at a
time, each q_m over the N − m + 1 items not drawn yet, and the proposal may change between draws.
So B' more draws from the N − B items left, each with its q over those left at its turn, make the
B + B' items one sequential draw of the same pool, and R̂_LURE over all of them (N, M = B + B')
stays unbiased. That holds only while the pool is the one the first draw saw: an item labelled
for training since (or one whose label was withdrawn) changes who could be drawn, so an extension
checks the pool's fingerprint first (`same_population`). The model the estimate is about must be
one model: an extension refits it on the labels (unchanged: the pool is) and records its
predictions of every item of the set, the earlier ones included. Kept apart, because an item the model trained
on no longer measures it; the loss on training items is what LURE-weighted training (`debias`)
uses, not what an evaluation may. Later rounds' models are estimated on the same set with the
same weights (their training never saw it); the estimate then speaks for the pool as it was when
the set was drawn.

Shapes: N unlabelled candidates, B the budget, C classes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

import numpy as np

from activebayes.errors import ConfigError
from activebayes.estimates import UNIFORM_SHARE, proposal_weights
from activebayes.round_estimates import PoolEstimate, item_losses, pool_estimate
from activebayes.stopping import fingerprint

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
    import torch  # here, not at the top: `status` reads an evaluation set's estimate without loading torch

    from activebayes.acquisition import stochastic_batch

    weights = torch.from_numpy(proposal_weights(np.asarray(expected, dtype=np.float64), uniform_share))
    selection = stochastic_batch(weights, budget, mode="power", beta=1.0, generator=torch.Generator().manual_seed(int(seed)))
    return EvaluationDraw(selection.indices.numpy(), selection.probabilities.numpy(), n)


def population_tag(item_ids: Sequence[int] | np.ndarray) -> str:
    """The fingerprint (`activebayes.stopping.fingerprint`) of a draw's population: the item ids
    of the N candidates it drew from, sorted (the order the store lists them in does not matter)."""
    return fingerprint(np.sort(np.asarray(item_ids, dtype=np.int64)))


def evaluation_record(
    keys: Sequence[str], draw: EvaluationDraw, predictions: Sequence[Mapping[str, Any]], *, labelled: int, loss: str,
    population: str | None = None, uniform_share: float = UNIFORM_SHARE,
) -> dict[str, Any]:  # fmt: skip
    """What the project keeps of a draw: {"pool": N, "population": `population_tag` of the N
    candidates, "labelled": labels of the model that drew it, "loss": the expected loss it was
    proposed by, "uniform_share": ε, "parts": [B] (the size of each draw, for extensions),
    "items": [{"key", "q", "prediction"}, ...] in draw order}."""
    items = [{"key": str(k), "q": float(q), "prediction": dict(p)} for k, q, p in zip(keys, draw.probabilities.tolist(), predictions)]
    record = {"pool": int(draw.pool), "labelled": int(labelled), "loss": loss, "uniform_share": float(uniform_share),
              "parts": [len(items)], "items": items}  # fmt: skip
    return record | ({"population": population} if population is not None else {})


def same_population(record: Mapping[str, Any], candidate_ids: Sequence[int] | np.ndarray, drawn_ids: Sequence[int] | np.ndarray) -> str | None:
    """None when the unlabelled candidates now and the items drawn so far are exactly the N items
    the draw of `record` saw; else why the draw cannot go on."""
    if "population" not in record:
        return "the draw recorded no fingerprint of its pool (drawn by an earlier version)"
    n_now = len(candidate_ids) + len(drawn_ids)
    if population_tag(np.concatenate([np.asarray(candidate_ids, dtype=np.int64), np.asarray(drawn_ids, dtype=np.int64)])) != record["population"]:
        return (f"the pool has changed since the draw ({record['pool']} items then, {n_now} now with the drawn ones: "
                "items were labelled for training, their labels withdrawn, or rows appended)")  # fmt: skip
    return None


def continue_draw(record: Mapping[str, Any], expected: np.ndarray, budget: int, seed: int) -> EvaluationDraw:
    """B' more draws of the sequential draw of `record` (module docstring): `expected` [N − B]
    holds the expected losses of the items not drawn yet; the positions index them and each q is
    that draw's probability among the items left at its turn, as `draw_evaluation_set` gives.
    The pool stays N (the estimate is about the same population)."""
    pool, drawn = int(record["pool"]), len(record.get("items", []))
    if len(expected) != pool - drawn:
        raise ConfigError(f"expected: the draw has {pool - drawn} items left of its pool of {pool}, got {len(expected)} expected losses")
    draw = draw_evaluation_set(expected, budget, seed, uniform_share=float(record.get("uniform_share", UNIFORM_SHARE)))
    return EvaluationDraw(draw.positions, draw.probabilities, pool)


def extended_record(
    record: Mapping[str, Any], keys: Sequence[str], draw: EvaluationDraw, predictions: Mapping[str, Mapping[str, Any]], *, labelled: int
) -> dict[str, Any]:
    """The record of the draw of `record` followed by `draw` (of items `keys`): the items in draw
    order, each with the prediction of the one model refitted for the extension (`predictions`:
    key -> prediction, every item of the set), "labelled" that model's labels, "parts" [B, B', ...]."""
    if draw.pool != int(record["pool"]):
        raise ConfigError(f"draw: drew from a pool of {draw.pool}, the evaluation set's is {record['pool']}")
    earlier = [(item["key"], item["q"]) for item in record.get("items", [])]
    items = [{"key": str(k), "q": float(q), "prediction": dict(predictions.get(str(k)) or {})}
             for k, q in [*earlier, *zip(keys, draw.probabilities.tolist())]]  # fmt: skip
    parts = [*record.get("parts", [len(earlier)]), len(keys)]
    return {**record, "labelled": int(labelled), "parts": parts, "items": items}


def evaluation_estimate(
    record: Mapping[str, Any], labels: Mapping[str, str], task: str, classes: Sequence[str] | None,
    predictions: Mapping[str, Mapping[str, Any]] | None = None,
) -> PoolEstimate:  # fmt: skip
    """The estimate from the answered prefix of the evaluation draw (`labels`: key -> label), with
    the predictions recorded at the draw, or `predictions` (key -> prediction) of a later model;
    `asked` is the set's size, and an estimate on fewer of its items carries a provisional `note`."""
    answered = []
    for item in record.get("items", []):
        value = labels.get(item["key"])
        prediction = item["prediction"] if predictions is None else predictions.get(item["key"])
        if value is None or not prediction:
            break
        answered.append((item, value, prediction))
    total = len(record.get("items", []))
    if not answered:
        return PoolEstimate(reason=f"waiting for the labels of the {total} evaluation items", pool=int(record.get("pool", 0)), asked=total)
    losses = item_losses([p for _, _, p in answered], [v for _, v, _ in answered], task, classes)
    estimate = pool_estimate(None, losses, [item["q"] for item, _, _ in answered], int(record["pool"]), len(answered))
    note = f"provisional: the first {len(answered)} of the {total} evaluation items labelled" if len(answered) < total else None
    return replace(estimate, asked=total, note=note)
