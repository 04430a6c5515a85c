"""cli/_threads.training_threads: a round trains a small MLP on one intra-op thread, and leaves
torch's threads alone for a convolutional or a large network (a user's --model factory); the
network the posterior builds decides, so no network is built only to look at it."""

from __future__ import annotations

import pickle

import pytest
import torch
from torch import nn

from activebayes.nets import mlp
from activebayes.posteriors import resolve_posterior
from activebayes_cli._model import SizedFit
from activebayes_cli._threads import SMALL_NETWORK, training_threads


@pytest.fixture
def two_threads(monkeypatch):
    """torch at 2 intra-op threads and OMP_NUM_THREADS unset, restored after."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def _threads_inside(model_fn) -> int:
    """torch's threads in a training_threads block after its factory built the first network."""
    with training_threads(model_fn) as build:
        build()
        return torch.get_num_threads()


def test_a_small_mlp_trains_on_one_thread_and_the_threads_come_back(two_threads):
    assert _threads_inside(mlp(326, 5, hidden=(128, 128), dropout=0.5)) == 1
    assert torch.get_num_threads() == 2


def test_a_convolutional_network_keeps_torch_s_threads(two_threads):
    assert _threads_inside(lambda: nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.LazyLinear(10))) == 2


def test_an_mlp_over_the_size_limit_keeps_torch_s_threads(two_threads):
    width = SMALL_NETWORK // 1000 + 1  # 1000 inputs x width outputs: just over the limit
    assert _threads_inside(lambda: nn.Sequential(nn.Linear(1000, width))) == 2
    assert _threads_inside(lambda: nn.Sequential(nn.Linear(1000, width - 2))) == 1


def test_the_threads_change_only_at_the_first_build_and_not_after_the_block(two_threads):
    with training_threads(mlp(4, 2)) as build:
        assert torch.get_num_threads() == 2  # nothing built yet: nothing decided
        build()
        assert torch.get_num_threads() == 1
    torch.set_num_threads(2)
    build()  # a refit of the posterior after the block
    assert torch.get_num_threads() == 2


def _linear() -> nn.Module:
    return nn.Linear(3, 2)


def test_the_factory_pickles_as_the_plain_one():
    with training_threads(_linear) as build:
        assert pickle.loads(pickle.dumps(build)) is _linear  # a Ray worker's copy changes no threads


def test_a_round_s_fit_builds_the_network_once_and_trains_it_on_one_thread(two_threads):
    built: list[int] = []
    seen: list[int] = []

    def factory() -> nn.Module:  # a small MLP with dropout that records torch's threads at each forward pass
        built.append(1)
        network = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Dropout(0.5), nn.Linear(8, 2))
        network.register_forward_pre_hook(lambda module, inputs: seen.append(torch.get_num_threads()))
        return network

    x, y = torch.randn(8, 3), torch.tensor([0, 1] * 4)
    SizedFit(resolve_posterior("mc-dropout"), factory, {"device": "cpu"}, seed=0, epochs=1).fit(x, y)
    assert len(built) == 1  # the posterior's own network; none built only to inspect it
    assert seen and set(seen) == {1}
    assert torch.get_num_threads() == 2
