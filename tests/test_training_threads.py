"""cli/_threads.training_threads: a round trains a small MLP on one intra-op thread, and leaves
torch's threads alone for a convolutional or a large network (a user's --model factory)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from activebayes.nets import mlp
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
    with training_threads(model_fn):
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
