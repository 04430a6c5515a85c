"""The one training routine every posterior shares.

Minimises the mean cross-entropy (classification: integer targets [N]) or the mean squared
error (regression: float targets [N] or [N, T]) with Adam or SGD (torch.optim's updates, run by
`activebayes._optimizers` without importing torch._dynamo), mini-batches drawn in a
seeded order (equal-sized batches), optional early stopping on a held-out split, and hooks for posteriors that need
the learning rate per step (snapshot ensembles, SWAG) or the weights after each epoch.
For regression posteriors, the Gaussian likelihood's noise σ² is fitted after training from the
residuals (`activebayes.gaussian_likelihood`).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from torch import Tensor, nn

from activebayes._device import resolve_device
from activebayes._optimizers import SGD, Adam
from activebayes.debias import current_sample_weights, weighted_epoch_order
from activebayes.errors import ConfigError, ShapeError

ProgressFn = Callable[[int, int], None]  # (epochs done, epochs total)


@dataclass(frozen=True)
class TrainConfig:
    """How to train one network.

    Attributes:
        epochs: passes over the training data (an upper bound with early stopping).
        lr: learning rate (the peak of a schedule when one is given).
        weight_decay: L2 penalty as the optimiser's weight decay.
        batch_size: B, the largest mini-batch. An epoch over N items takes ⌈N/B⌉ optimiser steps
            on batches of equal size (N split evenly, ±1 item), not B-sized batches and a
            remainder: with B = 128 and N = 130, two steps of 65, not 128 and 2 (a step on 2
            items every epoch cost the Gal et al. MNIST study up to half its test accuracy).
        optimizer: "adam" or "sgd" (with `momentum`).
        epoch_samples: None: an epoch is one pass over the N training items. L: an epoch draws
            max(N, L) items, every item ⌊L/N⌋ or ⌈L/N⌉ times in a random order (Kirsch et al.'s
            `RandomFixedLengthSampler`, `randperm(L) mod N`), so a small labelled set still gets
            ⌈L/B⌉ optimiser steps per epoch (BatchBALD's MNIST runs: L = 5,056, B = 64).
        validation_fraction: > 0 holds out this share of the data and stops when the validation
            score (`validation_metric`) has not improved for `patience` epochs, restoring the best
            weights.
        validation_data: instead of a held-out share, a given validation set (x_val [V, ...],
            y_val [V]) to stop on, e.g. a study's labelled validation split (not compared or
            printed: it is data, not a setting).
        validation_metric: "loss" (the task loss; lower is better) or "accuracy" (classification;
            higher is better, ties are no improvement, as Kirsch et al.'s `RestoringScoreGuard`).
            Both are computed in eval mode (dropout off).
        schedule: "constant" keeps `lr`; "cosine" anneals it over the whole run,
            lr_t = lr / 2 · (1 + cos(π t / T)) for optimiser step t of T (ignored when `train`
            gets an explicit `lr_at`).
        marglik: an `activebayes.marglik.MarglikConfig` (online marginal-likelihood training, no weight decay), or None.
    """

    epochs: int = 50
    lr: float = 1e-3
    weight_decay: float = 0.0
    batch_size: int = 64
    optimizer: Literal["adam", "sgd"] = "adam"
    momentum: float = 0.9
    epoch_samples: int | None = None
    validation_fraction: float = 0.0
    validation_data: tuple[Tensor, Tensor] | None = field(default=None, compare=False, repr=False)
    validation_metric: Literal["loss", "accuracy"] = "loss"
    patience: int = 5
    schedule: Literal["constant", "cosine"] = "constant"
    marglik: Any = None

    def __post_init__(self) -> None:
        """Check every field once, here: a one-line ConfigError naming the field."""
        for name in ("epochs", "batch_size", "patience"):
            check_positive_int(f"TrainConfig.{name}", getattr(self, name))
        for name, low, strict in (("lr", 0.0, True), ("weight_decay", 0.0, False), ("momentum", 0.0, False)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (value > low if strict else value >= low):
                raise ConfigError(f"TrainConfig.{name}: expected a {'positive' if strict else 'non-negative'} number, got {value!r}")
        if self.epoch_samples is not None:
            check_positive_int("TrainConfig.epoch_samples", self.epoch_samples)
        if self.validation_data is not None:
            if self.validation_fraction > 0:
                raise ConfigError("TrainConfig.validation_data: give a validation set or a validation_fraction, not both")
            if not (isinstance(self.validation_data, tuple) and len(self.validation_data) == 2):
                raise ConfigError("TrainConfig.validation_data: expected a pair (x_val [V, ...], y_val [V])")
            x_val, y_val = self.validation_data
            if len(x_val) != len(y_val) or len(x_val) == 0:
                raise ConfigError(f"TrainConfig.validation_data: expected V >= 1 inputs and as many targets, got {len(x_val)} and {len(y_val)}")
        if not 0.0 <= self.validation_fraction < 1.0:
            raise ConfigError(f"TrainConfig.validation_fraction: expected a number in [0, 1), got {self.validation_fraction!r}")
        for name, choices in (("optimizer", ("adam", "sgd")), ("schedule", ("constant", "cosine")), ("validation_metric", ("loss", "accuracy"))):
            if getattr(self, name) not in choices:
                raise ConfigError(f"TrainConfig.{name}: expected one of {', '.join(map(repr, choices))}, got {getattr(self, name)!r}")


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


def check_non_negative_int(name: str, value: object) -> None:
    """Raise ConfigError unless `value` is an int >= 0 (bools refused)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ConfigError(f"{name}: expected a non-negative integer, got {value!r}")


def resolve_train_config(
    config: TrainConfig | None = None,
    *,
    epochs: int | None = None,
    lr: float | None = None,
    weight_decay: float | None = None,
    batch_size: int | None = None,
) -> TrainConfig:
    """`config` (or the defaults) with every override that is not None applied.

    For callers holding the four most used knobs one by one (the CLI's --epochs, a study's
    [model] keys); posteriors take the resulting TrainConfig as `train`.
    """
    base = TrainConfig() if config is None else config
    if not isinstance(base, TrainConfig):
        raise ConfigError(f"config: expected a TrainConfig or None, got {type(base).__name__}")
    overrides = {
        name: value
        for name, value in (("epochs", epochs), ("lr", lr), ("weight_decay", weight_decay), ("batch_size", batch_size))
        if value is not None
    }
    return dataclasses.replace(base, **overrides)  # __post_init__ checks the merged fields


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
    if output.numel() != y.numel():
        raise ShapeError(
            f"model_fn: float targets (regression) of shape [N, ...] = {tuple(y.shape[1:])} need as many network outputs "
            f"per item (one value per item for y [N]: an output [N, 1] or [N]), got [N, ...] = {tuple(output.shape[1:])}"
        )
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
    loss_fn: Callable[[Tensor, Tensor], Tensor] | None = None,
    param_groups: list[dict] | None = None,
) -> nn.Module:
    """Train `model` in place on (x [N, ...], y [N]) and return it (on `device`, in eval mode).
    A network with BatchNorm, which cannot normalise one item in training, gets a batch of one
    item (a single training item) as that item twice: the same mean loss.

    Args:
        lr_at: learning rate for each optimiser step (global step index), overriding `config.lr`.
        on_epoch_end: called as on_epoch_end(epoch, model) after every epoch.
        on_epoch_loss: called as on_epoch_loss(epoch, loss) after every epoch with the epoch's
            mean training loss (the mini-batch losses weighted by batch size; one host sync per
            epoch, only when given). It may raise to stop training.
        progress: called as progress(epochs_done, epochs_total).
        loss_fn: the mini-batch loss, loss_fn(model(x_batch), y_batch) -> scalar, in place of
            `task_loss` (e.g. a loss on a widened output, or one with a KL term); early stopping
            still scores the eval-mode model with `task_loss`.
        param_groups: the optimiser's parameter groups (torch's [{"params": [...], ...}] form,
            e.g. {"weight_decay": 0.0} for some), in place of every trainable parameter in one
            group; options a group leaves out take `config`'s.
    """
    if config.marglik is not None:  # `activebayes.marglik.train_marglik`, which calls back here with marglik=None
        from activebayes.marglik import train_marglik
        return train_marglik(model, x, y, config, seed=seed, device=device, lr_at=lr_at, on_epoch_end=on_epoch_end, on_epoch_loss=on_epoch_loss,
                             progress=progress, loss_fn=loss_fn, param_groups=param_groups).model
    if x.shape[0] != y.shape[0]:
        raise ShapeError(f"y: expected {x.shape[0]} targets to match x, got {y.shape[0]}")
    if x.shape[0] == 0:
        raise ShapeError("x: expected at least one training example, got none")
    dev = resolve_device(device)
    generator = torch.Generator().manual_seed(seed if seed is not None else secrets.randbits(62))
    model = model.to(dev)
    x, y = x.to(dev), y.to(dev)

    n_val = x.shape[0] - training_items(x.shape[0], config)
    order = torch.randperm(x.shape[0], generator=generator).to(dev)
    val_idx, train_idx = order[:n_val], order[n_val:]
    x_train, y_train = x[train_idx], y[train_idx]
    weights = current_sample_weights(x.shape[0])  # `activebayes.debias`: None unless debiasing
    w_train = weights[train_idx.cpu()] if weights is not None else None
    n = x_train.shape[0]
    if config.validation_data is not None:
        x_val, y_val = (as_tensor("validation_data", v).to(dev) for v in config.validation_data)
    else:
        x_val, y_val = x[val_idx], y[val_idx]
    stops_early = x_val.shape[0] > 0
    if stops_early and config.validation_metric == "accuracy" and y_val.is_floating_point():
        raise ConfigError("TrainConfig.validation_metric: 'accuracy' needs class labels; use 'loss' for regression")
    steps_per_epoch = epoch_steps(n, config)

    if lr_at is None and config.schedule == "cosine":
        total_steps = config.epochs * steps_per_epoch
        lr_at = lambda step: config.lr / 2 * (1 + math.cos(math.pi * step / total_steps))  # noqa: E731
    elif config.schedule not in ("constant", "cosine"):
        raise ConfigError(f"config.schedule: expected 'constant' or 'cosine', got {config.schedule!r}")

    params = [p for p in model.parameters() if p.requires_grad] if param_groups is None else param_groups
    if config.optimizer == "adam":
        optimizer: Adam | SGD = Adam(params, lr=config.lr, weight_decay=config.weight_decay)
    else:
        optimizer = SGD(params, lr=config.lr, momentum=config.momentum, weight_decay=config.weight_decay)

    best = BestWeights(config)
    step = 0
    batch_norm = any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules())
    with torch.random.fork_rng(devices=[dev] if dev.type == "cuda" else []):
        torch.manual_seed(int(torch.randint(0, 2**62, (1,), generator=generator)))
        for epoch in range(config.epochs):
            model.train()
            if w_train is None:
                perm = epoch_order(n, config.epoch_samples, generator).to(dev)
            else:  # items drawn ∝ their weights: the weighted loss in expectation
                perm = weighted_epoch_order(w_train, max(n, config.epoch_samples or 0), generator).to(dev)
            epoch_loss = torch.zeros((), device=dev)
            # ⌈L/B⌉ steps on batches of equal size (±1): no step on a remainder of a few items
            for batch in perm.tensor_split(steps_per_epoch):
                rows = batch.repeat(2) if batch.shape[0] == 1 and batch_norm else batch  # one item twice: its loss, two values for BatchNorm
                if lr_at is not None:
                    for group in optimizer.param_groups:
                        group["lr"] = lr_at(step)
                optimizer.zero_grad(set_to_none=True)
                loss = (task_loss if loss_fn is None else loss_fn)(model(x_train[rows]), y_train[rows])
                loss.backward()
                optimizer.step()
                step += 1
                if on_epoch_loss is not None:
                    epoch_loss += loss.detach() * batch.shape[0]
            if on_epoch_end is not None:
                on_epoch_end(epoch, model)
            if on_epoch_loss is not None:
                on_epoch_loss(epoch, float(epoch_loss) / perm.shape[0])
            if progress is not None:
                progress(epoch + 1, config.epochs)
            if stops_early and best.out_of_patience(model, x_val, y_val):
                break
    best.restore(model)
    return model.eval()


