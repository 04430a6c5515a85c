"""`activebayes.row_weights`: estimates over distinct inputs restated per pool row. The per-row
LURE estimate against a hand-computed case, against plain LURE where every group is one row
(exact equality), and against the per-row mean: exactly, by enumerating every ordered draw with
its probability, and by a seeded Monte-Carlo mean whose tolerance comes from that enumeration's
variance."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from activebayes.errors import ShapeError
from activebayes.estimates import lure_estimate, stratified_estimate
from activebayes.row_weights import row_shares
from activebayes.same_rows import first_and_sizes, first_of_each, row_fingerprints

LOSSES = np.array([1.0, 0.0, 1.0, 0.0, 0.0, 1.0])  # [N] 0-1 losses of N = 6 distinct inputs
SIZES = np.array([1, 4, 1, 6, 2, 1])  # [N] rows of each input's group: R = 15
PROPOSAL = np.array([0.30, 0.05, 0.25, 0.10, 0.10, 0.20])  # [N] weights of a sequential draw ∝ w
ROW_MEAN = float(SIZES @ LOSSES / SIZES.sum())  # 3 / 15 = 0.2; the mean over inputs is 0.5


def sequential_draws(weights: np.ndarray, m: int):
    """Every ordered draw of m of the N items without replacement, ∝ `weights` among those left:
    (positions [m], q [m] at each draw, the draw's probability)."""
    for order in itertools.permutations(range(len(weights)), m):
        left, q = weights.sum(), []
        for i in order:
            q.append(weights[i] / left)
            left -= weights[i]
        yield np.array(order), np.array(q), float(np.prod(q))


def per_row_value(order: np.ndarray, q: np.ndarray) -> float:
    return lure_estimate(LOSSES[order], q, len(LOSSES), sizes=SIZES[order], rows=int(SIZES.sum()), bounded=True).value


def test_a_hand_computed_case():
    """N = 3 inputs of R = 4 rows; the first draw (q = 1/2, group of 2 rows) has v = 1 + (1/2)(2/3 − 1)
    = 5/6 and ρ = 3·2/4 = 3/2, the second (q = 1/2 of the 2 left, 1 row) v = 1 and ρ = 3/4:
    R̂ = (5/6 · 3/2 · 1 + 1 · 3/4 · 1) / 2 = 1."""
    e = lure_estimate([1.0, 1.0], [0.5, 0.5], 3, sizes=[2, 1], rows=4, bounded=True)
    assert e.value == pytest.approx(1.0) and e.pool == 4 and e.n == 2
    # one draw is importance sampling of the target π = m / R by q: π L / q = (3/4 · 1) / 0.4
    assert lure_estimate([1.0], [0.4], 2, sizes=[3], rows=4).value == pytest.approx(0.75 / 0.4)
    np.testing.assert_allclose(row_shares([2, 1], rows=4, inputs=3), [1.5, 0.75])


@pytest.mark.parametrize("options", [{"bounded": True}, {"skewed": True}, {"nonnegative": False}])
def test_groups_of_one_row_are_plain_lure_exactly(options):
    rng = np.random.default_rng(0)
    losses, q = rng.uniform(0, 1, 7), rng.uniform(0.05, 0.9, 7)
    plain = lure_estimate(losses, q, 40, **options)
    assert lure_estimate(losses, q, 40, sizes=np.ones(7, dtype=int), rows=40, **options) == plain
    fixed = rng.uniform(0, 1, 3)
    assert stratified_estimate(fixed, losses, q, 40, fixed_sizes=[1, 1, 1], drawn_sizes=[1] * 7, rows=40, **options) == \
        stratified_estimate(fixed, losses, q, 40, **options)


@pytest.mark.parametrize("m", [1, 2, 4])
def test_its_mean_over_every_ordered_draw_is_the_row_mean(m):
    draws = list(sequential_draws(PROPOSAL, m))
    assert sum(p for _, _, p in draws) == pytest.approx(1.0)
    mean = sum(p * per_row_value(order, q) for order, q, p in draws)
    assert mean == pytest.approx(ROW_MEAN, abs=1e-12)
    plain = sum(p * lure_estimate(LOSSES[order], q, len(LOSSES), bounded=True).value for order, q, p in draws)
    assert plain == pytest.approx(LOSSES.mean(), abs=1e-12)  # plain LURE: the mean over distinct inputs, 0.5


def test_stratified_mean_over_every_draw_is_the_row_mean():
    """Inputs 0 and 3 chosen first (auto's top-k, 7 rows), then 2 of the other 4 drawn uniformly."""
    fixed, rest = np.array([0, 3]), np.array([1, 2, 4, 5])
    mean = 0.0
    for order, q, p in sequential_draws(np.ones(len(rest)), 2):
        drawn = rest[order]
        e = stratified_estimate(LOSSES[fixed], LOSSES[drawn], q, len(LOSSES), fixed_sizes=SIZES[fixed],
                                drawn_sizes=SIZES[drawn], rows=int(SIZES.sum()), bounded=True)  # fmt: skip
        assert e.pool == SIZES.sum() and e.known == pytest.approx(SIZES[fixed] @ LOSSES[fixed] / SIZES.sum())
        mean += p * e.value
    assert mean == pytest.approx(ROW_MEAN, abs=1e-12)


def test_monte_carlo_mean_of_seeded_draws_is_the_row_mean():
    """T seeded sequential draws of M = 3: their mean lies within 4 standard errors of the row
    mean, the standard error √(Var/T) from the exact variance over every ordered draw; the plain
    estimator's mean (over distinct inputs, 0.5) lies far outside that band."""
    m, trials = 3, 4000
    exact = [(p, per_row_value(order, q)) for order, q, p in sequential_draws(PROPOSAL, m)]
    variance = sum(p * (v - ROW_MEAN) ** 2 for p, v in exact)
    rng = np.random.default_rng(20240917)
    values = []
    for _ in range(trials):
        left, order, q = PROPOSAL.copy(), [], []
        for _ in range(m):
            i = int(rng.choice(len(left), p=left / left.sum()))
            order.append(i)
            q.append(left[i] / left.sum())
            left[i] = 0.0
        values.append(per_row_value(np.array(order), np.array(q)))
    tolerance = 4 * math.sqrt(variance / trials)
    assert abs(np.mean(values) - ROW_MEAN) < tolerance
    assert abs(LOSSES.mean() - ROW_MEAN) > 10 * tolerance


def test_bad_group_sizes_are_refused():
    with pytest.raises(ShapeError, match="whole numbers"):
        row_shares([0, 2], rows=4, inputs=3)
    with pytest.raises(ShapeError, match="R >= N"):
        row_shares([1, 1], rows=2, inputs=3)
    with pytest.raises(ShapeError, match="one group size per loss"):
        lure_estimate([1.0, 0.0], [0.5, 0.5], 3, sizes=[1], rows=4)


def test_first_and_sizes_counts_each_group():
    x = np.array([[1.0], [2.0], [1.0], [3.0], [2.0], [1.0]], dtype=np.float32)
    keep, sizes = first_and_sizes(row_fingerprints(x))
    assert keep.tolist() == [0, 1, 3] == first_of_each(row_fingerprints(x)).tolist() and sizes.tolist() == [3, 2, 1]
