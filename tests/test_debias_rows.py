"""`activebayes.debias` per pool row: the training weights of labels drawn among distinct inputs
whose groups hold several rows. Hand-computed cases; the plain LURE weights v_m exactly where every
group is one row or a round recorded no groups; and the weighted objective's expectation over
every sequence of draws (enumerated with its probability, over two rounds, a copy of a labelled
input staying a candidate) equal to the mean over the pool's rows."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import numpy as np
import pytest

from activebayes.debias import Draw, acquisition_weights, lure_training_weights
from activebayes.row_weights import row_shares

SIZES = np.array([3, 1, 2, 1])  # [N] rows of each distinct input: R = 7
LOSSES = np.array([0.9, 0.1, 0.4, 0.7])  # [N] the loss of each input (its rows share it)
ROW_MEAN = float(SIZES @ LOSSES / SIZES.sum())


def test_a_hand_computed_round_with_copies():
    """R = 3 rows: input A twice, B once; one round labels both (M = 2). A first with q = 0.8:
    m a = 2·3/(3·0.8·3) = 5/6, w_A = 1 + (1/2)(5/6 − 2) + (2 − 1)·1/1 = 17/12; then B (q = 1,
    U = 3 − 2 + 1 − 1 = 1 row unknown, R_t − B = 1): m a = 1/(2·1·1) = 1/2, w_B = 1 + (1/2 − 1) = 1/2."""
    weights = acquisition_weights([Draw("a", 0.8, 2, 0, 2, 3, 0, 1), Draw("b", 1.0, 2, 1, 1, 3, 2, 1)], 3)
    assert weights == pytest.approx({"a": 17 / 12, "b": 1 / 2})
    # its expectation: B first (q = 0.2) gives w_B = 1/2 + 1/(6·0.2), then w_A = 1: the row mean (2 L_A + L_B)/3
    other = acquisition_weights([Draw("b", 0.2, 2, 0, 1, 3, 0, 1), Draw("a", 1.0, 2, 1, 2, 3, 1, 1)], 3)
    assert other == pytest.approx({"b": 1 / 2 + 1 / 1.2, "a": 1.0})
    coefficient_a = (0.8 * weights["a"] + 0.2 * other["a"]) / 2
    coefficient_b = (0.8 * weights["b"] + 0.2 * other["b"]) / 2
    assert (coefficient_a, coefficient_b) == pytest.approx((2 / 3, 1 / 3))


def test_a_hand_computed_round_from_a_subset():
    """R = 10 rows, one round among N_t = 4 inputs standing for R_t = 5 rows (a subset): j = 0
    labelled (m = 2, q = 0.5), j = 1 not answered (m = 1), j = 2 labelled (m = 1, q = 0.5); M = 2.
    First: m a = 2·10/(10·0.5·5) = 0.8, w = 1 + (8/9)(0.8 − 2) + 1·8/8 = 14/15. Second: 9 rows
    unlabelled, K = 1 stood for, U = 8, R_t − B = 5 − 3 = 2: m a = 8/(9·0.5·2) = 8/9, w = 8/9."""
    weights = acquisition_weights([Draw("x", 0.5, 4, 0, 2, 5, 0, 7), Draw("z", 0.5, 4, 2, 1, 5, 3, 7)], 10)
    assert weights == pytest.approx({"x": 14 / 15, "z": 8 / 9})


def test_groups_of_one_row_and_old_rounds_keep_the_lure_weights():
    """LURE's v_m (the formula written out, N_t/subset correction included) where every group is
    one row, whether the round recorded its candidate rows (R_t = N_t, m = 1) or not (a round
    recorded before them)."""
    pool, outside = 40, 2
    rounds = [(12, [0.3, None, 0.2, 0.25]), (9, [None, 0.4, 0.1])]  # (N_t, q per query)
    old, recorded = [], []
    for number, (n_t, qs) in enumerate(rounds, start=1):
        for j, q in enumerate(qs):
            old.append((f"k{number}{j}", q, n_t, j))
            recorded.append(Draw(f"k{number}{j}", q, n_t, j, 1, n_t, j, number))
    lure = {}
    m_total = outside + len(old)
    for place, (key, q, n_t, j) in enumerate(old, start=outside + 1):
        lure[key] = 1.0 if q is None else 1 + (pool - m_total) / (pool - place) * (1 / ((n_t - j) * q) - 1)
    assert acquisition_weights(old, pool, outside=outside) == pytest.approx(lure, rel=1e-12)
    assert acquisition_weights(recorded, pool, outside=outside) == pytest.approx(lure, rel=1e-12)
    assert acquisition_weights([("a", 0.5, None, 0)], 5) == {"a": 1.0}  # no candidates recorded: 1


def fake_store(rounds, pool):
    """What `lure_training_weights` reads: rounds (number, acquisition_settings, [(key, q, rank)])."""
    infos = [SimpleNamespace(number=n, acquisition_settings=settings) for n, settings, _ in rounds]
    queries = {n: [SimpleNamespace(key=k, probability=q, rank=r) for k, q, r in qs] for n, _, qs in rounds}
    return SimpleNamespace(rounds=lambda project: infos, queries=lambda project, number: queries[number],
                           count_items=lambda project, split: pool)  # fmt: skip


def test_the_records_give_each_label_its_round_groups_and_old_rounds_none():
    """Queries listed out of rank order, an unanswered one among them: B counts its rows too; the
    copies follow the ranks; a round without candidate_rows / copies is read as groups of one."""
    grouped = {"candidates": 6, "candidate_rows": 9, "copies": [2, 3, 1]}
    rounds = [(1, {"candidates": 8}, [("b", 0.2, 1), ("a", 0.25, 0)]),
              (2, grouped, [("e", 0.3, 2), ("c", 0.4, 0), ("d", 0.5, 1)])]  # fmt: skip
    keys = ["a", "b", "c", "e", "o"]  # d unanswered, o labelled outside a round
    weights = lure_training_weights(fake_store(rounds, 20), "p", keys)
    expected = acquisition_weights(
        [("a", 0.25, 8, 0), ("b", 0.2, 8, 1), Draw("c", 0.4, 6, 0, 2, 9, 0, 2), Draw("e", 0.3, 6, 2, 1, 9, 5, 2)], 20, outside=1
    )
    np.testing.assert_allclose(weights, [expected[k] for k in keys[:4]] + [1.0], rtol=1e-12)
    old = [(n, {"candidates": s["candidates"]}, qs) for n, s, qs in rounds]
    plain = acquisition_weights([("a", 0.25, 8, 0), ("b", 0.2, 8, 1), ("c", 0.4, 6, 0), ("e", 0.3, 6, 2)], 20, outside=1)
    np.testing.assert_allclose(lure_training_weights(fake_store(old, 20), "p", keys), [plain[k] for k in keys[:4]] + [1.0], rtol=1e-12)
    assert not np.allclose(weights, lure_training_weights(fake_store(old, 20), "p", keys))


def every_sequence(proposal: np.ndarray, batches: tuple[int, ...], first_by_rows: bool = False):
    """Every sequence of draws of `batches` over the pool of SIZES: each round draws among the
    inputs with rows left (a labelled input's other copies stay candidates), ∝ `proposal` among
    those not drawn yet in the round (with `first_by_rows`, a round's first draw ∝ its group's rows
    and recorded without a probability). Yields (the labels' losses [M], their Draws, the
    sequence's probability)."""

    def rounds(left: np.ndarray, number: int):
        if number > len(batches):
            yield [], [], 1.0
            return
        candidates = np.flatnonzero(left > 0)
        for order in itertools.permutations(candidates.tolist(), batches[number - 1]):
            draws, chance, taken, rows_before = [], 1.0, [], 0
            for j, i in enumerate(order):
                weights = left if (first_by_rows and j == 0) else proposal
                free = [c for c in candidates if c not in taken]
                q = weights[i] / sum(weights[c] for c in free)
                chance *= q
                draws.append(Draw(f"{number}:{i}", None if (first_by_rows and j == 0) else float(q), len(candidates), j,
                                  int(left[i]), int(left[candidates].sum()), rows_before, number))  # fmt: skip
                taken.append(i)
                rows_before += int(left[i])
            after = left.copy()
            after[list(order)] -= 1
            for losses, later, p in rounds(after, number + 1):
                yield [LOSSES[i] for i in order] + losses, draws + later, chance * p

    yield from rounds(SIZES.copy(), 1)


@pytest.mark.parametrize("proposal", [np.ones(4), np.array([0.5, 0.1, 0.3, 0.1]), np.array([0.05, 0.6, 0.05, 0.3])])
@pytest.mark.parametrize("batches", [(2,), (2, 2), (3, 2)])
def test_the_weighted_objective_is_the_row_mean_in_expectation(proposal, batches):
    total_chance, mean = 0.0, 0.0
    for losses, draws, chance in every_sequence(proposal, batches):
        weights = acquisition_weights(draws, int(SIZES.sum()))
        total_chance += chance
        mean += chance * float(np.mean([weights[d.key] * loss for d, loss in zip(draws, losses)]))
    assert total_chance == pytest.approx(1.0)
    assert mean == pytest.approx(ROW_MEAN, abs=1e-12)


def test_v_times_rho_misses_the_row_mean_where_labels_are_much_of_the_pool():
    """The weight the estimates use per round, v_m ρ (ρ = N_t m / R_t), with LURE's v_m over the
    pool: its expectation is off by more than 0.01 here (M = 4 of R = 7 rows), where w is exact."""
    proposal, mean = np.array([0.5, 0.1, 0.3, 0.1]), 0.0
    for losses, draws, chance in every_sequence(proposal, (2, 2)):
        v = acquisition_weights([d[:4] for d in draws], int(SIZES.sum()))
        rho = [float(row_shares([d.copies], rows=d.candidate_rows, inputs=d.candidates)[0]) for d in draws]
        mean += chance * float(np.mean([v[d.key] * r * loss for d, r, loss in zip(draws, rho, losses)]))
    assert abs(mean - ROW_MEAN) > 0.01


@pytest.mark.parametrize("batches", [(2, 2), (1, 3)])
def test_an_item_without_a_probability_is_weighed_as_a_draw_over_rows(batches):
    """A round's first query recorded without q (a deterministic pick) weighs as a draw uniform
    over the rows left: exact when it was one."""
    mean = 0.0
    for losses, draws, chance in every_sequence(np.array([0.5, 0.1, 0.3, 0.1]), batches, first_by_rows=True):
        weights = acquisition_weights(draws, int(SIZES.sum()))
        mean += chance * float(np.mean([weights[d.key] * loss for d, loss in zip(draws, losses)]))
    assert mean == pytest.approx(ROW_MEAN, abs=1e-12)
