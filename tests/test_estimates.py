"""LURE weights and estimates (activebayes.estimates), the draw probabilities of the stochastic
selectors (activebayes.acquisition.batch), and the stopping rule (activebayes.stopping)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from activebayes.acquisition import resolve_acquisition, stochastic_batch
from activebayes.acquisition.batch import draw_probabilities, uniform_draw_probabilities
from activebayes.errors import ShapeError
from activebayes.estimates import (
    expected_loss,
    lure_estimate,
    lure_weights,
    proposal_weights,
    stratified_estimate,
    wilson_interval,
)
from activebayes.stopping import (
    THRESHOLD,
    changed_share,
    cohen_kappa,
    concordance,
    pack_predictions,
    stop_set_positions,
    stop_signal,
    unpack_predictions,
)


# ---- weights: hand-computed cases and identities ----------------------------------------------
def test_uniform_draws_weigh_one():
    n, m = 7, 4
    np.testing.assert_allclose(lure_weights(uniform_draw_probabilities(n, m).numpy(), n), np.ones(m))


def test_a_single_draw_by_hand():
    # N = 4, M = 1, q = 0.5: v = 1 + 3/3 · (1/(4 · 0.5) − 1) = 0.5
    np.testing.assert_allclose(lure_weights([0.5], 4), [0.5])
    # q = 0.1: v = 1 + (1/0.4 − 1) = 2.5, the importance weight 1/(N q)
    np.testing.assert_allclose(lure_weights([0.1], 4), [2.5])


def test_two_draws_by_hand():
    # N = 5, M = 2: v_1 = 1 + 3/4 (1/(5 q_1) − 1), v_2 = 1 + 3/3 (1/(4 q_2) − 1)
    q = [0.4, 0.1]
    np.testing.assert_allclose(lure_weights(q, 5), [1 + 0.75 * (0.5 - 1), 1 + (2.5 - 1)])


def test_whole_pool_is_its_mean():
    losses = np.array([0.3, 1.2, 0.0, 2.0])
    estimate = lure_estimate(losses, [0.7, 0.2, 0.6, 1.0], 4)
    assert estimate.value == pytest.approx(losses.mean())
    np.testing.assert_allclose(lure_weights([0.7, 0.2, 0.6, 1.0], 4), np.ones(4))


def test_bad_inputs_are_refused():
    with pytest.raises(ShapeError, match="pool_size"):
        lure_weights([0.5, 0.5], 1)
    with pytest.raises(ShapeError, match="probabilities"):
        lure_weights([0.0], 3)
    with pytest.raises(ShapeError, match="one probability per loss"):
        lure_estimate([1.0, 0.0], [0.5], 4)
    with pytest.raises(ShapeError, match="bounded"):
        lure_estimate([2.0], [0.5], 4, bounded=True)


# ---- unbiasedness: exact, by enumerating every ordered draw; and by simulation -----------------
def _sequence_probability(weights: np.ndarray, order: tuple[int, ...]) -> tuple[float, list[float]]:
    left = list(range(len(weights)))
    total, qs = 1.0, []
    for i in order:
        q = weights[i] / weights[left].sum()
        qs.append(q)
        total *= q
        left.remove(i)
    return total, qs


@pytest.mark.parametrize("m", [1, 2, 3, 5])
def test_lure_is_exactly_unbiased_over_every_draw(m):
    losses = np.array([0.0, 1.0, 0.2, 3.0, 0.5])
    weights = np.array([0.05, 0.5, 0.1, 0.3, 0.05])  # a non-uniform proposal, renormalised per draw
    expectation = 0.0
    for order in itertools.permutations(range(5), m):
        p, qs = _sequence_probability(weights, order)
        expectation += p * lure_estimate(losses[list(order)], qs, 5).value
    assert expectation == pytest.approx(losses.mean(), abs=1e-12)


def test_lure_is_unbiased_for_an_adaptive_proposal():
    # the proposal may depend on the draws before (active learning refits between draws)
    losses = np.array([1.0, 0.0, 0.0, 2.0])
    expectation = 0.0
    for order in itertools.permutations(range(4), 2):
        first_w = np.array([0.1, 0.2, 0.3, 0.4])
        q1 = first_w[order[0]]
        second_w = np.array([1.0, 2.0, 3.0, 4.0]) if order[0] % 2 else np.array([4.0, 3.0, 2.0, 1.0])
        second_w[order[0]] = 0.0
        q2 = second_w[order[1]] / second_w.sum()
        expectation += q1 * q2 * lure_estimate(losses[list(order)], [q1, q2], 4).value
    assert expectation == pytest.approx(losses.mean(), abs=1e-12)


def test_simulated_mean_matches_the_population_within_three_standard_errors():
    rng = np.random.default_rng(0)
    n, m, draws = 200, 20, 200
    losses = (rng.random(n) < 0.15).astype(float)  # a 0-1 loss, 15 % errors
    scores = torch.from_numpy(np.where(losses > 0, 3.0, 1.0) * rng.uniform(0.5, 1.5, n))  # a good proposal
    estimates, covered = [], 0
    for seed in range(draws):
        selection = stochastic_batch(scores, m, mode="power", generator=torch.Generator().manual_seed(seed))
        chosen = selection.indices.numpy()
        estimate = lure_estimate(losses[chosen], selection.probabilities.numpy(), n, bounded=True)
        estimates.append(estimate.value)
        covered += estimate.covers(losses.mean())
    values = np.asarray(estimates)
    standard_error = values.std(ddof=1) / math.sqrt(draws)
    assert abs(values.mean() - losses.mean()) < 3 * standard_error
    naive = np.mean([losses[stochastic_batch(scores, m, generator=torch.Generator().manual_seed(s)).indices.numpy()].mean() for s in range(50)])
    assert naive > losses.mean() + 0.1  # the plain mean of actively drawn items is far off
    assert covered / draws >= 0.85


# ---- intervals ------------------------------------------------------------------------------
def test_wilson_interval_matches_the_closed_form():
    low, high = wilson_interval(0.2, 50)
    z = 1.959963984540054
    centre = (0.2 + z * z / 100) / (1 + z * z / 50)
    half = z * math.sqrt(0.2 * 0.8 / 50 + z * z / 10000) / (1 + z * z / 50)
    assert (low, high) == pytest.approx((centre - half, centre + half))


def test_all_right_still_has_an_interval():
    estimate = lure_estimate(np.zeros(10), uniform_draw_probabilities(100, 10).numpy(), 100, bounded=True)
    assert estimate.value == 0.0 and estimate.low == 0.0 and 0.2 < estimate.high < 0.35  # Wilson's upper end at n = 10, t_9 for z
    accuracy = estimate.map(lambda r: 1 - r, increasing=False)
    assert accuracy.value == 1.0 and accuracy.high == 1.0 and accuracy.low == pytest.approx(1 - estimate.high)


def test_uniform_draws_give_the_plain_mean_and_wald_interval():
    losses = np.array([0.5, 1.5, 1.0, 2.0])
    estimate = lure_estimate(losses, uniform_draw_probabilities(50, 4).numpy(), 50)
    half = 3.182446305284263 * losses.std(ddof=1) / 2  # Student's t_{0.975, 3}: M = 4 draws
    assert estimate.value == pytest.approx(1.25)
    assert (estimate.low, estimate.high) == pytest.approx((1.25 - half, 1.25 + half))


def test_stratified_adds_the_known_part():
    # D = 2 fixed items with losses 1, 0; 2 uniform draws from the other 8 with losses 0, 1
    estimate = stratified_estimate([1.0, 0.0], [0.0, 1.0], uniform_draw_probabilities(8, 2).numpy(), 10)
    assert estimate.value == pytest.approx((1.0 + 8 * 0.5) / 10)
    assert estimate.n == 4 and estimate.pool == 10


# ---- draw probabilities of the selectors ------------------------------------------------------
def test_draw_probabilities_by_hand():
    w = torch.tensor([1.0, 2.0, 3.0, 4.0])
    q = draw_probabilities(torch.log(w), torch.tensor([3, 0, 2]))
    np.testing.assert_allclose(q.numpy(), [4 / 10, 1 / 6, 3 / 5])


def test_gumbel_top_k_first_draws_follow_the_proposal():
    scores = torch.tensor([1.0, 2.0, 3.0, 4.0])
    firsts = np.bincount([stochastic_batch(scores, 2, generator=torch.Generator().manual_seed(s)).indices[0].item() for s in range(4000)], minlength=4)
    np.testing.assert_allclose(firsts / 4000, [0.1, 0.2, 0.3, 0.4], atol=0.03)
    selection = stochastic_batch(scores, 2, generator=torch.Generator().manual_seed(0))
    first = selection.indices[0].item()
    assert selection.probabilities[0].item() == pytest.approx(scores[first].item() / 10)
    assert selection.probabilities[1].item() == pytest.approx(scores[selection.indices[1]].item() / (10 - scores[first].item()))


@pytest.mark.parametrize("mode", ["power", "softmax", "softrank"])
def test_every_mode_records_probabilities(mode):
    selection = stochastic_batch(torch.rand(30, generator=torch.Generator().manual_seed(1)), 5, mode=mode, generator=torch.Generator().manual_seed(2))
    assert selection.probabilities.shape == (5,) and torch.all((selection.probabilities > 0) & (selection.probabilities <= 1))


def test_top_k_records_none_and_random_records_uniform():
    assert resolve_acquisition("bald").select(torch.rand(6), 2).probabilities is None
    chosen = resolve_acquisition("random").select(torch.zeros(6), 3, torch.Generator().manual_seed(0))
    np.testing.assert_allclose(chosen.probabilities.numpy(), [1 / 6, 1 / 5, 1 / 4])


# ---- active testing's proposal --------------------------------------------------------------
def test_expected_losses_in_closed_form():
    probs = np.array([[0.9, 0.1], [0.5, 0.5]])
    np.testing.assert_allclose(expected_loss(probs, "zero-one"), [0.1, 0.5])
    np.testing.assert_allclose(expected_loss(probs, "nll"), [-(0.9 * math.log(0.9) + 0.1 * math.log(0.1)), math.log(2)])
    np.testing.assert_allclose(expected_loss(np.array([0.5, 2.0]), "squared-error"), [0.5, 2.0])


def test_proposal_mixes_in_a_uniform_share():
    w = proposal_weights(np.array([0.0, 1.0, 3.0]), uniform_share=0.1)
    np.testing.assert_allclose(w, [0.1 / 3, 0.9 / 4 + 0.1 / 3, 0.9 * 3 / 4 + 0.1 / 3])
    assert w.sum() == pytest.approx(1.0)


# ---- the stopping rule ----------------------------------------------------------------------
def test_kappa_by_hand():
    a = np.array([0, 0, 1, 1])
    b = np.array([0, 1, 1, 1])
    # p_o = 3/4, p_e = (1/2)(1/4) + (1/2)(3/4) = 1/2, κ = (3/4 − 1/2)/(1/2) = 1/2
    assert cohen_kappa(a, b) == pytest.approx(0.5)
    assert cohen_kappa(a, a) == 1.0 and changed_share(a, b) == 0.25


def test_concordance_by_hand():
    a = np.array([1.0, 2.0, 3.0])
    assert concordance(a, a) == pytest.approx(1.0)
    # b = a + 1: s_ab = 2/3, s_a² = s_b² = 2/3, (ā − b̄)² = 1: 2 (2/3) / (4/3 + 1) = 4/7
    assert concordance(a, a + 1) == pytest.approx(4 / 7)


def test_stop_after_three_stable_pairs():
    assert THRESHOLD == 0.98  # chosen in studies/estimates (README_EXPERIMENTS.md)
    # kappas by hand, each from two rounds' predictions of a 4-item stop set (as test_kappa_by_hand)
    half = cohen_kappa(np.array([0, 0, 1, 1]), np.array([0, 1, 1, 1]))  # 1/2
    assert not stop_signal([half, 1.0, 1.0]).stop  # mean 5/6
    signal = stop_signal([half, 1.0, 1.0, 1.0])
    assert signal.stop and signal.mean_agreement == 1.0
    assert not stop_signal([0.96, 0.985, 0.99]).stop  # mean 0.9783 < 0.98
    assert stop_signal([0.975, 0.985, 0.985]).stop  # mean 0.9817
    assert not stop_signal([0.975, 0.985, 0.985], threshold=0.99).stop  # Bloodgood & Vijay-Shanker's 0.99
    assert stop_signal([1.0, 1.0]).mean_agreement is None


def test_packed_predictions_round_trip():
    labels = np.array([0, 3, 9, 255])
    assert pack_predictions(labels).startswith("u1:")
    np.testing.assert_array_equal(unpack_predictions(pack_predictions(labels)), labels)
    np.testing.assert_array_equal(unpack_predictions(pack_predictions(np.array([0, 300]))), [0, 300])
    means = np.array([0.5, -2.25])
    np.testing.assert_allclose(unpack_predictions(pack_predictions(means)), means)


def test_stop_set_is_fixed_and_bounded():
    np.testing.assert_array_equal(stop_set_positions(5, 10), np.arange(5))
    first = stop_set_positions(5000, 100)
    np.testing.assert_array_equal(first, stop_set_positions(5000, 100))
    assert len(first) == 100 and np.all(np.diff(first) > 0)
