"""Batch selectors (top_k, stochastic_batch, bald_prefilter) and the CLI registry."""

from __future__ import annotations

import pytest
import torch

from activebayes import ConfigError, GaussianPredictive, Predictive, ShapeError
from activebayes.acquisition import (
    ACQUISITIONS,
    Acquisition,
    BatchSelection,
    bald,
    bald_prefilter,
    batch_bald,
    resolve_acquisition,
    stochastic_batch,
    top_k,
)

SCORES = torch.tensor([0.5, 2.0, 1.0, 4.0])


def test_top_k_picks_largest_best_first():
    sel = top_k(torch.tensor([0.1, 0.7, 0.3, 0.9]), 2)
    assert isinstance(sel, BatchSelection) and len(sel) == 2
    assert sel.indices.tolist() == [3, 1] and sel.indices.dtype == torch.long
    torch.testing.assert_close(sel.scores, torch.tensor([0.9, 0.7]))
    assert len(top_k(SCORES, 0)) == 0


class Scores:
    """A posterior whose one sample's p(class 0 | x) is x: scores passed through `score_pool`."""

    def predict(self, x, n_samples=None):
        return Predictive(torch.stack([x, 1 - x], -1)[None])


def test_top_k_breaks_ties_by_position_as_score_pool_does():
    from activebayes.scoring import score_pool

    assert top_k(torch.zeros(10), 3).indices.tolist() == [0, 1, 2]  # torch.topk gave [8, 6, 7]
    assert top_k(torch.tensor([0.5, 0.9, 0.9, 0.1, 0.9]), 2).indices.tolist() == [1, 2]
    coarse = torch.randint(0, 4, (3000,), generator=torch.Generator().manual_seed(0)).float() / 4  # 4 values: ties everywhere
    expected = top_k(coarse, 25).indices.tolist()
    for batch_size in (7, 256, 3000):
        streamed = score_pool(Scores(), coarse, lambda p: p.probs[0, :, 0], batch_size=batch_size, top_k=25, device="cpu")
        assert streamed.indices.tolist() == expected


@pytest.mark.parametrize("select", [lambda s: top_k(s, 1), lambda s: stochastic_batch(s, 1)])
def test_a_nan_score_is_refused_not_ranked_first(select):
    with pytest.raises(ShapeError, match=r"1 of 3 are NaN \(the first at position 1\)"):
        select(torch.tensor([0.1, float("nan"), 0.5]))


def test_draw_probabilities_of_a_cold_draw_are_numbers():
    """β = 1,000 on power: the weights are s^1000, exp(−1,504) beside 1 (0 in float64), and the
    second draw took 0/0 = NaN before the sums were taken in log space."""
    scores = torch.tensor([0.1, 0.2, 0.9])
    cold = stochastic_batch(scores, 2, beta=1e3, generator=torch.Generator().manual_seed(0))
    assert cold.indices.tolist() == [2, 1]
    torch.testing.assert_close(cold.probabilities, torch.tensor([1.0, 1.0], dtype=torch.float64))
    frozen = stochastic_batch(scores, 2, beta=float("inf"))  # the limit itself: top_k, drawn with certainty
    assert frozen.indices.tolist() == [2, 1] and frozen.probabilities.tolist() == [1.0, 1.0]
    assert stochastic_batch(torch.zeros(4), 2, mode="softmax", beta=float("inf")).indices.tolist() == [0, 1]


@pytest.mark.parametrize("k", [-1, 5, 1.5, True])
def test_bad_k_raises(k):
    with pytest.raises(ShapeError, match="k"):
        top_k(SCORES, k)
    with pytest.raises(ShapeError, match="k"):
        stochastic_batch(SCORES, k)


def test_scores_must_be_one_dimensional():
    with pytest.raises(ShapeError, match=r"scores: expected a tensor \[N\]"):
        top_k(torch.ones(2, 3), 1)


@pytest.mark.parametrize("mode", ["power", "softmax", "softrank"])
def test_stochastic_batch_is_seeded_and_without_replacement(mode):
    scores = torch.rand(500, generator=torch.Generator().manual_seed(0))
    a = stochastic_batch(scores, 50, mode=mode, generator=torch.Generator().manual_seed(1))
    b = stochastic_batch(scores, 50, mode=mode, generator=torch.Generator().manual_seed(1))
    c = stochastic_batch(scores, 50, mode=mode, generator=torch.Generator().manual_seed(2))
    assert torch.equal(a.indices, b.indices) and not torch.equal(a.indices, c.indices)
    assert len(set(a.indices.tolist())) == 50
    torch.testing.assert_close(a.scores, scores[a.indices])


@pytest.mark.parametrize(
    "mode, beta, expected",
    [
        ("power", 1.0, SCORES / SCORES.sum()),  # p_i ∝ s_i
        ("power", 2.0, SCORES**2 / (SCORES**2).sum()),
        ("softmax", 1.0, torch.softmax(SCORES, 0)),  # p_i ∝ exp(s_i)
        ("softrank", 1.0, (1 / torch.tensor([4.0, 2, 3, 1])) / (1 / torch.tensor([4.0, 2, 3, 1])).sum()),
    ],
)
def test_stochastic_batch_first_draw_follows_the_paper_distributions(mode, beta, expected):
    g = torch.Generator().manual_seed(3)
    draws = 1500
    counts = torch.zeros(4)
    for _ in range(draws):
        counts[stochastic_batch(SCORES, 1, mode=mode, beta=beta, generator=g).indices[0]] += 1
    se = (expected * (1 - expected) / draws).sqrt()
    assert bool(((counts / draws - expected).abs() < 4 * se + 1e-3).all()), (counts / draws, expected)


