"""Estimates of each round's model on the pool, from the store's records (pure functions of
`RoundInfo` / `QueryInfo` / plain dicts; no database access here).

A round's model (fitted on the labels before the round) predicted its queries before anyone
labelled them (`QueryInfo.prediction`), and each query records the probability with which it was
drawn (`QueryInfo.probability`) from the round's N_t candidates (`acquisition_settings
["candidates"]`). Once answered, those draws are a sample the model never trained on, so

    R̂_t = R̂_LURE(losses of the round's queries, q, N_t)           (`activebayes.estimates`)

is an unbiased estimate of the round-t model's mean loss over the N_t items it chose from (the
unlabelled pool then; an acquisition subset is itself a uniform sample of it). Accuracy is
1 − R̂ of the 0-1 loss; NLL needs every class's probability (the query's "probs"); regression
gives RMSE = √R̂ of the squared error and the Gaussian NLL. The estimate rests on the round's own
k labels, so its interval is wide for a small batch (Student's t on M − 1 degrees of freedom for
its M drawn labels, `lure_estimate`); `activebayes evaluate --budget N` buys a tighter one.

Which draws count: the answered prefix of the round's draws in rank order (a prefix of a
sequential draw is itself one, so the estimate stays unbiased while answers come in). A round
whose first D queries were chosen deterministically and the rest at random (auto: an arm's top-k
then a random share) uses `stratified_estimate`. A round with no recorded probability (top-k,
batch-bald, typical) has no estimate: the reason says "the acquisition is deterministic".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from activebayes.estimates import Estimate, categorical_nll, gaussian_nll, squared_error, stratified_estimate, zero_one_loss

TYPICAL = "not available: TypiClust's typical items (--first auto, while labels are few) are chosen, not drawn"
DETERMINISTIC = "not available: the acquisition is deterministic (top-k); a stochastic one (power-, softmax-, random, auto) records its draws"


def pack_class_probabilities(row: Sequence[float]) -> str | None:
    """p(c | x) of every class, in class order, as text: 4 significant digits each, separated by
    spaces ("0.9812 0.0001 ..."); None when a probability is not finite."""
    if not all(math.isfinite(p) for p in row):
        return None
    return " ".join(f"{p:.4g}" for p in row)


def unpack_class_probabilities(text: str) -> list[float]:
    """The inverse of `pack_class_probabilities`."""
    return [float(p) for p in str(text).split()]


@dataclass(frozen=True)
class LossTable:
    """Per-item losses [M] of M answered, predicted items (None where a loss is unknown).

    zero_one, class_nll (classification), squared, normal_nll (regression).
    """

    zero_one: np.ndarray | None = None
    class_nll: np.ndarray | None = None
    squared: np.ndarray | None = None
    normal_nll: np.ndarray | None = None


def item_losses(predictions: Sequence[dict[str, Any]], values: Sequence[str], task: str, classes: Sequence[str] | None) -> LossTable:
    """The losses of answered items from their recorded predictions ({"label", "probability",
    "probs"} or {"mean", "sd"}) and their labels."""
    if task == "regression":
        means = [float(p["mean"]) for p in predictions]
        sds = [float(p["sd"]) for p in predictions]
        targets = [float(v) for v in values]
        return LossTable(squared=squared_error(means, targets), normal_nll=gaussian_nll(means, sds, targets))
    zero_one = zero_one_loss([p["label"] for p in predictions], values)
    index = {str(c): i for i, c in enumerate(classes or [])}
    nll = None
    if all("probs" in p for p in predictions) and all(str(v) in index for v in values):
        probs = [unpack_class_probabilities(p["probs"]) for p in predictions]
        nll = categorical_nll([row[index[str(v)]] for row, v in zip(probs, values)])
    return LossTable(zero_one=zero_one, class_nll=nll)


@dataclass(frozen=True)
class PoolEstimate:
    """A model's estimated performance on a pool.

    accuracy, class_nll (classification) or rmse, normal_nll (regression): Estimates, None where
    unknown. labels: the answered draws they rest on. pool: N. reason: why there is none.
    """

    accuracy: Estimate | None = None
    class_nll: Estimate | None = None
    rmse: Estimate | None = None
    normal_nll: Estimate | None = None
    labels: int = 0
    pool: int = 0
    reason: str | None = None

    @property
    def available(self) -> bool:
        return self.reason is None

    def figures(self) -> dict[str, list[float]]:
        """{"accuracy": [value, low, high], ...} of the estimates present (for JSON output)."""
        named = {"accuracy": self.accuracy, "nll": self.class_nll, "rmse": self.rmse}
        named["nll"] = named["nll"] if self.class_nll is not None else self.normal_nll
        return {k: [e.value, e.low, e.high] for k, e in named.items() if e is not None}


def pool_estimate(
    fixed: LossTable | None, drawn: LossTable, probabilities: Sequence[float], pool_size: int, labels: int
) -> PoolEstimate:
    """Estimates from D fixed (deterministic) items' losses and M drawn items' losses with their
    q (`stratified_estimate`), mapped to accuracy / RMSE."""

    def one(name: str, **kw: Any) -> Estimate | None:
        rest = getattr(drawn, name)
        known = getattr(fixed, name) if fixed is not None else np.zeros(0)
        if rest is None or known is None or len(rest) == 0:
            return None
        return stratified_estimate(known, rest, probabilities, pool_size, **kw)

    error = one("zero_one", bounded=True)
    mse = one("squared")
    return PoolEstimate(
        accuracy=error.map(lambda r: 1.0 - r, increasing=False) if error is not None else None,
        class_nll=one("class_nll"),
        rmse=mse.map(math.sqrt) if mse is not None else None,
        normal_nll=one("normal_nll", nonnegative=False),
        labels=labels, pool=pool_size,
    )  # fmt: skip


def round_estimate(rnd: Any, queries: Sequence[Any], task: str, classes: Sequence[str] | None) -> PoolEstimate:
    """The round-t model's estimated performance on the pool it drew from (module docstring).
    `rnd`: a RoundInfo; `queries`: its QueryInfos."""
    if task not in ("classification", "regression"):
        return PoolEstimate(reason=f"not available for a {task} project")
    ordered = sorted(queries, key=lambda q: q.rank)
    if not ordered:
        return PoolEstimate(reason="the round asked nothing")
    if not any(q.prediction for q in ordered):
        return PoolEstimate(reason="no model yet (the first batch)")
    pool = (rnd.acquisition_settings or {}).get("candidates")
    probabilities = [getattr(q, "probability", None) for q in ordered]
    if pool is None or all(p is None for p in probabilities):
        if pool is not None and (rnd.acquisition_settings or {}).get("typical"):
            return PoolEstimate(reason=TYPICAL)
        return PoolEstimate(reason=DETERMINISTIC if pool is not None else "not available: recorded before draws kept their probabilities")
    n_fixed = next(i for i, p in enumerate(probabilities) if p is not None)
    if any(p is None for p in probabilities[n_fixed:]):
        return PoolEstimate(reason="not available: deterministic queries follow random ones")
    fixed, drawn = ordered[:n_fixed], ordered[n_fixed:]
    if any(q.value is None or not q.prediction for q in fixed):
        return PoolEstimate(reason="waiting for the answers to the round's top-ranked queries")
    answered = []
    for q in drawn:  # the answered prefix of the draws
        if q.value is None or not q.prediction:
            break
        answered.append(q)
    if not answered:
        return PoolEstimate(reason="waiting for answers")
    fixed_losses = item_losses([q.prediction for q in fixed], [q.value for q in fixed], task, classes) if fixed else None
    drawn_losses = item_losses([q.prediction for q in answered], [q.value for q in answered], task, classes)
    return pool_estimate(fixed_losses, drawn_losses, [float(q.probability) for q in answered], int(pool), len(fixed) + len(answered))


def latest_estimate(estimates: Sequence[tuple[int, PoolEstimate]]) -> tuple[int, PoolEstimate] | None:
    """(round number, estimate) of the latest round with an estimate, or None."""
    return next(((n, e) for n, e in reversed(list(estimates)) if e.available), None)
