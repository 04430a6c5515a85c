"""Estimates of each round's model on the pool, from the store's records (pure functions of
`RoundInfo` / `QueryInfo` / plain dicts; no database access here).

A round's model (fitted on the labels before the round) predicted its queries before anyone
labelled them (`QueryInfo.prediction`), and each query records the probability with which it was
drawn (`QueryInfo.probability`) from the round's N_t candidates (`acquisition_settings
["candidates"]`). Once answered, those draws are a sample the model never trained on, so

    R̂_t = R̂_LURE(losses of the round's queries, q, N_t)           (`activebayes.estimates`)

is an unbiased estimate of the round-t model's mean loss over the N_t items it chose from (the
unlabelled pool then; an acquisition subset is itself a uniform sample of it). Those N_t are
distinct inputs (a round chooses among one row of each group with equal features); where groups
hold more than one row, the round records the R_t rows they stand for and each query's group size
m (acquisition_settings "candidate_rows", "copies"), and the estimate is of the mean over the R_t
rows, each draw weighted by ρ = N_t m / R_t (`activebayes.row_weights`): the figure over the pool a
user asks for, not over its distinct inputs. Its `pool` is then R_t and `inputs` N_t. Accuracy is
1 − R̂ of the 0-1 loss; NLL needs every class's probability (the query's "probs"); regression
gives the RMSE (the root of R̂ of the squared error, corrected for Jensen's bias: `Estimate.root`)
and the Gaussian NLL. The estimate rests on the round's own k labels, so its interval is wide for
a small batch (accuracy: Wilson's with Student's t on M − 1 degrees of freedom for its M drawn
labels, `lure_estimate`; an MSE and a categorical NLL, Satterthwaite's scaled χ² on at most
2M/κ = M/3 degrees of freedom, so that a few skewed losses do not give a short upper end; an
auto round's 2 random draws give none, `chi2_interval`); `activebayes evaluate --budget N` buys
a tighter one. Earlier rounds' draws are not pooled in: each was drawn for (and is a held-out
sample of) its own round's model, and trains every later one. Pooled over W rounds they
estimate the W models' mean loss; seeded simulations (`studies/estimates/coverage.py --pooled`)
held that mean in 95-100 % of draws, but the latest model's MSE in as few as 33 % (W = 20, the
window's first model at 4 times its MSE), the interval lying above it: a figure for the window,
an upper bound for the latest model only while the learning curve does not rise.

Which draws count: the answered prefix of the round's draws in rank order (a prefix of a
sequential draw is itself one, so the estimate stays unbiased while answers come in). A round
whose first D queries were chosen deterministically and the rest at random (auto: an arm's top-k
then a random share) uses `stratified_estimate`. A round with no recorded probability (top-k,
batch-bald, typical) has no estimate: the reason says "the acquisition is deterministic".

An estimate on part of its round's draws (`PoolEstimate.partial`: the round still open with some
answers in, or failed / discarded before the rest came in) is unbiased but rests on fewer labels
than the round asked; its `note` says so ("provisional: round still open, 2 of its 10 answers
in"). A round with no estimate says why in the words of its status: waiting for answers,
interrupted while fitting or scoring (resumable), or failed with its failure reason
(a round discarded by `round --restart-round` records "discarded by ...").

The possible range of each figure (`RANGES`): accuracy in [0, 1], a categorical NLL and an RMSE
in [0, ∞), a Gaussian NLL anywhere. R̂_LURE is unbiased but not bounded by it (a few wrong
answers drawn with small q have weights v ≫ 1, so R̂ of the 0-1 loss can exceed 1 and the
accuracy 1 − R̂ fall below 0). `nearest_possible` moves such a value to the nearest possible
one, which only brings it closer to the truth; that is the estimate shown (`figures(in_range=
True)`), the unbiased value kept beside it (`unbiased_values`). The intervals already lie in the
range (Wilson's inside [0, 1], the scaled-χ² interval of a nonnegative loss inside [0, ∞)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np

from activebayes.estimates import (Z95_OF_TWO, Estimate, categorical_nll, gaussian_misfit, gaussian_nll, squared_error, stratified_estimate,
                                   summed_estimate, zero_one_loss)  # fmt: skip

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

    zero_one, class_nll (classification), squared, normal_nll and its misfit part normal_misfit
    (y − μ)²/2σ² (regression; `item_losses` gives the two together, and the NLL is estimated
    only from both).
    """

    zero_one: np.ndarray | None = None
    class_nll: np.ndarray | None = None
    squared: np.ndarray | None = None
    normal_nll: np.ndarray | None = None
    normal_misfit: np.ndarray | None = None