def training_items(n: int, config: TrainConfig) -> int:
    """The items `train` fits on out of n: n less the share `config.validation_fraction` holds
    out (e.g. the N that scales a KL term per item)."""
    return n - (int(round(config.validation_fraction * n)) if config.validation_fraction > 0 else 0)


def exempt_from_weight_decay(model: nn.Module, exempt: list[Tensor]) -> list[dict]:
    """`train`'s param_groups with `exempt` (e.g. variational or per-member parameters) free of
    weight decay and every other trainable parameter of `model` under the config's."""
    ids = {id(p) for p in exempt}
    return [{"params": exempt, "weight_decay": 0.0},
            {"params": [p for p in model.parameters() if id(p) not in ids and p.requires_grad]}]  # fmt: skip


class BestWeights:
    """Early stopping: after each epoch `out_of_patience` scores the model on the validation set
    (`validation_score`, higher is better; a gain must exceed 1e-6 for the loss, any gain counts
    for accuracy) and keeps a copy of the best weights; True once `config.patience` epochs in a row
    brought no gain. `restore` puts the best weights back (no-op when none were kept)."""

    def __init__(self, config: TrainConfig) -> None:
        self.metric, self.patience = config.validation_metric, config.patience
        self.min_gain = 1e-6 if config.validation_metric == "loss" else 0.0
        self.score, self.state, self.since = -math.inf, None, 0

    def out_of_patience(self, model: nn.Module, x_val: Tensor, y_val: Tensor) -> bool:
        score = validation_score(model, x_val, y_val, self.metric)
        if score > self.score + self.min_gain:
            self.score, self.state, self.since = score, copy.deepcopy(model.state_dict()), 0
            return False
        self.since += 1
        return self.since >= self.patience

    def restore(self, model: nn.Module) -> None:
        if self.state is not None:
            model.load_state_dict(self.state)