def test_stochastic_batch_limits():
    scores = torch.tensor([0.0, 0.3, 0.0, 0.9, 0.1])
    for seed in range(20):  # zero scores are never drawn by power while positive ones remain
        sel = stochastic_batch(scores, 3, mode="power", generator=torch.Generator().manual_seed(seed))
        assert sorted(sel.indices.tolist()) == [1, 3, 4]
    cold = stochastic_batch(scores, 2, mode="softmax", beta=1e4, generator=torch.Generator().manual_seed(0))
    assert cold.indices.tolist() == [3, 1]  # β -> ∞ is top-k
    with pytest.raises(ConfigError, match="mode"):
        stochastic_batch(scores, 1, mode="boltzmann")
    with pytest.raises(ConfigError, match="beta"):
        stochastic_batch(scores, 1, beta=-1.0)


def test_bald_prefilter_pattern():
    g = torch.Generator().manual_seed(4)
    probs = torch._sample_dirichlet(torch.full((8, 40, 3), 0.5), generator=g)
    keep = bald_prefilter(probs, 10)
    assert keep.tolist() == top_k(bald(probs), 10).indices.tolist()
    assert torch.equal(bald_prefilter(bald(probs), 10), keep)
    assert len(bald_prefilter(probs, 100)) == 40
    chosen = keep[batch_bald(Predictive(probs).candidates(keep), 3).indices]
    assert chosen[0].item() == keep[0].item()  # the first BatchBALD pick is the best BALD
    assert set(chosen.tolist()) <= set(keep.tolist())


def test_registry_resolves_every_cli_name():
    names = [
        "random", "variance", "mean-std", "variation-ratio", "entropy", "bald", "margin",
        "least-confidence", "eig", "batch-bald", "power-bald", "softmax-bald", "softrank-bald", "power-entropy",
        "power-margin",
    ]  # fmt: skip
    # nipv selects with the model (tests/test_nipv.py); epig scores against targets (tests/test_epig.py)
    # auto chooses one of the others per round (tests/test_first_batch_and_auto.py)
    assert sorted(ACQUISITIONS) == sorted([*names, "nipv", "epig", "power-epig", "auto"])
    g = torch.Generator().manual_seed(5)
    probs = torch._sample_dirichlet(torch.full((6, 30, 4), 0.7), generator=g)
    for name in names:
        acq = resolve_acquisition(name)
        assert isinstance(acq, Acquisition) and acq.name == name
        sel = acq.select(probs, 4, torch.Generator().manual_seed(0))
        again = acq.select(probs, 4, torch.Generator().manual_seed(0))
        assert isinstance(sel, BatchSelection) and len(sel) == 4 and torch.equal(sel.indices, again.indices)
        assert len(set(sel.indices.tolist())) == 4
        if acq.needs_joint:
            assert acq.score is None and name == "batch-bald"
            torch.testing.assert_close(acq.prefilter_score(probs), bald(probs))
        else:
            scores = acq.score(probs)
            assert scores.shape == (30,)
            assert torch.equal(acq.select(scores, 4, torch.Generator().manual_seed(0)).indices, sel.indices)
    assert resolve_acquisition("least_confidence").name == "least-confidence"
    assert resolve_acquisition(" BALD ").name == "bald"


def test_registry_semantics():
    probs = torch._sample_dirichlet(torch.full((6, 30, 4), 0.7), generator=torch.Generator().manual_seed(6))
    torch.testing.assert_close(resolve_acquisition("bald").select(probs, 5).scores, bald(probs).topk(5).values)
    assert torch.equal(resolve_acquisition("random").score(probs), torch.zeros(30))
    gauss = GaussianPredictive(torch.randn(3, 8), torch.ones(3, 8))
    assert resolve_acquisition("eig").score(gauss).shape == (8,)
    with pytest.raises(ShapeError, match="scores are not enough"):
        resolve_acquisition("batch-bald").select(bald(probs), 2)


@pytest.mark.parametrize("name", ["bold", "", "batchbald", 3])
def test_registry_rejects_unknown_names(name):
    with pytest.raises(ConfigError, match="choose one of random, variance.*power-entropy"):
        resolve_acquisition(name)


def test_the_design_names_are_importable():
    """DESIGN.md names `random` and `nipv` among the acquisition functions."""
    import activebayes.acquisition as acquisition

    assert acquisition.random is acquisition.random_scores and "random" not in acquisition.__all__  # a star import keeps stdlib random
    assert callable(acquisition.nipv) and callable(acquisition.nipv_select)


def test_power_margin_draws_by_one_minus_the_margin_and_records_its_proposal():
    """power-margin: margin's scores 1 − (p̄_(1) − p̄_(2)), drawn by power sampling, so a round
    records each draw's probability (what the estimates without a test set weight by) where greedy
    margin records none. Hand case: mean probabilities [0.5, 0.5], [0.9, 0.1], [1, 0] score 1,
    0.2 and 0: the first draw takes item 0 with probability 1 / 1.2, and item 2 is never drawn."""
    probs = torch.tensor([[[0.5, 0.5], [0.9, 0.1], [1.0, 0.0]]])  # [S=1, N=3, C=2]
    acquisition = resolve_acquisition("power-margin")
    scores = acquisition.score(probs)
    torch.testing.assert_close(scores, torch.tensor([1.0, 0.2, 0.0]))
    firsts = [acquisition.select(scores, 1, torch.Generator().manual_seed(s)) for s in range(400)]
    assert all(sel.indices.tolist() != [2] for sel in firsts)
    q = {sel.indices.item(): sel.probabilities.item() for sel in firsts}
    assert q == pytest.approx({0: 1 / 1.2, 1: 0.2 / 1.2})
    assert resolve_acquisition("margin").select(scores, 1).probabilities is None
