"""Per-round estimates from store records (activebayes.round_estimates), the active-testing draw
and estimate (activebayes.active_testing), and debias weights (activebayes.debias), on records
built by hand."""

from __future__ import annotations

import itertools
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from activebayes.active_testing import (
    continue_draw,
    draw_evaluation_set,
    evaluation_estimate,
    evaluation_record,
    extended_record,
    population_tag,
    same_population,
)
from activebayes.debias import acquisition_weights, current_sample_weights, sample_weights, weighted_epoch_order
from activebayes.errors import ConfigError, ShapeError
from activebayes.estimates import lure_estimate, root_value
from activebayes.round_estimates import (
    DETERMINISTIC,
    pack_class_probabilities,
    round_estimate,
    unpack_class_probabilities,
)

CLASSES = ["a", "b"]


def query(rank, label, value, probability, probs=(0.8, 0.2)):
    prediction = {"label": label, "probability": max(probs), "probs": pack_class_probabilities(probs)}
    return SimpleNamespace(rank=rank, key=f"k{rank}", value=value, prediction=prediction, probability=probability)


def round_info(candidates=20):
    return SimpleNamespace(number=2, acquisition_settings={"candidates": candidates}, metrics={}, labelled_count=10)


def test_a_stochastic_round_is_its_lure_estimate():
    queries = [query(0, "a", "a", 0.1), query(1, "a", "b", 0.3), query(2, "b", "b", 0.05)]
    estimate = round_estimate(round_info(), queries, "classification", CLASSES)
    expected = lure_estimate([0.0, 1.0, 0.0], [0.1, 0.3, 0.05], 20, bounded=True)
    assert estimate.available and estimate.labels == 3 and estimate.pool == 20
    assert estimate.accuracy.value == pytest.approx(1 - expected.value)
    assert (estimate.accuracy.low, estimate.accuracy.high) == pytest.approx((1 - expected.high, 1 - expected.low))
    nll = lure_estimate([-math.log(0.8), -math.log(0.2), -math.log(0.2)], [0.1, 0.3, 0.05], 20)
    assert estimate.class_nll.value == pytest.approx(nll.value)


def test_top_k_has_no_estimate():
    queries = [query(0, "a", "a", None), query(1, "a", "b", None)]
    estimate = round_estimate(round_info(), queries, "classification", CLASSES)
    assert not estimate.available and estimate.reason == DETERMINISTIC


def test_the_answered_prefix_counts():
    queries = [query(0, "a", "a", 0.1), query(1, "a", None, 0.3), query(2, "b", "b", 0.05)]
    estimate = round_estimate(round_info(), queries, "classification", CLASSES)
    assert estimate.labels == 1


def test_an_auto_round_is_stratified():
    # two deterministic top-k items (one wrong) then two uniform draws from the 18 left (both right)
    queries = [query(0, "a", "b", None), query(1, "a", "a", None), query(2, "a", "a", 1 / 18), query(3, "a", "a", 1 / 17)]
    estimate = round_estimate(round_info(20), queries, "classification", CLASSES)
    assert estimate.accuracy.value == pytest.approx(1 - 1 / 20)
    assert estimate.labels == 4


def test_a_cold_start_and_an_old_round_have_none():
    cold = [SimpleNamespace(rank=0, key="k", value="a", prediction=None, probability=0.1)]
    assert "no model" in round_estimate(round_info(), cold, "classification", CLASSES).reason
    old = SimpleNamespace(number=1, acquisition_settings={}, metrics={}, labelled_count=5)
    assert "recorded before" in round_estimate(old, [query(0, "a", "a", 0.5)], "classification", CLASSES).reason


def test_regression_gives_rmse_and_gaussian_nll():
    queries = [SimpleNamespace(rank=i, key=f"k{i}", value=str(y), prediction={"mean": 1.0, "sd": 2.0}, probability=q)
               for i, (y, q) in enumerate([(2.0, 0.1), (0.0, 0.2)])]  # fmt: skip
    estimate = round_estimate(round_info(), queries, "regression", None)
    mse = lure_estimate([1.0, 1.0], [0.1, 0.2], 20, skewed=True)
    assert (estimate.rmse.low, estimate.rmse.high) == pytest.approx((math.sqrt(mse.low), math.sqrt(mse.high)))
    assert estimate.rmse.value == pytest.approx(root_value(mse.value, 0.0, mse.dof)) and estimate.rmse.value > math.sqrt(mse.value)
    nll = 0.5 * math.log(2 * math.pi * 4) + 1 / 8
    assert estimate.normal_nll.value == pytest.approx(lure_estimate([nll, nll], [0.1, 0.2], 20, nonnegative=False).value)