def item_losses(predictions: Sequence[dict[str, Any]], values: Sequence[str], task: str, classes: Sequence[str] | None) -> LossTable:
    """The losses of answered items from their recorded predictions ({"label", "probability",
    "probs"} or {"mean", "sd"}) and their labels."""
    if task == "regression":
        means = [float(p["mean"]) for p in predictions]
        sds = [float(p["sd"]) for p in predictions]
        targets = [float(v) for v in values]
        return LossTable(squared=squared_error(means, targets), normal_nll=gaussian_nll(means, sds, targets),
                         normal_misfit=gaussian_misfit(means, sds, targets))  # fmt: skip
    zero_one = zero_one_loss([p["label"] for p in predictions], values)
    index = {str(c): i for i, c in enumerate(classes or [])}
    nll = None
    if all("probs" in p for p in predictions) and all(str(v) in index for v in values):
        probs = [unpack_class_probabilities(p["probs"]) for p in predictions]
        nll = categorical_nll([row[index[str(v)]] for row, v in zip(probs, values)])
    return LossTable(zero_one=zero_one, class_nll=nll)


RANGES: dict[str, tuple[float, float]] = {  # PoolEstimate attribute -> the values it can take
    "accuracy": (0.0, 1.0),
    "class_nll": (0.0, math.inf),
    "rmse": (0.0, math.inf),
    "normal_nll": (-math.inf, math.inf),
}


def figure_attribute(figure: str, task: str) -> str:
    """The PoolEstimate attribute of a figure as output names it ("accuracy", "rmse", "nll")."""
    if figure == "nll":
        return "normal_nll" if task == "regression" else "class_nll"
    return figure


def nearest_possible(value: float, bounds: tuple[float, float]) -> float:
    """`value` moved to the nearest point of [low, high] = `bounds` (itself when inside).

    >>> nearest_possible(-7.35, (0.0, 1.0)), nearest_possible(0.8, (0.0, 1.0)), nearest_possible(-2.0, (-math.inf, math.inf))
    (0.0, 0.8, -2.0)
    """
    low, high = bounds
    return min(max(float(value), low), high)


@dataclass(frozen=True)
class PoolEstimate:
    """A model's estimated performance on a pool.

    accuracy, class_nll (classification) or rmse, normal_nll (regression): Estimates, None where
    unknown. labels: the answered draws they rest on. pool: N. reason: why there is none.
    asked: the draws the estimate rests on once every answer is in (the round's queries; 0 where
    not known). note: why an estimate on fewer (`partial`) is provisional or partial. inputs: the
    distinct inputs drawn from where they stand for more rows (the estimate is over the `pool`
    rows, `activebayes.row_weights`), else None.
    """

    accuracy: Estimate | None = None
    class_nll: Estimate | None = None
    rmse: Estimate | None = None
    normal_nll: Estimate | None = None
    labels: int = 0
    pool: int = 0
    reason: str | None = None
    asked: int = 0
    note: str | None = None
    inputs: int | None = None

    @property
    def available(self) -> bool:
        return self.reason is None

    @property
    def partial(self) -> bool:
        """Available, on fewer labels than its round asked (an open or a failed round)."""
        return self.available and self.labels < self.asked

    def named(self) -> dict[str, tuple[Estimate, tuple[float, float]]]:
        """{"accuracy" | "nll" | "rmse": (Estimate, its possible range)} of the estimates present."""
        named = {"accuracy": "accuracy", "nll": "class_nll" if self.class_nll is not None else "normal_nll", "rmse": "rmse"}
        return {k: (getattr(self, a), RANGES[a]) for k, a in named.items() if getattr(self, a) is not None}

    def figures(self, *, in_range: bool = False) -> dict[str, list[float]]:
        """{"accuracy": [value, low, high], ...} of the estimates present (for JSON output): value
        the unbiased R̂, or with `in_range` that value moved into the figure's possible range."""
        return {k: [nearest_possible(e.value, bounds) if in_range else e.value, e.low, e.high]
                for k, (e, bounds) in self.named().items()}  # fmt: skip

    def unbiased_values(self) -> dict[str, float]:
        """{"accuracy": R̂, ...}: the unbiased values themselves, possibly outside their range."""
        return {k: e.value for k, (e, _) in self.named().items()}


