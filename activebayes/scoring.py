"""Stream a pool through a posterior and an acquisition function, batch by batch.

    for each batch B of the pool:   x_B ──posterior.predict──▶ Predictive [S, |B|, C]
                                        ──acquisition──▶ scores [|B|]   (kept on the CPU)

Only one batch's Predictive exists at a time, so memory does not grow with the pool: the pool
itself may be a numpy memmap far larger than memory. With `top_k`, only a running best k is kept.

Devices: `device="auto"` picks CUDA when present. A posterior that holds tensors exposes
`to(device) -> self` (every posterior in `activebayes.posteriors` does); `score_pool` calls it
once, then moves each batch to the device once and runs under `torch.inference_mode`.

>>> import torch
>>> class Fixed:  # a posterior whose two samples disagree on every item
...     def predict(self, x, n_samples=None):
...         p = torch.sigmoid(x[:, :1]).expand(-1, 2)
...         probs = torch.stack([torch.cat([p[:, :1], 1 - p[:, :1]], 1), torch.cat([1 - p[:, :1], p[:, :1]], 1)])
...         from activebayes.predictive import Predictive
...         return Predictive(probs)
>>> spread = lambda pred: (pred.probs[0, :, 0] - pred.probs[1, :, 0]).abs()
>>> result = score_pool(Fixed(), torch.arange(6.0).reshape(6, 1), spread, batch_size=4, device="cpu", top_k=2)
>>> result.indices.tolist()
[5, 4]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from activebayes._device import resolve_device
from activebayes.errors import ConfigError, ShapeError
from activebayes.predictive import GaussianPredictive, Predictive

ScoreFn = Callable[[Predictive | GaussianPredictive], Tensor]  # Predictive [S, N, C] -> scores [N]
ProgressFn = Callable[[int, int], None]  # (items done, items total)


@dataclass(frozen=True)
class PoolScores:
    """What `score_pool` returns: `scores[i]` is the acquisition score of pool item `indices[i]`.

    Without top_k: every item, `indices` = 0..N−1 in pool order and `scores` [N].
    With top_k=k: the best min(k, N) items, by descending score (ties: lower index first),
    `indices` [k] and `scores` [k]. Both tensors live on the CPU.
    """

    indices: Tensor
    scores: Tensor

    def __len__(self) -> int:
        return self.indices.shape[0]


def pool_size(pool: Any) -> int:
    """N, the number of items of a tensor, numpy array / memmap or map-style torch Dataset."""
    if isinstance(pool, (Tensor, np.ndarray)):
        if pool.ndim < 1:
            raise ShapeError(f"pool: expected at least one dimension [N, ...], got shape {tuple(pool.shape)}")
        return int(pool.shape[0])
    if hasattr(pool, "__getitem__") and hasattr(pool, "__len__"):
        return len(pool)
    raise ShapeError(f"pool: expected a tensor, a numpy array or memmap, or a torch Dataset, got {type(pool).__name__}")


def pool_batch(pool: Any, start: int, stop: int) -> Tensor:
    """Items start..stop−1 of the pool as one CPU tensor [B, ...] (a Dataset's (x, y) gives x)."""
    if isinstance(pool, Tensor):
        return pool[start:stop]
    if isinstance(pool, np.ndarray):
        return torch.from_numpy(np.array(pool[start:stop], copy=True))  # memmaps are read-only
    items = []
    for index in range(start, stop):
        item = pool[index]
        if isinstance(item, (tuple, list)):
            item = item[0]
        items.append(torch.as_tensor(item))
    return torch.stack(items)


def score_pool(
    posterior: Any,
    pool: Any,
    acquisition: ScoreFn,
    *,
    batch_size: int = 1024,
    device: str | torch.device = "auto",
    n_samples: int | None = None,
    top_k: int | None = None,
    progress: ProgressFn | None = None,
) -> PoolScores:
    """Score every pool item with `acquisition(posterior.predict(x_B, n_samples))`, B at a time.

    Args:
        posterior: anything with `predict(x, n_samples=None) -> Predictive`; when it has
            `to(device)`, it is moved to `device` first.
        pool: [N, ...] items: a tensor, a numpy array or memmap, or a torch Dataset whose items
            are x or (x, y).
        acquisition: a pure function Predictive [S, B, C] -> scores [B], larger = more worth asking.
        batch_size: B, items per predict call.
        device: "auto" (CUDA when present), "cpu" or "cuda[:i]".
        n_samples: S passed on to `predict` (None: the posterior's default).
        top_k: keep only the best k items (a running top-k; memory O(k + B)).
        progress: called as progress(items_done, items_total) after every batch.
    Returns:
        PoolScores: every score in pool order, or the best k by descending score.
    """
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ConfigError(f"batch_size: expected a positive integer, got {batch_size!r}")
    if top_k is not None and (not isinstance(top_k, int) or top_k < 1):
        raise ConfigError(f"top_k: expected a positive integer or None, got {top_k!r}")
    dev = resolve_device(device)
    total = pool_size(pool)
    if hasattr(posterior, "to"):
        posterior.to(dev)

    chunks: list[Tensor] = []
    best_idx = torch.empty(0, dtype=torch.long)
    best_scores = torch.empty(0)
    with torch.inference_mode():
        for start in range(0, total, batch_size):
            stop = min(start + batch_size, total)
            x = pool_batch(pool, start, stop)
            if x.is_floating_point() and x.dtype != torch.float32:
                x = x.float()
            pred = posterior.predict(x.to(dev), n_samples=n_samples)
            scores = acquisition(pred)
            if not isinstance(scores, Tensor) or scores.shape != (stop - start,):
                got = tuple(scores.shape) if isinstance(scores, Tensor) else type(scores).__name__
                raise ShapeError(f"acquisition: expected scores [{stop - start}] for a batch, got {got}")
            scores = scores.detach().to("cpu", torch.float32)
            if bool(torch.isnan(scores).any()):
                raise ShapeError(f"acquisition: returned NaN scores for pool items {start} to {stop - 1}")
            if top_k is None:
                chunks.append(scores)
            else:
                idx = torch.cat([best_idx, torch.arange(start, stop)])
                candidates = torch.cat([best_scores, scores])
                # stable descending sort: among ties the earlier position, i.e. the lower index, wins
                order = torch.sort(candidates, descending=True, stable=True).indices[:top_k]
                best_idx, best_scores = idx[order], candidates[order]
            if progress is not None:
                progress(stop, total)
    if top_k is None:
        scores = torch.cat(chunks) if chunks else torch.empty(0)
        return PoolScores(torch.arange(total), scores)
    return PoolScores(best_idx, best_scores)


__all__ = ["PoolScores", "ScoreFn", "pool_batch", "pool_size", "score_pool"]