def test_class_probabilities_round_trip():
    text = pack_class_probabilities([0.98123456, 1e-7, 0.0188])
    assert text == "0.9812 1e-07 0.0188"
    assert unpack_class_probabilities(text) == [0.9812, 1e-07, 0.0188]
    assert pack_class_probabilities([math.nan, 1.0]) is None


# ---- active testing -------------------------------------------------------------------------
def test_the_draw_is_seeded_and_proposes_by_expected_loss():
    expected = np.array([0.0, 0.0, 0.5, 0.5, 0.0, 0.0])
    first, again = draw_evaluation_set(expected, 3, seed=4), draw_evaluation_set(expected, 3, seed=4)
    np.testing.assert_array_equal(first.positions, again.positions)
    # the first draw's q is w_i (the weights sum to 1): (1 − ε) e_i / Σe + ε / N
    w = 0.9 * expected / expected.sum() + 0.1 / 6
    assert first.probabilities[0] == pytest.approx(w[first.positions[0]])
    hits = sum(int(p) in (2, 3) for s in range(200) for p in draw_evaluation_set(expected, 1, seed=s).positions)
    assert hits > 150  # 2 × (0.45 + 0.1/6) ≈ 93 % of first draws


def test_evaluation_estimate_uses_the_answered_prefix():
    draw = draw_evaluation_set(np.array([0.2, 0.4, 0.1, 0.3]), 3, seed=0)
    keys = [f"k{p}" for p in draw.positions]
    predictions = [{"label": "a", "probability": 0.6, "probs": "0.6 0.4"}] * 3
    record = evaluation_record(keys, draw, predictions, labelled=10, loss="zero-one")
    assert not evaluation_estimate(record, {}, "classification", CLASSES).available
    labels = {keys[0]: "a", keys[1]: "b"}  # the third is unanswered
    estimate = evaluation_estimate(record, labels, "classification", CLASSES)
    expected = lure_estimate([0.0, 1.0], draw.probabilities[:2], 4, bounded=True)
    assert estimate.labels == 2 and estimate.accuracy.value == pytest.approx(1 - expected.value)
    assert estimate.partial and estimate.note == "provisional: the first 2 of the 3 evaluation items labelled"
    whole = evaluation_estimate(record, {**labels, keys[2]: "a"}, "classification", CLASSES)
    assert not whole.partial and whole.note is None and whole.asked == 3
    later = {k: {"label": "b", "probability": 0.7, "probs": "0.3 0.7"} for k in keys}
    assert evaluation_estimate(record, labels, "classification", CLASSES, later).accuracy.value == pytest.approx(
        1 - lure_estimate([1.0, 0.0], draw.probabilities[:2], 4, bounded=True).value
    )


# ---- debias -----------------------------------------------------------------------------------
def test_uniform_draws_give_unit_weights():
    order = [("a", 1 / 10, 10, 0), ("b", 1 / 9, 10, 1), ("c", 1 / 8, 8, 0)]
    assert acquisition_weights(order, 10) == pytest.approx({"a": 1.0, "b": 1.0, "c": 1.0})


def test_weights_follow_the_lure_formula():
    # N = 10, M = 3 (one label outside a round first); the round's draw j = 0 among N_t = 9 with q = 0.5
    weights = acquisition_weights([("x", 0.5, 9, 0), ("y", None, 9, 1)], 10, outside=1)
    assert weights["x"] == pytest.approx(1 + (10 - 3) / (10 - 2) * (1 / (9 * 0.5) - 1))
    assert weights["y"] == 1.0


def test_sample_weights_reach_training_only_inside_the_block():
    assert current_sample_weights(3) is None
    with sample_weights(np.array([1.0, 0.0, 3.0])):
        weights = current_sample_weights(3)
        with pytest.raises(ShapeError):
            current_sample_weights(4)
    assert current_sample_weights(3) is None
    order = weighted_epoch_order(weights, 4000, torch.Generator().manual_seed(0))
    counts = np.bincount(order.numpy(), minlength=3) / 4000
    np.testing.assert_allclose(counts, [0.25, 0.0, 0.75], atol=0.03)


