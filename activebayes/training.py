"""The one training routine every posterior shares.

Minimises the mean cross-entropy (classification: integer targets [N]) or the mean squared
error (regression: float targets [N] or [N, T]) with Adam or SGD, mini-batches drawn in a
seeded order, optional early stopping on a held-out split, and hooks for posteriors that need
the learning rate per step (snapshot ensembles, SWAG) or the weights after each epoch.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor, nn

from activebayes._device import resolve_device
from activebayes.errors import ConfigError, ShapeError

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
        schedule: "constant" keeps `lr`; "cosine" anneals it over the whole run,
            lr_t = lr / 2 · (1 + cos(π t / T)) for optimiser step t of T (ignored when `train`
            gets an explicit `lr_at`).
    """

    epochs: int = 50
    lr: float = 1e-3
    weight_decay: float = 0.0
    batch_size: int = 64
    optimizer: Literal["adam", "sgd"] = "adam"
    momentum: float = 0.9
    validation_fraction: float = 0.0
    patience: int = 5
    schedule: Literal["constant", "cosine"] = "constant"


def as_tensor(name: str, value: object, dtype: torch.dtype | None = None) -> Tensor:
    """`value` (a tensor, numpy array or nested sequence) as a tensor, cast to `dtype` when given."""
    try:
        tensor = torch.as_tensor(value)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise ShapeError(f"{name}: expected a tensor or array, got {type(value).__name__}") from exc
    return tensor if dtype is None else tensor.to(dtype)


def check_positive_int(name: str, value: object) -> None:
    """Raise ConfigError unless `value` is an int >= 1 (bools refused)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"{name}: expected a positive integer, got {value!r}")


def resolve_train_config(
    config: TrainConfig | None = None,
    *,
    epochs: int | None = None,
    lr: float | None = None,
    weight_decay: float | None = None,
    batch_size: int | None = None,
) -> TrainConfig:
    """`config` (or the defaults) with every override that is not None applied.

    Posteriors take both a `config` and the four most used knobs as keywords; this merges them.
    """
    base = TrainConfig() if config is None else config
    if not isinstance(base, TrainConfig):
        raise ConfigError(f"config: expected a TrainConfig or None, got {type(base).__name__}")
    overrides = {
        name: value
        for name, value in (("epochs", epochs), ("lr", lr), ("weight_decay", weight_decay), ("batch_size", batch_size))
        if value is not None
    }
    merged = dataclasses.replace(base, **overrides)
    if merged.epochs < 1 or merged.batch_size < 1:
        raise ConfigError(f"config: expected epochs >= 1 and batch_size >= 1, got {merged.epochs} and {merged.batch_size}")
    if merged.lr <= 0 or merged.weight_decay < 0:
        raise ConfigError(f"config: expected lr > 0 and weight_decay >= 0, got {merged.lr} and {merged.weight_decay}")
    return merged


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
    on_epoch_loss: Callable[[int, float], None] | None = None,
    progress: ProgressFn | None = None,
) -> nn.Module:
    """Train `model` in place on (x [N, ...], y [N]) and return it (on `device`, in eval mode).

    Args:
        lr_at: learning rate for each optimiser step (global step index), overriding `config.lr`.
        on_epoch_end: called as on_epoch_end(epoch, model) after every epoch.
        on_epoch_loss: called as on_epoch_loss(epoch, loss) after every epoch with the epoch's
            mean training loss (the mini-batch losses weighted by batch size; one host sync per
            epoch, only when given). It may raise to stop training.
        progress: called as progress(epochs_done, epochs_total).
    """
    if x.shape[0] != y.shape[0]:
        raise ShapeError(f"y: expected {x.shape[0]} targets to match x, got {y.shape[0]}")
    if x.shape[0] == 0:
        raise ShapeError("x: expected at least one training example, got none")
    dev = resolve_device(device)
    generator = torch.Generator().manual_seed(seed if seed is not None else secrets.randbits(62))
    model = model.to(dev)
    x, y = x.to(dev), y.to(dev)

    n_val = int(round(config.validation_fraction * x.shape[0])) if config.validation_fraction > 0 else 0
    order = torch.randperm(x.shape[0], generator=generator).to(dev)
    val_idx, train_idx = order[:n_val], order[n_val:]
    x_train, y_train = x[train_idx], y[train_idx]
    n = x_train.shape[0]

    if lr_at is None and config.schedule == "cosine":
        total_steps = config.epochs * math.ceil(n / config.batch_size)
        lr_at = lambda step: config.lr / 2 * (1 + math.cos(math.pi * step / total_steps))  # noqa: E731
    elif config.schedule not in ("constant", "cosine"):
        raise ConfigError(f"config.schedule: expected 'constant' or 'cosine', got {config.schedule!r}")

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
            epoch_loss = torch.zeros((), device=dev)
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
                if on_epoch_loss is not None:
                    epoch_loss += loss.detach() * batch.shape[0]
            if on_epoch_end is not None:
                on_epoch_end(epoch, model)
            if on_epoch_loss is not None:
                on_epoch_loss(epoch, float(epoch_loss) / n)
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
