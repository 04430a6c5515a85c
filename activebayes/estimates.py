"""Unbiased estimates of a model's loss over a pool from labels chosen actively.

A pool holds N items with losses L_1 .. L_N under a fixed model (0-1 loss, NLL, squared error).
M of them are drawn one at a time without replacement, the m-th from a proposal q_m over the
items still left (it may depend on the draws before it), and labelled. Their plain mean loss is
biased: an acquisition prefers the items the model gets wrong. LURE (the levelled unbiased risk
estimator of Farquhar, Gal & Rainforth, "On statistical bias in active learning: how and when to
fix it", ICLR 2021, eq. 4) weights each draw:

    R̂_LURE = (1/M) Σ_{m=1..M} v_m L_{i_m},
    v_m = 1 + (N − M)/(N − m) · (1 / ((N − m + 1) q_m(i_m)) − 1),

and E[R̂_LURE] = (1/N) Σ_i L_i exactly, for any proposal that gives every item left a positive
probability. A uniform draw has q_m = 1/(N − m + 1), so v_m = 1: the plain mean. With M = N every
item is drawn and R̂ is the pool mean itself (v ≡ 1). The weights agree with the authors' active
testing code (`FancyUnbiasedRiskEstimator` of github.com/jlko/active-testing).

Active testing draws labels for evaluation alone and estimates with the same R̂_LURE (its proposal:
`activebayes.active_testing_proposal`). The 95 % intervals (Student's t, Wilson's score interval
on a degrees-of-freedom adjusted size, Satterthwaite's scaled χ²) and the Jensen-corrected RMSE are
derived in `activebayes.estimate_intervals`; the per-item losses L in `activebayes.per_item_losses`.
This module re-exports the public names of all three.

Shapes: M drawn items; every array argument is [M] unless said otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from activebayes.active_testing_proposal import LOSSES, UNIFORM_SHARE, expected_loss, proposal_weights
from activebayes.errors import ShapeError
from activebayes.estimate_intervals import (
    MIN_SQUARED_CV,
    Z95,
    Z95_OF_TWO,
    chi2_interval,
    df_adjusted_size,
    effective_trials,
    root_value,
    satterthwaite_dof,
    t_quantile,
    wilson_interval,
)
from activebayes.per_item_losses import (
    PROBABILITY_FLOOR,
    categorical_nll,
    finite_vector,
    gaussian_misfit,
    gaussian_nll,
    squared_error,
    zero_one_loss,
)
from activebayes.row_weights import row_shares

__all__ = [
    "LOSSES", "MIN_SQUARED_CV", "PROBABILITY_FLOOR", "UNIFORM_SHARE", "Z95", "Z95_OF_TWO", "Estimate",
    "categorical_nll", "chi2_interval", "df_adjusted_size", "effective_trials", "expected_loss", "gaussian_misfit",
    "gaussian_nll", "lure_estimate", "lure_weights", "proposal_weights", "root_value", "satterthwaite_dof",
    "squared_error", "stratified_estimate", "summed_estimate", "t_quantile", "wilson_interval", "zero_one_loss",
]  # fmt: skip


def lure_weights(probabilities: Sequence[float] | np.ndarray, pool_size: int) -> np.ndarray:
    """v [M] of M sequential draws from a pool of N = `pool_size` (module docstring):

        v_m = 1 + (N − M)/(N − m) · (1/((N − m + 1) q_m) − 1),   m = 1 .. M;   v ≡ 1 when M = N.

    probabilities: q_m of each drawn item at its draw, in draw order, each in (0, 1].

    >>> lure_weights([0.25, 1 / 3], 4)        # uniform draws: all weights 1
    array([1., 1.])
    >>> lure_weights([0.5], 4).round(4)        # drawn twice as often as uniform: weight 1/2
    array([0.5])
    """
    q = finite_vector("probabilities", probabilities)
    m_total, n = q.shape[0], int(pool_size)
    if isinstance(pool_size, bool) or n < m_total or n < 1:
        raise ShapeError(f"pool_size: expected N >= M = {m_total} items, got {pool_size!r}")
    if np.any(q <= 0) or np.any(q > 1 + 1e-9):
        raise ShapeError(f"probabilities: expected each q_m in (0, 1], got {q[(q <= 0) | (q > 1 + 1e-9)][:3].tolist()}")
    if m_total == n:
        return np.ones(m_total)
    m = np.arange(1, m_total + 1, dtype=np.float64)
    return 1.0 + (n - m_total) / (n - m) * (1.0 / ((n - m + 1.0) * q) - 1.0)


@dataclass(frozen=True)
class Estimate:
    """An estimate of a pool's mean loss and its 95 % interval.

    value: the estimate. low, high: the interval. n: labels it rests on (M). pool: the pool
    size N it speaks for. interval: "wilson" (a loss in [0, 1]), "chi2" (a skewed nonnegative
    loss), "wald" (`activebayes.estimate_intervals`) or "sum" (`summed_estimate`). dof: a "chi2"
    estimate's ν = min(ν̂, M) of its drawn part (None otherwise). known: the part of `value` known
    exactly (`stratified_estimate`'s fixed items; 0 without them).
    """

    value: float
    low: float
    high: float
    n: int
    pool: int
    interval: str
    dof: float | None = None
    known: float = 0.0

    @property
    def half_width(self) -> float:
        """Half the interval's width (the "±" of a report)."""
        return (self.high - self.low) / 2.0

    def covers(self, truth: float) -> bool:
        """The interval holds `truth` (ends included)."""
        return self.low <= truth <= self.high

    def map(self, f, *, increasing: bool = True) -> Estimate:  # noqa: ANN001
        """The estimate of f(loss) for a monotone f (e.g. accuracy = 1 − 0-1 loss, decreasing;
        RMSE = √MSE, increasing): the value and both ends mapped, the ends swapped for a
        decreasing f. A monotone map keeps the interval's coverage."""
        low, high = (f(self.low), f(self.high)) if increasing else (f(self.high), f(self.low))
        return Estimate(float(f(self.value)), float(low), float(high), self.n, self.pool, self.interval)

    def root(self) -> Estimate:
        """The estimate of √(mean loss) (an RMSE from an MSE): the interval's ends mapped by √ and
        the value corrected for Jensen's bias (`root_value`, `activebayes.estimate_intervals`)."""
        mapped = self.map(math.sqrt)
        if self.dof is None or self.value <= 0.0:
            return mapped
        value = root_value(self.value, self.known, self.dof)
        return Estimate(min(max(value, mapped.low), mapped.high), mapped.low, mapped.high, self.n, self.pool, self.interval)


def lure_estimate(
    losses: Sequence[float] | np.ndarray,
    probabilities: Sequence[float] | np.ndarray,
    pool_size: int,
    *,
    bounded: bool = False,
    nonnegative: bool = True,
    skewed: bool = False,
    z: float = Z95,
    sizes: Sequence[int] | np.ndarray | None = None,
    rows: int | None = None,
) -> Estimate:
    """R̂_LURE of the pool's mean loss and its interval (this module's docstring; the
    intervals: `activebayes.estimate_intervals`).

    losses: L [M] of the drawn items, in draw order. probabilities: q [M] at each draw.
    sizes, rows: when the N = `pool_size` items drawn from are distinct inputs standing for
    groups of rows, the rows m [M] of each drawn input's group and R the rows of all N; the
    estimate is then of the mean over the R rows, R̂_rows = (1/M) Σ v_m ρ_m L_m, ρ_m = N m_m / R
    (`activebayes.row_weights`), and its `pool` is R. None: every item one row (ρ ≡ 1).
    bounded: the loss lies in [0, 1] (Wilson interval). nonnegative: clip the interval at 0.
    skewed: the losses are nonnegative and right-skewed, squared errors or NLLs (the scaled-χ²
    interval, `chi2_interval`; `dof` kept for `Estimate.root`).
    z: the normal quantile of the level (Z95: 95 %); the interval uses t_{M−1} at that level.

    >>> e = lure_estimate([0.0, 1.0, 0.0, 0.0], [0.25, 1 / 3, 0.5, 1.0], 4, bounded=True)
    >>> e.value                               # M = N: the pool mean
    0.25
    """
    losses_a = finite_vector("losses", losses)
    q = finite_vector("probabilities", probabilities)
    if losses_a.shape != q.shape:
        raise ShapeError(f"losses, probabilities: expected one probability per loss, got {losses_a.shape[0]} and {q.shape[0]}")
    m = losses_a.shape[0]
    if m == 0:
        raise ShapeError("losses: expected at least one labelled draw, got none")
    v = lure_weights(q, pool_size)
    population = int(pool_size if rows is None else rows)
    if sizes is not None or rows is not None:  # distinct inputs standing for groups of rows
        shares = row_shares(np.ones(m) if sizes is None else sizes, population, int(pool_size))
        if shares.shape != q.shape:
            raise ShapeError(f"sizes: expected one group size per loss, got {shares.shape[0]} and {m}")
        v = v * shares  # [M] the per-row weights v_m ρ_m
    z_terms = v * losses_a  # [M]
    value = float(z_terms.mean())
    wald_var = float(z_terms.var(ddof=1)) / m if m > 1 else math.inf
    if bounded:
        if np.any((losses_a < 0) | (losses_a > 1)):
            raise ShapeError("losses: a bounded loss must lie in [0, 1]")
        p = min(max(value, 0.0), 1.0)
        low, high = wilson_interval(p, df_adjusted_size(effective_trials(p, wald_var, v), m, z), z)
        return Estimate(value, low, high, m, population, "wilson")
    if skewed:
        if np.any(losses_a < 0):
            raise ShapeError("losses: a skewed loss (squared errors, NLLs) must be nonnegative")
        low, high = chi2_interval(value, wald_var, m, z)
        return Estimate(value, low, high, m, population, "chi2", dof=satterthwaite_dof(value, wald_var, m) if m > 1 else None)
    half = t_quantile(m, z) * math.sqrt(wald_var) if math.isfinite(wald_var) else math.inf
    low = value - half
    return Estimate(value, max(low, 0.0) if nonnegative else low, value + half, m, population, "wald")


def stratified_estimate(fixed_losses: Sequence[float] | np.ndarray, drawn_losses: Sequence[float] | np.ndarray,
                        probabilities: Sequence[float] | np.ndarray, pool_size: int, *, fixed_sizes: Sequence[int] | None = None,
                        drawn_sizes: Sequence[int] | None = None, rows: int | None = None, **options: Any) -> Estimate:  # fmt: skip
    """The pool's mean loss when D items were chosen deterministically first (their losses known:
    `fixed_losses` [D]) and M more drawn at random from the N − D left (`drawn_losses` [M],
    `probabilities` [M]; `options`: `lure_estimate`'s bounded, nonnegative, skewed, z), as `auto`'s batch
    (an arm's top-k, then a uniform random share) is:

        R̂ = (Σ_fixed L + (N − D) · R̂_LURE(drawn; N − D)) / N

    unbiased because the deterministic part is known exactly given the model, and its interval
    is R̂_LURE's mapped by the same affine map (`known` = Σ_fixed L / N). D = 0 is `lure_estimate`.
    With `rows` R (the N items distinct inputs standing for groups of rows; `fixed_sizes` [D] and
    `drawn_sizes` [M] their groups' rows, None for one each) it is the mean over the R rows:
    (Σ_fixed m L + R' · R̂_rows(drawn; N − D, R')) / R, R' = R − Σ_fixed m (`activebayes.row_weights`).
    """
    fixed = finite_vector("fixed_losses", fixed_losses)
    d, n = fixed.shape[0], int(pool_size)
    fixed_m = np.ones(d) if fixed_sizes is None else finite_vector("fixed_sizes", fixed_sizes)
    if fixed_m.shape != fixed.shape:
        raise ShapeError(f"fixed_sizes: expected one group size per fixed loss, got {fixed_m.shape[0]} and {d}")
    total = n if rows is None else int(rows)
    rest_rows = total - int(fixed_m.sum())
    per_row = {} if rows is None else {"sizes": drawn_sizes, "rows": rest_rows}
    rest = lure_estimate(drawn_losses, probabilities, n - d, **per_row, **options)
    if d == 0:
        return rest
    share = rest_rows / total
    known = float(fixed_m @ fixed) / total
    return Estimate(known + share * rest.value, known + share * rest.low, known + share * rest.high,
                    d + rest.n, total, rest.interval, rest.dof, known)  # fmt: skip


def summed_estimate(first: Estimate, second: Estimate) -> Estimate:
    """The estimate of the sum of two pool means from theirs, each formed at level 1 − α/2
    (z = Z95_OF_TWO for 95 %): value a + b, interval [low_a + low_b, high_a + high_b]. It holds
    a + b with probability ≥ 1 − α whatever the two estimates' dependence (Bonferroni: it can
    miss only where one of the two misses). A Gaussian NLL is summed so (`round_estimates`): its
    log-variance part gets the Wald interval, its skewed misfit part the scaled-χ² one, where a
    t interval on the whole held the pool's NLL in 84-92 % of seeded draws of Gaussian residuals.

    >>> e = summed_estimate(Estimate(1.0, 0.5, 1.5, 4, 10, "wald"), Estimate(0.5, 0.2, 2.0, 4, 10, "chi2", 3.0))
    >>> (e.value, e.low, e.high, e.interval, e.dof)
    (1.5, 0.7, 3.5, 'sum', None)
    """
    return Estimate(first.value + second.value, first.low + second.low, first.high + second.high, first.n, first.pool, "sum")