def pool_estimate(
    fixed: LossTable | None, drawn: LossTable, probabilities: Sequence[float], pool_size: int, labels: int,
    groups: dict[str, Any] | None = None,
) -> PoolEstimate:
    """Estimates from D fixed (deterministic) items' losses and M drawn items' losses with their
    q (`stratified_estimate`), mapped to accuracy / RMSE (`Estimate.root`: the χ² interval's root,
    its value corrected for Jensen's bias). `groups`: {"fixed_sizes" [D], "drawn_sizes" [M],
    "rows": R} where the N = `pool_size` items stand for R rows (`stratified_estimate`), or None."""
    groups = groups or {}

    def one(name: str, **kw: Any) -> Estimate | None:
        rest = getattr(drawn, name)
        known = getattr(fixed, name) if fixed is not None else np.zeros(0)
        if rest is None or known is None or len(rest) == 0:
            return None
        return stratified_estimate(known, rest, probabilities, pool_size, **groups, **kw)

    def normal_nll() -> Estimate | None:
        """The Gaussian NLL: the Wald interval of its log-variance part ½ log 2πσ² plus the
        scaled-χ² one of its misfit part, each at 97.5 % (`summed_estimate`); None without both."""
        misfit = one("normal_misfit", skewed=True, z=Z95_OF_TWO)
        if misfit is None or drawn.normal_nll is None:
            return None
        known = np.zeros(0) if fixed is None else fixed.normal_nll - fixed.normal_misfit
        log_part = stratified_estimate(known, drawn.normal_nll - drawn.normal_misfit, probabilities, pool_size,
                                       nonnegative=False, z=Z95_OF_TWO, **groups)  # fmt: skip
        return summed_estimate(log_part, misfit)

    error = one("zero_one", bounded=True)
    mse = one("squared", skewed=True)
    return PoolEstimate(
        accuracy=error.map(lambda r: 1.0 - r, increasing=False) if error is not None else None,
        class_nll=one("class_nll", skewed=True),
        rmse=mse.root() if mse is not None else None,
        normal_nll=normal_nll(),
        labels=labels, pool=int(groups.get("rows", pool_size)), inputs=pool_size if "rows" in groups else None,
    )  # fmt: skip


def round_state(rnd: Any) -> tuple[str, str]:
    """(state, words) of a round from its status: ("open", "round still open") while it waits
    for answers (queried), ("interrupted", "round interrupted while 'fitted'") when it stopped
    before asking (started, fitted, scored: resuming it asks), ("failed", "round failed (its
    failure reason)"), or ("closed", "") (answered, done, or a record without a status)."""
    status = getattr(rnd, "status", None)
    status = str(getattr(status, "value", status) or "")
    if status == "queried":
        return "open", "round still open"
    if status in ("started", "fitted", "scored"):
        return "interrupted", f"round interrupted while {status!r}"
    if status == "failed":
        reason = getattr(rnd, "failure_reason", None)
        return "failed", "round failed" + (f" ({reason})" if reason else "")
    return "closed", ""