def epoch_steps(n: int, config: TrainConfig) -> int:
    """Optimiser steps in one epoch over n items: ⌈max(n, epoch_samples) / batch_size⌉."""
    return math.ceil(max(n, config.epoch_samples or 0) / config.batch_size)


def epoch_order(n: int, epoch_samples: int | None, generator: torch.Generator) -> Tensor:
    """The item indices of one training epoch over n items: a random permutation of 0..n-1, or,
    when epoch_samples = L > n, randperm(L) mod n (every item ⌊L/n⌋ or ⌈L/n⌉ times), [max(n, L)]."""
    if epoch_samples is None or epoch_samples <= n:
        return torch.randperm(n, generator=generator)
    return torch.randperm(epoch_samples, generator=generator) % n


def validation_score(model: nn.Module, x_val: Tensor, y_val: Tensor, metric: str, *, chunk: int = 1024) -> float:
    """The early-stopping score of `model` (eval mode, no gradients) on (x_val [V, ...], y_val [V]),
    higher is better: the accuracy, or minus the task loss (the mean over all V items, in chunks
    of `chunk` to bound the activations' memory)."""
    model.eval()
    total = 0.0
    with torch.no_grad():
        for start in range(0, x_val.shape[0], chunk):
            out, y = model(x_val[start : start + chunk]), y_val[start : start + chunk]
            if metric == "accuracy":
                total += float((out.argmax(-1) == y).sum())
            else:
                total -= float(task_loss(out, y)) * y.shape[0]
    return total / x_val.shape[0]


