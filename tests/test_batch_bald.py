"""BatchBALD: closed forms, brute-force joint entropies, and batchbald-redux as the reference."""

from __future__ import annotations

import functools
import itertools
import math

import pytest
import torch

from activebayes import GaussianPredictive, Predictive, ShapeError
from activebayes.acquisition import bald, batch_bald, joint_mutual_information, top_k


def H(*p: float) -> float:
    return -sum(x * math.log(x) for x in p if x > 0)


def dirichlet(S: int, N: int, C: int, seed: int, concentration: float = 1.0, dtype=torch.float64) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    alpha = (0.1 + concentration * torch.rand(N, C, generator=g, dtype=torch.float64)).expand(S, N, C).contiguous()
    return torch._sample_dirichlet(alpha, generator=g).to(dtype)


def clustered(S: int, N: int, C: int, seed: int, clusters: int = 10) -> torch.Tensor:
    """Near-duplicate candidates in clusters sharing a latent per sample (see bench/batch_bald.py)."""
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(S, 4, generator=g, dtype=torch.float64)
    cluster = torch.arange(N) * clusters // N
    A = torch.randn(clusters, C, 4, generator=g, dtype=torch.float64)
    logits = torch.einsum("ncd,sd->snc", A[cluster] + 0.1 * torch.randn(N, C, 4, generator=g, dtype=torch.float64), z)
    return torch.softmax(logits + 0.3 * torch.randn(N, C, generator=g, dtype=torch.float64), -1)


@pytest.fixture(scope="module")
def redux():
    import batchbald_redux.batchbald as bb
    import batchbald_redux.joint_entropy as je
    from tqdm.auto import tqdm

    import toma

    # Silence its progress bars and skip toma's gc.collect() before every chunked call: both cost
    # time only (a second per call inside pytest), not results.
    saved = bb.tqdm, je.tqdm, toma.gc_cuda
    bb.tqdm = je.tqdm = functools.partial(tqdm, disable=True)
    toma.gc_cuda = lambda: None
    yield bb.get_batchbald_batch
    bb.tqdm, je.tqdm, toma.gc_cuda = saved


def brute_force_joint_mi(probs: torch.Tensor, weights: torch.Tensor, indices: list[int]) -> float:
    """I[y_B; θ] by enumerating every label configuration in Python."""
    S, _, C = probs.shape
    joint_h = 0.0
    for ys in itertools.product(range(C), repeat=len(indices)):
        p = sum(float(weights[s]) * math.prod(float(probs[s, i, y]) for i, y in zip(indices, ys)) for s in range(S))
        joint_h -= p * math.log(p) if p > 0 else 0.0
    cond = sum(float(weights[s]) * H(*probs[s, i].tolist()) for s in range(S) for i in indices)
    return joint_h - cond


@pytest.mark.parametrize("weighted", [False, True])
def test_k_one_is_argmax_bald(weighted):
    probs = dirichlet(12, 80, 5, seed=0)
    weights = torch.softmax(torch.randn(12, generator=torch.Generator().manual_seed(1), dtype=torch.float64), 0)
    pred = Predictive(probs, weights if weighted else None)
    sel = batch_bald(pred, 1)
    scores = bald(pred)
    assert sel.indices.tolist() == [int(scores.argmax())]
    torch.testing.assert_close(sel.scores, scores.max()[None])


@pytest.mark.parametrize("seed", range(4))
def test_matches_batchbald_redux_where_both_are_exact(redux, seed):
    probs = dirichlet(20, 60, 10, seed=seed)
    ref = redux(probs.log().permute(1, 0, 2).contiguous(), 3, 1000, dtype=torch.float64)
    reference = torch.tensor(ref.scores, dtype=torch.float64)
    for lazy in (True, False):
        ours = batch_bald(probs, 3, lazy=lazy, max_joint_configs=1000)
        assert ours.indices.tolist() == ref.indices
        # batchbald-redux reports the joint MI of the batch so far: the cumulative sum of our gains.
        torch.testing.assert_close(ours.scores.cumsum(0), reference, atol=1e-9, rtol=0)
    # float32 input: the same batch, scores to float32 accuracy.
    ours32 = batch_bald(probs.float(), 3, max_joint_configs=1000)
    assert ours32.indices.tolist() == ref.indices
    torch.testing.assert_close(ours32.scores.cumsum(0).double(), reference, atol=1e-5, rtol=0)


@pytest.mark.parametrize("seed", range(2))
def test_weights_equal_replicated_samples_in_batchbald_redux(redux, seed):
    probs = dirichlet(6, 40, 10, seed=10 + seed)
    counts = torch.tensor([1, 3, 2, 1, 2, 1])
    weights = counts.double() / counts.sum()
    replicated = probs[torch.arange(6).repeat_interleave(counts)]
    ref = redux(replicated.log().permute(1, 0, 2).contiguous(), 3, 1000, dtype=torch.float64)
    ours = batch_bald(Predictive(probs, weights), 3)
    assert ours.indices.tolist() == ref.indices
    torch.testing.assert_close(ours.scores.cumsum(0), torch.tensor(ref.scores, dtype=torch.float64), atol=1e-9, rtol=0)


def test_zero_weight_sample_is_ignored():
    probs = dirichlet(5, 30, 4, seed=20)
    weights = torch.tensor([0.25, 0.0, 0.25, 0.25, 0.25], dtype=torch.float64)
    a = batch_bald(Predictive(probs, weights), 4)
    b = batch_bald(probs[[0, 2, 3, 4]], 4)
    assert a.indices.tolist() == b.indices.tolist()
    torch.testing.assert_close(a.scores, b.scores)