def _missing_reason(rnd: Any, asked: int, answered: int, first: str = "answers") -> str:
    """Why a round with `asked` queries, `answered` of them answered, has no estimate: `first`
    names the answers it needs first ("answers", "the answers to its top-ranked queries")."""
    state, words = round_state(rnd)
    if asked == 0:
        if state == "interrupted":
            return f"not available yet: {words}, before it asked anything; resuming it asks its queries"
        return f"not available: {words} before it asked anything" if state == "failed" else "the round asked nothing"
    count = f"{answered} of its {asked} answers in" if answered else f"none of its {asked} answers in"
    if state == "failed":
        return f"not available: {words} with {count}"
    if state == "interrupted":
        return f"not available yet: {words}, before asking its {asked} queries; resuming it asks them"
    return f"waiting for {first} ({count})"


def _partial_note(rnd: Any, asked: int, answered: int) -> str:
    """How an estimate on part of a round's draws is to be read."""
    state, words = round_state(rnd)
    count = f"{answered} of its {asked} answers in"
    if state == "open":
        return f"provisional: {words}, {count}"
    return f"partial: {words} with {count}" if state == "failed" else f"partial: {count}"


def round_estimate(rnd: Any, queries: Sequence[Any], task: str, classes: Sequence[str] | None) -> PoolEstimate:
    """The round-t model's estimated performance on the pool it drew from (module docstring).
    `rnd`: a RoundInfo; `queries`: its QueryInfos. `asked` is the round's query count; an
    estimate on fewer answers carries a `note` (provisional, partial)."""
    if task not in ("classification", "regression"):
        return PoolEstimate(reason=f"not available for a {task} project")
    ordered = sorted(queries, key=lambda q: q.rank)
    asked, answered_count = len(ordered), sum(q.value is not None for q in ordered)

    def none(reason: str) -> PoolEstimate:
        return PoolEstimate(reason=reason, asked=asked)

    if not ordered:
        return none(_missing_reason(rnd, 0, 0))
    if not any(q.prediction for q in ordered):
        return none("no model yet (the first batch)")
    pool = (rnd.acquisition_settings or {}).get("candidates")
    probabilities = [getattr(q, "probability", None) for q in ordered]
    if pool is None or all(p is None for p in probabilities):
        if pool is not None and (rnd.acquisition_settings or {}).get("typical"):
            return none(TYPICAL)
        return none(DETERMINISTIC if pool is not None else "not available: recorded before draws kept their probabilities")
    n_fixed = next(i for i, p in enumerate(probabilities) if p is not None)
    if any(p is None for p in probabilities[n_fixed:]):
        return none("not available: deterministic queries follow random ones")
    fixed, drawn = ordered[:n_fixed], ordered[n_fixed:]
    if any(q.value is None or not q.prediction for q in fixed):
        return none(_missing_reason(rnd, asked, answered_count, "the answers to the round's top-ranked queries"))
    answered = []
    for q in drawn:  # the answered prefix of the draws
        if q.value is None or not q.prediction:
            break
        answered.append(q)
    if not answered:
        return none(_missing_reason(rnd, asked, answered_count))
    fixed_losses = item_losses([q.prediction for q in fixed], [q.value for q in fixed], task, classes) if fixed else None
    drawn_losses = item_losses([q.prediction for q in answered], [q.value for q in answered], task, classes)
    settings = rnd.acquisition_settings or {}
    copies = settings.get("copies")  # each query's group size, where the candidates stand for more rows
    groups = None if copies is None else {"fixed_sizes": copies[:n_fixed], "drawn_sizes": copies[n_fixed : n_fixed + len(answered)],
                                          "rows": int(settings["candidate_rows"])}  # fmt: skip
    estimate = pool_estimate(fixed_losses, drawn_losses, [float(q.probability) for q in answered], int(pool), len(fixed) + len(answered), groups)
    note = _partial_note(rnd, asked, answered_count) if estimate.labels < asked else None
    return replace(estimate, asked=asked, note=note)


def latest_estimate(estimates: Sequence[tuple[int, PoolEstimate]]) -> tuple[int, PoolEstimate] | None:
    """(round number, estimate) of the latest round with an estimate on all its round's draws;
    without one, of the latest round with a partial estimate (its `note` says so); or None."""
    available = [(n, e) for n, e in estimates if e.available]
    return next((item for item in reversed(available) if not item[1].partial), available[-1] if available else None)