def sized_training(
    n: int,
    *,
    epochs: int | None = None,
    batch_size: int = 64,
    min_epochs: int = 50,
    min_steps: int = 500,
    prior_precision: float = 1.0,
) -> dict[str, float | int | str | None]:
    """The training a network gets on `n` labelled items by default: enough optimiser steps
    however few the items, and an L2 penalty that weakens as the labelled set grows.

        batches = ⌈n / batch_size⌉                     (optimiser steps per epoch)
        epochs  = max(min_epochs, ⌈min_steps / batches⌉) when `epochs` is None, else `epochs`
        weight_decay = λ / n                           (λ = prior_precision)

    The weight decay is the gradient of the Gaussian prior N(0, λ⁻¹ I) on the weights divided by
    n, as the training loss is the MEAN negative log-likelihood: (1/n)(Σ_i −log p(y_i | x_i, θ)
    + λ/2 ‖θ‖²) has gradient mean-loss' + (λ/n) θ. So a fixed prior is weaker relative to the
    data the more labels there are. An explicit `epochs` is kept as given (no minimum).

    Returns the record a round keeps: {"rule", "labelled", "batch_size", "min_epochs",
    "min_steps", "prior_precision", "epochs", "steps", "weight_decay"}.
    """
    check_positive_int("n", n)
    check_positive_int("batch_size", batch_size)
    if not prior_precision >= 0:
        raise ConfigError(f"prior_precision: expected a non-negative number, got {prior_precision!r}")
    batches = math.ceil(n / batch_size)
    if epochs is None:
        used = max(int(min_epochs), math.ceil(int(min_steps) / batches))
        rule = "min-steps"
    else:
        check_positive_int("epochs", epochs)
        used, rule = int(epochs), "explicit-epochs"
    return {
        "rule": rule,
        "labelled": int(n),
        "batch_size": int(batch_size),
        "min_epochs": int(min_epochs),
        "min_steps": int(min_steps),
        "prior_precision": float(prior_precision),
        "epochs": used,
        "steps": used * batches,
        "weight_decay": float(prior_precision) / n,
    }
