"""score_pool: streaming equals scoring the whole pool at once, whatever the pool's container."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils.data import TensorDataset

from activebayes import ConfigError, Predictive, ShapeError
from activebayes.nets import mlp
from activebayes.posteriors import MCDropout
from activebayes.training import TrainConfig
from activebayes.scoring import PoolScores, score_pool


class CountingPosterior:
    """probs[s, n] = softmax(x_n · w_s) with fixed w [S, D, C]; records every batch it sees."""

    def __init__(self, n_samples: int = 4, d: int = 3, c: int = 3) -> None:
        self.w = torch.randn(n_samples, d, c, generator=torch.Generator().manual_seed(0))
        self.batches: list[int] = []
        self.devices: list[torch.device] = []

    def to(self, device):
        self.w = self.w.to(device)
        self.devices.append(torch.device(device))
        return self

    def predict(self, x, n_samples=None):
        self.batches.append(x.shape[0])
        w = self.w if n_samples is None else self.w[:n_samples]
        return Predictive(torch.softmax(torch.einsum("nd,sdc->snc", x, w), -1))


@pytest.fixture(scope="module")
def pool():
    return torch.randn(103, 3, generator=torch.Generator().manual_seed(1))


def test_streamed_scores_equal_whole_pool_scores(pool, bald):
    posterior = CountingPosterior()
    whole = bald(posterior.predict(pool))
    progress = []
    result = score_pool(posterior, pool, bald, batch_size=25, device="cpu", progress=lambda d, t: progress.append((d, t)))
    assert isinstance(result, PoolScores)
    assert torch.equal(result.indices, torch.arange(103))
    torch.testing.assert_close(result.scores, whole, rtol=1e-5, atol=1e-7)
    assert posterior.batches[1:] == [25, 25, 25, 25, 3]  # never more than one batch at a time
    assert progress == [(25, 103), (50, 103), (75, 103), (100, 103), (103, 103)]
    assert posterior.devices == [torch.device("cpu")]
    assert result.scores.device.type == "cpu"


def test_running_top_k_equals_top_k_of_all_scores(pool, bald):
    posterior = CountingPosterior()
    everything = score_pool(posterior, pool, bald, batch_size=1000, device="cpu").scores
    best = score_pool(posterior, pool, bald, batch_size=10, device="cpu", top_k=7)
    assert len(best) == 7
    expected = torch.sort(everything, descending=True, stable=True)
    assert torch.equal(best.indices, expected.indices[:7])
    torch.testing.assert_close(best.scores, expected.values[:7])
    assert len(score_pool(posterior, pool[:5], bald, device="cpu", top_k=50)) == 5


def test_ties_keep_the_lower_index_whatever_the_batch_size():
    constant = lambda pred: torch.ones(pred.n_candidates)  # noqa: E731 - every item ties
    x = torch.randn(30, 3)
    for batch_size in (1, 4, 30):
        best = score_pool(CountingPosterior(), x, constant, batch_size=batch_size, device="cpu", top_k=5)
        assert best.indices.tolist() == [0, 1, 2, 3, 4]


def test_numpy_memmap_and_dataset_pools(pool, bald, tmp_path):
    posterior = CountingPosterior()
    expected = score_pool(posterior, pool, bald, device="cpu").scores
    path = tmp_path / "pool.npy"
    np.save(path, pool.numpy().astype(np.float64))  # float64 on disk is cast to float32
    memmap = np.load(path, mmap_mode="r")
    torch.testing.assert_close(score_pool(posterior, memmap, bald, batch_size=16, device="cpu").scores, expected)
    dataset = TensorDataset(pool, torch.zeros(103))  # items are (x, y)
    torch.testing.assert_close(score_pool(posterior, dataset, bald, batch_size=16, device="cpu").scores, expected)


def test_n_samples_is_passed_to_the_posterior(pool):
    seen = []
    score_pool(CountingPosterior(), pool, lambda p: seen.append(p.n_samples) or torch.zeros(p.n_candidates), n_samples=2, device="cpu")
    assert seen == [2]


def test_mc_dropout_pool_scores_do_not_depend_on_batch_size(bald):
    x = torch.randn(80, 4, generator=torch.Generator().manual_seed(2))
    y = (x[:, 0] > 0).long()
    posterior = MCDropout(mlp(4, 2, hidden=(16,)), n_samples=10, train=TrainConfig(epochs=2), seed=0, device="cpu").fit(x, y)
    small = score_pool(posterior, x, bald, batch_size=7, device="auto").scores
    large = score_pool(posterior, x, bald, batch_size=80, device="auto").scores
    torch.testing.assert_close(small, large, rtol=1e-5, atol=1e-6)
    assert small.std() > 0


def test_bad_arguments_are_refused(pool):
    posterior = CountingPosterior()
    with pytest.raises(ConfigError, match="batch_size"):
        score_pool(posterior, pool, lambda p: torch.zeros(p.n_candidates), batch_size=0, device="cpu")
    with pytest.raises(ConfigError, match="top_k"):
        score_pool(posterior, pool, lambda p: torch.zeros(p.n_candidates), top_k=0, device="cpu")
    with pytest.raises(ShapeError, match="acquisition"):
        score_pool(posterior, pool, lambda p: torch.zeros(2), device="cpu")
    with pytest.raises(ShapeError, match="NaN"):
        score_pool(posterior, pool, lambda p: torch.full((p.n_candidates,), float("nan")), device="cpu")
    with pytest.raises(ShapeError, match="pool"):
        score_pool(posterior, 3.0, lambda p: torch.zeros(p.n_candidates), device="cpu")
