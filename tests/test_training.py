"""train: mini-batches of equal size, every item once per epoch."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from activebayes.training import TrainConfig, train


class Recorder(nn.Module):
    """A linear model that records the items of every training batch (x holds item ids)."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(1, 2)
        self.batches: list[list[int]] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            self.batches.append(x[:, 0].long().tolist())
        return self.linear(x)


@pytest.mark.parametrize(("n", "batch_size", "sizes"), [(130, 128, [65, 65]), (260, 128, [87, 87, 86]),
                                                       (256, 128, [128, 128]), (20, 128, [20]), (7, 3, [3, 2, 2])])  # fmt: skip
def test_epochs_split_into_equal_batches(n, batch_size, sizes):
    x = torch.arange(n, dtype=torch.float32)[:, None]
    model = Recorder()
    train(model, x, torch.zeros(n, dtype=torch.long), TrainConfig(epochs=2, batch_size=batch_size), seed=0, device="cpu")
    assert [len(b) for b in model.batches] == sizes * 2  # ⌈n/B⌉ steps an epoch, sizes within one item
    for epoch in (model.batches[: len(sizes)], model.batches[len(sizes) :]):
        assert sorted(i for b in epoch for i in b) == list(range(n))  # every item once per epoch
    assert model.batches[: len(sizes)] != model.batches[len(sizes) :] or n <= 1  # reshuffled each epoch