def test_weighted_training_changes_the_fit_and_only_inside_the_block():
    from torch import nn

    from activebayes.training import TrainConfig, train

    def net() -> nn.Module:
        layer = nn.Linear(3, 2)
        with torch.no_grad():
            layer.weight.copy_(torch.tensor([[0.1, -0.2, 0.3], [0.0, 0.2, -0.1]]))
            layer.bias.zero_()
        return layer

    x = torch.randn(40, 3, generator=torch.Generator().manual_seed(0))
    y = (x[:, 0] > 0).long()
    config = TrainConfig(epochs=3, batch_size=8)
    plain = train(net(), x, y, config, seed=1, device="cpu")
    with sample_weights(np.where(y.numpy() == 1, 5.0, 0.1)):
        weighted = train(net(), x, y, config, seed=1, device="cpu")
    again = train(net(), x, y, config, seed=1, device="cpu")
    assert torch.equal(plain.weight, again.weight)  # no weights: training unchanged
    assert not torch.equal(plain.weight, weighted.weight)


# ---- the learning curve's band ----------------------------------------------------------------
def test_learning_figure_draws_the_estimate_band_beside_the_test_curve():
    from matplotlib.collections import PolyCollection

    from activebayes.report import Segment, learning_figure

    segment = Segment("mc-dropout + power-bald", (2, 3), ((10.0, 0.6), (20.0, 0.7)))
    band = [(10.0, 0.55, 0.3, 0.8), (20.0, 0.72, 0.5, 0.9)]
    axes = learning_figure({"p": [segment]}, estimate=band).axes[0]
    fills = [c for c in axes.collections if isinstance(c, PolyCollection)]
    assert len(fills) == 1
    vertices = fills[0].get_paths()[0].vertices
    assert vertices[:, 1].min() == pytest.approx(0.3) and vertices[:, 1].max() == pytest.approx(0.9)
    assert any("LURE" in t.get_text() for t in axes.get_legend().get_texts())
    alone = learning_figure({"p": []}, estimate=band).axes[0]  # no test split: the estimate alone
    assert len(alone.lines) == 1


# ---- extending an evaluation set ----------------------------------------------------------------
def test_lure_is_exactly_unbiased_over_a_draw_whose_proposal_changes_midway():
    # N = 5; 2 draws ∝ the first model's expected loss, then 2 more ∝ another proposal over the 3
    # items left (q among those left, as `continue_draw` draws): E[R̂_LURE of all 4] over every path = the mean
    from activebayes.estimates import proposal_weights

    losses = np.array([0.0, 1.0, 1.0, 0.0, 1.0])
    first, second = proposal_weights(np.array([0.1, 0.6, 0.2, 0.05, 0.3])), np.array([0.5, 0.1, 0.9, 0.3, 0.2])
    expectation = 0.0
    for order in itertools.permutations(range(5), 4):
        qs, left, p = [], list(range(5)), 1.0
        for step, i in enumerate(order):
            w = (first if step < 2 else second)[left]
            q = float(w[left.index(i)] / w.sum())
            qs.append(q)
            p *= q
            left.remove(i)
        expectation += p * lure_estimate(losses[list(order)], qs, 5).value
    assert expectation == pytest.approx(losses.mean(), abs=1e-12)


def test_continue_draw_gives_the_probability_among_the_items_left():
    record = evaluation_record(["k0", "k1"], draw_evaluation_set(np.array([0.2, 0.4, 0.1, 0.3, 0.5, 0.1]), 2, seed=0),
                               [{}, {}], labelled=5, loss="zero-one", population="tag")  # fmt: skip
    expected = np.array([0.5, 0.1, 0.2, 0.2])  # the 4 items left of N = 6
    more = continue_draw(record, expected, 2, seed=3)
    w = 0.9 * expected / expected.sum() + 0.1 / 4
    assert more.pool == 6 and more.probabilities[0] == pytest.approx(w[more.positions[0]])
    with pytest.raises(ConfigError, match="4 items left"):
        continue_draw(record, expected[:3], 1, seed=0)


