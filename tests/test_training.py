"""train: mini-batches of equal size, every item once per epoch (or L times over with epoch_samples),
early stopping on a held-out share or a given validation set."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from activebayes.errors import ConfigError
from activebayes.training import TrainConfig, epoch_order, train


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


@pytest.mark.parametrize(("n", "samples"), [(20, 5056), (7, 64), (100, 64), (64, 64)])
def test_epoch_samples_draw_every_item_floor_or_ceil_times(n, samples):
    """L = epoch_samples > n: an epoch is randperm(L) mod n, so each item comes ⌊L/n⌋ or ⌈L/n⌉
    times (exactly L items); L <= n: one permutation of the n items, as without the option."""
    order = epoch_order(n, samples, torch.Generator().manual_seed(0))
    counts = torch.bincount(order, minlength=n)
    assert order.shape[0] == max(n, samples)
    assert counts.min() >= max(samples, n) // n and counts.max() <= math.ceil(max(samples, n) / n)
    if samples <= n:
        assert torch.equal(order, torch.randperm(n, generator=torch.Generator().manual_seed(0)))


def test_epoch_samples_set_the_steps_per_epoch():
    """20 items, L = 256, B = 64: 4 steps of 64 draws an epoch; every item 12 or 13 times."""
    x = torch.arange(20, dtype=torch.float32)[:, None]
    model = Recorder()
    train(model, x, torch.zeros(20, dtype=torch.long), TrainConfig(epochs=3, batch_size=64, epoch_samples=256), seed=0, device="cpu")
    assert [len(b) for b in model.batches] == [64] * 12
    first = torch.bincount(torch.tensor([i for b in model.batches[:4] for i in b]), minlength=20)
    assert first.sum() == 256 and first.min() == 12 and first.max() == 13


class Scripted(nn.Module):
    """In eval mode the first `correct_per_epoch[e]` validation items are right after epoch e; the
    parameter `epoch` is set to e + 1 after each epoch, so the restored weights tell which epoch
    was kept (training leaves it alone: its gradient is zero)."""

    def __init__(self, correct_per_epoch: list[int]) -> None:
        super().__init__()
        self.epoch = nn.Parameter(torch.zeros(()))
        self.correct_per_epoch = correct_per_epoch
        self.evaluations = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        if self.training:
            return self.epoch * torch.zeros(n, 2)
        k = self.correct_per_epoch[self.evaluations]
        self.evaluations += 1
        logits = torch.zeros(n, 2)
        logits[:k, 0] = 1.0  # the first k items predicted class 0 (their label), the rest class 1
        logits[k:, 1] = 1.0
        return logits


def test_given_validation_set_stops_on_accuracy_and_restores_the_best_epoch():
    """Validation accuracy 0.2, 0.6, 0.6, 0.4, 0.8, ...: with patience 2 the tie at epoch 3 and the
    drop at epoch 4 end training after epoch 4, and the weights of epoch 2 (the first 0.6) return."""
    model = Scripted([1, 3, 3, 2, 4, 5, 5, 5])
    x, y = torch.zeros(4, 1), torch.zeros(4, dtype=torch.long)
    validation = (torch.zeros(5, 1), torch.zeros(5, dtype=torch.long))
    config = TrainConfig(epochs=8, batch_size=4, optimizer="sgd", lr=1.0, momentum=0.0, patience=2,
                         validation_data=validation, validation_metric="accuracy")  # fmt: skip
    train(model, x, y, config, seed=0, device="cpu", on_epoch_end=lambda e, m: m.epoch.data.fill_(e + 1))
    assert model.evaluations == 4  # stopped after the 4th epoch
    assert model.epoch.item() == 2.0  # the best epoch's weights restored


def test_validation_options_are_checked():
    validation = (torch.zeros(3, 1), torch.zeros(3, dtype=torch.long))
    with pytest.raises(ConfigError, match="not both"):
        TrainConfig(validation_fraction=0.2, validation_data=validation)
    with pytest.raises(ConfigError, match="validation_metric"):
        TrainConfig(validation_metric="f1")
    with pytest.raises(ConfigError, match="epoch_samples"):
        TrainConfig(epoch_samples=0)
    with pytest.raises(ConfigError, match="accuracy' needs class labels"):
        train(nn.Linear(1, 1), torch.zeros(4, 1), torch.zeros(4),
              TrainConfig(epochs=1, validation_data=(torch.zeros(2, 1), torch.zeros(2)), validation_metric="accuracy"), seed=0)
    assert TrainConfig(validation_data=validation) == TrainConfig()  # data is not a setting: configs still compare


class NormedRecorder(Recorder):
    """`Recorder` with BatchNorm after its linear layer, which refuses one item in training."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.BatchNorm1d(2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(super().forward(x))


def test_a_batchnorm_network_trains_on_a_single_item_as_that_item_twice():
    x, y = torch.tensor([[3.0]]), torch.tensor([1])
    normed = NormedRecorder()
    train(normed, x, y, TrainConfig(epochs=2, validation_fraction=0.0), seed=0, device="cpu")
    assert normed.batches == [[3, 3], [3, 3]]
    plain = Recorder()  # without BatchNorm a batch of one stays one
    train(plain, x, y, TrainConfig(epochs=2, validation_fraction=0.0), seed=0, device="cpu")
    assert plain.batches == [[3], [3]]
