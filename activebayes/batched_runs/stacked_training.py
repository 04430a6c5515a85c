"""Train R networks of one architecture at once, each exactly as `activebayes.training.train`
would train it alone: `train_stacked`.

Run r's own `train(model_r, x_r, y_r, config, seed=seed_r)` draws, from a generator seeded with
seed_r: the permutation that orders its N items, the seed of its dropout noise, then one
permutation per epoch (`epoch_order`); each epoch takes ⌈max(N, L)/B⌉ optimiser steps on the
`tensor_split` of that permutation. Here the same draws are made from R such generators, in the
same order, and the R steps of step t run as one:

    x_t [R, b, ...] = x_r[batch_r] stacked,  ε_t = each run's dropout noise (`RunsRandomness`)
    L(θ) = Σ_r CE(f(x_t[r]; θ_r, ε_t[r]), y_t[r])           (vmap over r)

∂L/∂θ_r is run r's own gradient (the sum mixes nothing), and one Adam (or SGD) over the stacked
leaves [R, ...] updates every element from its own gradient and moments, with the weight decay
added elementwise (g + λθ): per run the update of a separate optimiser. All runs of one call have
the same N (so the same batch sizes and step count) and the same `TrainConfig`.

What differs from R separate calls is float rounding only: the vmapped layers may reduce in
another order (a linear layer runs as a batched matmul; on CUDA a convolution as one grouped
convolution, while on the CPU convolutions run per run, `stacked_network`), so weights agree to
float tolerance, not always bit for bit, and a difference grows with the steps (Gal et al.'s CNN
after 5 epochs: 5e-6; the optimiser itself is exact, tests/test_batched_runs.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn
from torch.func import vmap

from activebayes._device import resolve_device
from activebayes._optimizers import SGD, Adam
from activebayes.batched_runs.stacked_network import RunsRandomness, StackedSequential, stacking_refusal_for
from activebayes.debias import current_sample_weights
from activebayes.errors import ConfigError, ShapeError
from activebayes.training import TrainConfig, epoch_order, epoch_steps, task_loss


def stacking_refusal(config: TrainConfig) -> str | None:
    """Why `train_stacked` cannot reproduce `train` under `config` (None: it can)."""
    if config.marglik is not None:
        return "marginal-likelihood training"
    if config.validation_fraction > 0 or config.validation_data is not None:
        return "early stopping"
    if config.schedule != "constant":
        return f"the {config.schedule!r} learning-rate schedule"
    return None


def train_stacked(
    models: Sequence[nn.Module],
    xs: Sequence[Tensor],
    ys: Sequence[Tensor],
    config: TrainConfig,
    seeds: Sequence[int],
    *,
    device: str | torch.device = "auto",
) -> list[nn.Module]:
    """Train each models[r] in place on (xs[r] [N, ...], ys[r] [N]) with `seeds[r]`, as
    `train(models[r], xs[r], ys[r], config, seed=seeds[r], device=device)` would, all R at once;
    returns the models (on `device`, eval mode). Every xs[r] has the same N; the models share one
    architecture (a network without buffers whose dropout layers each run once per pass)."""
    refusal = stacking_refusal(config)
    if refusal is not None:
        raise ConfigError(f"config: batched training does not reproduce {refusal}; train the runs one by one")
    if not (len(models) == len(xs) == len(ys) == len(seeds)) or not models:
        raise ShapeError(f"models: expected as many (>= 1) inputs, targets and seeds, got {len(models)}, {len(xs)}, {len(ys)}, {len(seeds)}")
    n = xs[0].shape[0]
    if any(x.shape != xs[0].shape for x in xs) or any(y.shape[0] != n for y in ys) or n == 0:
        raise ShapeError(f"xs: expected R inputs of one shape [N >= 1, ...] and N targets each, got {[tuple(x.shape) for x in xs]}")
    if current_sample_weights(n) is not None:
        raise ConfigError("config: batched training does not reproduce debiased (weighted) training; train the runs one by one")
    dev = resolve_device(device)
    generators = [torch.Generator().manual_seed(int(seed)) for seed in seeds]
    orders = [torch.randperm(n, generator=g).to(dev) for g in generators]
    x_train = torch.stack([x.to(dev)[order] for x, order in zip(xs, orders)])  # [R, N, ...]
    y_train = torch.stack([y.to(dev)[order] for y, order in zip(ys, orders)])  # [R, N]
    randomness = RunsRandomness([int(torch.randint(0, 2**62, (1,), generator=g)) for g in generators], dev)
    models = [model.to(dev) for model in models]
    refusal = stacking_refusal_for(models[0])
    if refusal is not None:
        raise ConfigError(f"model_fn: batched training does not apply: {refusal}; train the runs one by one")
    stacked = StackedSequential(models, trainable=True)
    sites = stacked.sites(x_train[0, :1])
    leaves = stacked.leaves()
    if config.optimizer == "adam":
        optimizer: Adam | SGD = Adam(leaves, lr=config.lr, weight_decay=config.weight_decay)
    else:
        optimizer = SGD(leaves, lr=config.lr, momentum=config.momentum, weight_decay=config.weight_decay)
    steps = epoch_steps(n, config)
    runs = torch.arange(len(models), device=dev)[:, None]
    batched_loss = vmap(task_loss)  # [R, b, C], [R, b] -> [R]: each run's mean cross-entropy
    for _ in range(config.epochs):
        perm = torch.stack([epoch_order(n, config.epoch_samples, g) for g in generators]).to(dev)  # [R, max(N, L)]
        for batch in perm.tensor_split(steps, dim=1):  # [R, b]: the sizes every run's own split gives
            noise = randomness.noise(sites, batch.shape[1], x_train.dtype)
            optimizer.zero_grad(set_to_none=True)
            batched_loss(stacked.run(x_train[runs, batch], noise=noise), y_train[runs, batch]).sum().backward()
            optimizer.step()
    stacked.write_back(models)
    return [model.eval() for model in models]


__all__ = ["stacking_refusal", "train_stacked"]