def test_an_extended_draw_is_unbiased_by_simulation_and_keeps_one_model():
    rng = np.random.default_rng(1)
    n, first_b, more_b, draws = 120, 8, 12, 300
    wrong = (rng.random(n) < 0.2).astype(float)
    guess_a = np.where(wrong > 0, 0.6, 0.2) * rng.uniform(0.5, 1.5, n)  # the model that drew first
    guess_b = np.where(wrong > 0, 0.3, 0.25) * rng.uniform(0.5, 1.5, n)  # the refitted model's guesses
    keys = [f"k{i}" for i in range(n)]
    estimates = []
    for seed in range(draws):
        draw = draw_evaluation_set(guess_a, first_b, seed)
        record = evaluation_record([keys[p] for p in draw.positions], draw, [{"label": "x"}] * first_b, labelled=10,
                                   loss="zero-one", population="tag")  # fmt: skip
        left = np.setdiff1d(np.arange(n), draw.positions)
        more = continue_draw(record, guess_b[left], more_b, seed + 1000)
        new_keys = [keys[p] for p in left[more.positions]]
        predictions = {k: {"label": "x" if wrong[int(k[1:])] else "y", "probability": 0.6, "probs": "0.4 0.6"} for k in keys}
        full = extended_record(record, new_keys, more, predictions, labelled=10)
        assert full["parts"] == [first_b, more_b] and [i["q"] for i in full["items"][:first_b]] == draw.probabilities.tolist()
        assert all(i["prediction"] == predictions[i["key"]] for i in full["items"])  # one model for the whole set
        estimate = evaluation_estimate(full, {k: "y" for k in keys}, "classification", ["x", "y"])
        assert estimate.labels == first_b + more_b and estimate.pool == n
        estimates.append(1 - estimate.accuracy.value)
    values = np.asarray(estimates)
    assert abs(values.mean() - wrong.mean()) < 3 * values.std(ddof=1) / math.sqrt(draws)


def test_the_population_fingerprint_refuses_a_changed_pool():
    candidates, drawn = np.array([3, 4, 5, 7]), np.array([6, 2])
    record = {"pool": 6, "population": population_tag(np.array([2, 3, 4, 5, 6, 7])), "items": [{}, {}]}
    assert same_population(record, candidates[::-1], drawn) is None  # the order does not matter
    assert "changed" in same_population(record, candidates[:3], drawn)  # item 7 labelled for training
    assert "changed" in same_population(record, np.array([3, 4, 5, 8]), drawn)  # same count, another item
    appended = same_population(record, np.array([3, 4, 5, 7, 8, 9]), drawn)  # `pool add --append`: two more items
    assert "6 items then, 8 now" in appended and "rows appended" in appended
    assert "earlier version" in same_population({"pool": 6, "items": []}, candidates, drawn)


def test_status_shows_an_estimate_inside_its_possible_range():
    """LURE is unbiased but unbounded: status shows an accuracy of -6.61 at 0, marked, and
    a value inside [0, 1] as it is; a categorical NLL is only held at 0 from below, and a
    Gaussian NLL (a density above 1 gives a negative one) is never moved."""
    from activebayes.estimates import Estimate
    from activebayes.round_estimates import RANGES
    from activebayes_cli._estimates import interval_text, shown_value

    outside = Estimate(-6.61, 0.0, 0.42, 10, 500, "wilson")
    assert shown_value(outside, RANGES["accuracy"]) == 0.0
    assert interval_text(outside, RANGES["accuracy"]) == "0.000 [0.000, 0.420] (unbiased value -6.61, outside the possible range)"
    assert shown_value(Estimate(1.3, 0.8, 1.0, 10, 500, "wilson"), RANGES["accuracy"]) == 1.0
    inside = Estimate(0.8125, 0.7, 0.9, 10, 500, "wilson")
    assert interval_text(inside, RANGES["accuracy"]) == "0.812 [0.700, 0.900]"
    assert shown_value(Estimate(2.5, 1.0, 4.0, 10, 500, "wald"), RANGES["class_nll"]) == 2.5
    assert shown_value(Estimate(-0.2, 0.0, 0.4, 10, 500, "wald"), RANGES["class_nll"]) == 0.0
    gaussian = Estimate(-0.75, -1.5, 0.25, 10, 500, "wald")
    assert interval_text(gaussian, RANGES["normal_nll"]) == "-0.750 [-1.500, 0.250]"
    two_draws = Estimate(12.5, 2.5, math.inf, 10, 500, "chi2")  # under 3 random draws: no upper end, said so
    assert interval_text(two_draws, RANGES["rmse"]) == "12.500 [2.500, no upper end]"
    one_draw = Estimate(-0.5, -math.inf, math.inf, 1, 500, "sum")
    assert interval_text(one_draw, RANGES["normal_nll"]) == "-0.500 [no lower end, no upper end]"