def test_gains_sum_to_the_brute_force_joint_information():
    probs = dirichlet(5, 12, 3, seed=30)
    weights = torch.tensor([0.1, 0.3, 0.2, 0.15, 0.25], dtype=torch.float64)
    pred = Predictive(probs, weights)
    sel = batch_bald(pred, 3)
    expected = brute_force_joint_mi(probs, weights, sel.indices.tolist())
    assert sel.scores.sum().item() == pytest.approx(expected, abs=1e-10)
    assert joint_mutual_information(pred, sel.indices).item() == pytest.approx(expected, abs=1e-10)
    # Monte-Carlo branch of joint_mutual_information agrees with the enumeration.
    g = torch.Generator().manual_seed(0)
    mc = joint_mutual_information(pred, sel.indices, max_joint_configs=1, num_samples=100_000, generator=g)
    assert mc.item() == pytest.approx(expected, abs=0.02)


def test_duplicates_closed_form():
    # S=3 equally weighted samples; item 1 repeats item 0, item 2 separates samples 1 and 2.
    probs = torch.tensor(
        [
            [[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]],
            [[0.0, 1.0], [0.0, 1.0], [1.0, 0.0]],
            [[0.0, 1.0], [0.0, 1.0], [0.1, 0.9]],
        ]
    )
    assert top_k(bald(probs), 2).indices.tolist() == [0, 1]
    sel = batch_bald(probs, 3)
    assert sel.indices.tolist() == [0, 2, 1]
    # gain of item 2 given y_0: with y_0 = 1 (prob 2/3), θ is sample 1 or 2, y_2 ~ (0.55, 0.45).
    expected = (2 / 3) * H(0.55, 0.45) - (1 / 3) * H(0.1, 0.9)
    torch.testing.assert_close(sel.scores, torch.tensor([H(1 / 3, 2 / 3), expected, 0.0]), atol=1e-6, rtol=0)


def test_lazy_equals_full_greedy_and_chunking_does_not_matter():
    probs = clustered(16, 200, 4, seed=40)
    full = batch_bald(probs, 5, lazy=False, max_joint_configs=4**4)
    lazy = batch_bald(probs, 5, max_joint_configs=4**4)
    tiny_chunks = batch_bald(probs, 5, chunk_size=1, max_joint_configs=4**4)
    assert full.indices.tolist() == lazy.indices.tolist() == tiny_chunks.indices.tolist()
    torch.testing.assert_close(full.scores, lazy.scores)
    torch.testing.assert_close(full.scores, tiny_chunks.scores)
    assert bool((full.scores[1:] <= full.scores[:-1] + 1e-12).all())  # submodular: gains never grow
    # and it beats top-k BALD, which piles into one cluster.
    greedy_top = top_k(bald(probs), 5).indices
    assert joint_mutual_information(probs, full.indices) > joint_mutual_information(probs, greedy_top) + 0.1


def test_sampled_configurations_are_seeded_and_close_to_exact():
    probs = clustered(20, 150, 5, seed=50)
    exact = batch_bald(probs, 4, max_joint_configs=5**4)
    run = functools.partial(batch_bald, probs, 4, max_joint_configs=5, num_samples=20_000)
    a = run(generator=torch.Generator().manual_seed(1))
    b = run(generator=torch.Generator().manual_seed(1))
    assert a.indices.tolist() == b.indices.tolist() and torch.equal(a.scores, b.scores)
    # gains are estimates now; the batch is as informative as the exact greedy one.
    mi_exact = joint_mutual_information(probs, exact.indices).item()
    mi_sampled = joint_mutual_information(probs, a.indices).item()
    assert mi_sampled >= mi_exact - 0.02
    assert a.scores.sum().item() == pytest.approx(mi_sampled, abs=0.03)


def test_float32_one_hot_probabilities_stay_finite():
    labels = torch.randint(0, 10, (8, 50), generator=torch.Generator().manual_seed(60))
    probs = torch.nn.functional.one_hot(labels, 10).float()  # exact 0 and 1
    for max_configs in (10_000, 1):
        g = torch.Generator().manual_seed(0)
        sel = batch_bald(probs, 6, max_joint_configs=max_configs, num_samples=500, generator=g)
        assert bool(torch.isfinite(sel.scores).all()) and len(set(sel.indices.tolist())) == 6
        assert sel.scores.dtype == torch.float32
    # 8 samples are told apart by 3 binary-ish questions at most: the joint MI is log 8.
    assert batch_bald(probs, 6).scores.sum().item() == pytest.approx(math.log(8), abs=1e-4)


def test_edge_cases_and_errors():
    probs = dirichlet(4, 5, 3, seed=70)
    assert len(batch_bald(probs, 0)) == 0
    assert sorted(batch_bald(probs, 5).indices.tolist()) == list(range(5))
    with pytest.raises(ShapeError, match="k"):
        batch_bald(probs, 6)
    with pytest.raises(ShapeError, match="num_samples"):
        batch_bald(probs, 2, num_samples=0)
    with pytest.raises(ShapeError, match="chunk_size"):
        batch_bald(probs, 2, chunk_size=0)
    with pytest.raises(ShapeError, match="GaussianPredictive"):
        batch_bald(GaussianPredictive(torch.zeros(2, 3), torch.ones(2, 3)), 1)
