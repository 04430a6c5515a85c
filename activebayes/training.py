"""The one training routine every posterior shares.

Minimises the mean cross-entropy (classification: integer targets [N]) or the mean squared
error (regression: float targets [N] or [N, T]) with Adam or SGD, mini-batches drawn in a
seeded order, optional early stopping on a held-out split, and hooks for posteriors that need
the learning rate per step (snapshot ensembles, SWAG) or the weights after each epoch.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor, nn

from activebayes._device import resolve_device
from activebayes.errors import ShapeError

ProgressFn = Callable[[int, int], None]  # (epochs done, epochs total)


@dataclass(frozen=True)
class TrainConfig:
    """How to train one network.

    Attributes:
        epochs: passes over the training data (an upper bound with early stopping).
        lr: learning rate (the peak of a schedule when one is given).
        weight_decay: L2 penalty as the optimiser's weight decay.
        batch_size: mini-batch size.
        optimizer: "adam" or "sgd" (with `momentum`).
        validation_fraction: > 0 holds out this share of the data and stops when its loss has not
            improved for `patience` epochs, restoring the best weights.
    """

    epochs: int = 50
    lr: float = 1e-3
    weight_decay: float = 0.0
    batch_size: int = 64
    optimizer: Literal["adam", "sgd"] = "adam"
    momentum: float = 0.9
    validation_fraction: float = 0.0
    patience: int = 5


def build_model(model_fn: Callable[[], nn.Module], seed: int | None) -> nn.Module:
    """Call the model factory with the global RNG seeded, restoring the caller's RNG state after."""
    with torch.random.fork_rng(devices=[]):
        if seed is not None:
            torch.manual_seed(seed)
        return model_fn()


def task_loss(output: Tensor, y: Tensor) -> Tensor:
    """Cross-entropy for integer targets, mean squared error for float targets."""
    if y.dtype in (torch.int64, torch.int32, torch.int16, torch.uint8):
        return nn.functional.cross_entropy(output, y.long())
    return nn.functional.mse_loss(output.reshape(y.shape), y)


def cosine_cycle_lr(step: int, steps_per_cycle: int, lr_max: float) -> float:
    """Huang et al. (2017): lr = lr_max / 2 · (cos(π · (step mod T) / T) + 1), T steps a cycle."""
    position = (step % steps_per_cycle) / steps_per_cycle
    return lr_max / 2 * (math.cos(math.pi * position) + 1)


def train(
    model: nn.Module,
    x: Tensor,
    y: Tensor,
    config: TrainConfig = TrainConfig(),
    *,
    seed: int | None = None,
    device: str | torch.device = "auto",
    lr_at: Callable[[int], float] | None = None,
    on_epoch_end: Callable[[int, nn.Module], None] | None = None,
    progress: ProgressFn | None = None,
) -> nn.Module:
    """Train `model` in place on (x [N, ...], y [N]) and return it (on `device`, in eval mode).

    Args:
        lr_at: learning rate for each optimiser step (global step index), overriding `config.lr`.
        on_epoch_end: called as on_epoch_end(epoch, model) after every epoch.
        progress: called as progress(epochs_done, epochs_total).
    """
    if x.shape[0] != y.shape[0]:
        raise ShapeError(f"y: expected {x.shape[0]} targets to match x, got {y.shape[0]}")
    if x.shape[0] == 0:
        raise ShapeError("x: expected at least one training example, got none")
    dev = resolve_device(device)
    generator = torch.Generator().manual_seed(seed if seed is not None else int(torch.seed() % 2**63))
    model = model.to(dev)
    x, y = x.to(dev), y.to(dev)

    n_val = int(round(config.validation_fraction * x.shape[0])) if config.validation_fraction > 0 else 0
    order = torch.randperm(x.shape[0], generator=generator).to(dev)
    val_idx, train_idx = order[:n_val], order[n_val:]
    x_train, y_train = x[train_idx], y[train_idx]
    n = x_train.shape[0]

    params = [p for p in model.parameters() if p.requires_grad]
    if config.optimizer == "adam":
        optimizer = torch.optim.Adam(params, lr=config.lr, weight_decay=config.weight_decay)
    else:
        optimizer = torch.optim.SGD(params, lr=config.lr, momentum=config.momentum, weight_decay=config.weight_decay)

    best_loss, best_state, since_best = math.inf, None, 0
    step = 0
    with torch.random.fork_rng(devices=[dev] if dev.type == "cuda" else []):
        torch.manual_seed(int(torch.randint(0, 2**62, (1,), generator=generator)))
        for epoch in range(config.epochs):
            model.train()
            perm = torch.randperm(n, generator=generator).to(dev)
            for start in range(0, n, config.batch_size):
                batch = perm[start : start + config.batch_size]
                if lr_at is not None:
                    for group in optimizer.param_groups:
                        group["lr"] = lr_at(step)
                optimizer.zero_grad(set_to_none=True)
                loss = task_loss(model(x_train[batch]), y_train[batch])
                loss.backward()
                optimizer.step()
                step += 1
            if on_epoch_end is not None:
                on_epoch_end(epoch, model)
            if progress is not None:
                progress(epoch + 1, config.epochs)
            if n_val:
                model.eval()
                with torch.no_grad():
                    val_loss = float(task_loss(model(x[val_idx]), y[val_idx]))
                if val_loss < best_loss - 1e-6:
                    best_loss, best_state, since_best = val_loss, copy.deepcopy(model.state_dict()), 0
                else:
                    since_best += 1
                    if since_best >= config.patience:
                        break
    if best_state is not None:
        model.load_state_dict(best_state)
    return model.eval()