def test_pool_estimate_figures_keep_the_unbiased_value_apart():
    """figures() gives the unbiased R̂ first (the studies read it); figures(in_range=True) moves it
    into the figure's range, unbiased_values() keeps it."""
    from activebayes.estimates import Estimate
    from activebayes.round_estimates import PoolEstimate

    e = PoolEstimate(accuracy=Estimate(-7.35, 0.0, 0.994, 2, 44920, "wilson"), class_nll=Estimate(46.161, 0.0, 628.946, 2, 44920, "wald"),
                     labels=2, pool=44920, asked=10, note="provisional")  # fmt: skip
    assert e.figures() == {"accuracy": [-7.35, 0.0, 0.994], "nll": [46.161, 0.0, 628.946]}
    assert e.figures(in_range=True) == {"accuracy": [0.0, 0.0, 0.994], "nll": [46.161, 0.0, 628.946]}
    assert e.unbiased_values() == {"accuracy": -7.35, "nll": 46.161}
    assert e.partial and not PoolEstimate(labels=10, asked=10).partial and not PoolEstimate(reason="none", asked=10).partial


def rnd_with(status, failure_reason=None, candidates=20):
    return SimpleNamespace(**{**vars(round_info(candidates)), "status": status, "failure_reason": failure_reason})


def test_a_partly_answered_round_is_provisional_and_says_how_many_answers_are_in():
    queries = [query(0, "a", "a", 0.1), query(1, "a", "b", 0.3), query(2, "a", None, 0.05), query(3, "b", None, 0.2)]
    estimate = round_estimate(rnd_with("queried"), queries, "classification", CLASSES)
    assert estimate.available and estimate.partial and (estimate.labels, estimate.asked) == (2, 4)
    assert estimate.note == "provisional: round still open, 2 of its 4 answers in"
    assert estimate.accuracy.value == pytest.approx(1 - lure_estimate([0.0, 1.0], [0.1, 0.3], 20, bounded=True).value)
    discarded = round_estimate(rnd_with("failed", "discarded by `activebayes round --restart-round`"), queries, "classification", CLASSES)
    assert discarded.note == "partial: round failed (discarded by `activebayes round --restart-round`) with 2 of its 4 answers in"
    answered = [query(0, "a", "a", 0.1), query(1, "a", "b", 0.3)]
    whole = round_estimate(rnd_with("done"), answered, "classification", CLASSES)
    assert not whole.partial and whole.note is None and whole.asked == 2


@pytest.mark.parametrize(
    "status, reason, asked, words",
    [
        ("queried", None, True, "waiting for answers (none of its 2 answers in)"),
        ("failed", "discarded by `activebayes round --restart-round`", True,
         "not available: round failed (discarded by `activebayes round --restart-round`) with none of its 2 answers in"),
        ("failed", "discarded by `activebayes round --restart-round`", False,
         "not available: round failed (discarded by `activebayes round --restart-round`) before it asked anything"),
        ("fitted", None, False, "not available yet: round interrupted while 'fitted', before it asked anything; resuming it asks its queries"),
        ("scored", None, True, "not available yet: round interrupted while 'scored', before asking its 2 queries; resuming it asks them"),
        ("failed", "RuntimeError: out of memory", False, "not available: round failed (RuntimeError: out of memory) before it asked anything"),
    ],
)  # fmt: skip
def test_a_round_without_answers_says_what_became_of_it(status, reason, asked, words):
    queries = [query(0, "a", None, 0.1), query(1, "a", None, 0.3)] if asked else []
    estimate = round_estimate(rnd_with(status, reason), queries, "classification", CLASSES)
    assert not estimate.available and estimate.reason == words


def test_the_headline_is_the_latest_whole_estimate():
    from activebayes.round_estimates import PoolEstimate, latest_estimate

    whole, partial, none = PoolEstimate(labels=4, asked=4), PoolEstimate(labels=2, asked=4, note="provisional"), PoolEstimate(reason="x")
    assert latest_estimate([(2, whole), (3, partial), (4, none)]) == (2, whole)
    assert latest_estimate([(3, partial), (4, none)]) == (3, partial)  # no whole one: the partial one, with its note
    assert latest_estimate([(4, none)]) is None
