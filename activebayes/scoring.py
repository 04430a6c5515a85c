"""Stream a pool through a posterior and an acquisition function, batch by batch.

    for each batch B of the pool:   x_B ──posterior.predict──▶ Predictive [S, |B|, C]
                                        ──acquisition──▶ scores [|B|]   (kept on the CPU)

Only one batch's Predictive exists at a time, so memory does not grow with the pool: the pool
itself may be a numpy memmap far larger than memory. With `top_k`, only a running best k is kept.

Devices: `device="auto"` picks CUDA when present. A posterior that holds tensors exposes
`to(device) -> self` (every posterior in `activebayes.posteriors` does); `score_pool` calls it
once, then moves each batch to the device once and runs under `torch.inference_mode`.

Engines: `engine="local"` runs the batches here; `engine="ray"` runs the same batches (the same
[start, stop) ranges, so the same predict calls) on a Ray actor pool, each actor holding the
posterior once (`activebayes.distributed`), and merges their scores or top-k here.

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

import os
from collections.abc import Callable, Sequence
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


def open_pool(pool: Any) -> Any:
    """The pool itself, or for a path (str / PathLike) the .npy file it names as a read-only memmap."""
    if isinstance(pool, (str, os.PathLike)):
        try:
            return np.load(pool, mmap_mode="r")
        except (OSError, ValueError) as exc:
            raise ShapeError(f"pool: expected an .npy file at {os.fspath(pool)!r}, could not read it ({exc})") from None
    return pool


def merge_top_k(indices: Tensor, scores: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """The best k of (indices [n], scores [n]) by descending score, ties: lower index first."""
    by_index = torch.argsort(indices, stable=True)  # then a stable descending sort keeps index order among ties
    indices, scores = indices[by_index], scores[by_index]
    order = torch.sort(scores, descending=True, stable=True).indices[:k]
    return indices[order], scores[order]


@dataclass
class BatchScorer:
    """acquisition(posterior.predict(x_B, n_samples)) for ranges of pool items: the work of
    `score_pool`, run by this process (engine="local") or by each Ray actor (engine="ray").

    `setup()` resolves `device` where it runs and moves the posterior there (once);
    `run(pool, ranges)` scores the items of the [start, stop) ranges, one predict call each.
    """

    posterior: Any
    acquisition: ScoreFn
    device: str | torch.device = "auto"
    n_samples: int | None = None
    top_k: int | None = None

    def setup(self) -> None:
        self.device_ = resolve_device(self.device)
        if hasattr(self.posterior, "to"):
            self.posterior.to(self.device_)

    def score(self, pool: Any, start: int, stop: int) -> Tensor:
        """Scores [stop − start] of items start..stop−1, float32 on the CPU."""
        x = pool_batch(pool, start, stop)
        if x.is_floating_point() and x.dtype != torch.float32:
            x = x.float()
        scores = self.acquisition(self.posterior.predict(x.to(self.device_), n_samples=self.n_samples))
        if not isinstance(scores, Tensor) or scores.shape != (stop - start,):
            got = tuple(scores.shape) if isinstance(scores, Tensor) else type(scores).__name__
            raise ShapeError(f"acquisition: expected scores [{stop - start}] for a batch, got {got}")
        scores = scores.detach().to("cpu", torch.float32)
        if bool(torch.isnan(scores).any()):
            raise ShapeError(f"acquisition: returned NaN scores for pool items {start} to {stop - 1}")
        return scores

    def run(self, pool: Any, ranges: Sequence[tuple[int, int]], progress: Callable[[int], None] | None = None) -> tuple[Tensor, Tensor]:
        """(indices [b], scores [b]) of the ranges' items: all of them in range order, or with
        `top_k` the best k by descending score (a running top-k). progress(stop) after each range."""
        chunks: list[Tensor] = []
        best_idx, best_scores = torch.empty(0, dtype=torch.long), torch.empty(0)
        with torch.inference_mode():
            for start, stop in ranges:
                scores = self.score(pool, start, stop)
                if self.top_k is None:
                    chunks.append(scores)
                else:
                    idx = torch.cat([best_idx, torch.arange(start, stop)])
                    best_idx, best_scores = merge_top_k(idx, torch.cat([best_scores, scores]), self.top_k)
                if progress is not None:
                    progress(stop)
        if self.top_k is not None:
            return best_idx, best_scores
        indices = torch.cat([torch.arange(start, stop) for start, stop in ranges]) if ranges else torch.empty(0, dtype=torch.long)
        return indices, torch.cat(chunks) if chunks else torch.empty(0)


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
    engine: str = "local",
    address: str | None = None,
    workers: int | None = None,
) -> PoolScores:
    """Score every pool item with `acquisition(posterior.predict(x_B, n_samples))`, B at a time.

    Args:
        posterior: anything with `predict(x, n_samples=None) -> Predictive`; when it has
            `to(device)`, it is moved to `device` first.
        pool: [N, ...] items: a tensor, a numpy array or memmap, a torch Dataset whose items
            are x or (x, y), or the path of an .npy file (opened as a memmap; with engine="ray"
            each worker opens it, so the file must be at that path on every node).
        acquisition: a pure function Predictive [S, B, C] -> scores [B], larger = more worth asking.
        batch_size: B, items per predict call.
        device: "auto" (CUDA when present), "cpu" or "cuda[:i]"; with engine="ray", resolved on
            each worker.
        n_samples: S passed on to `predict` (None: the posterior's default).
        top_k: keep only the best k items (a running top-k; memory O(k + B)).
        progress: called as progress(items_done, items_total) after every batch (engine="ray":
            after every group of batches a worker returns).
        engine: "local" (this process) or "ray": the same batches on a Ray actor pool, each actor
            holding the posterior once (`activebayes.distributed.map_ranges`); the same result.
        address: engine="ray" only: None (a local Ray), "auto" or "ray://host:port" (a cluster).
        workers: engine="ray" only: actors (None: one per GPU, or one per CPU without GPUs).
    Returns:
        PoolScores: every score in pool order, or the best k by descending score.
    """
    from activebayes.distributed import check_engine

    if not isinstance(batch_size, int) or batch_size < 1:
        raise ConfigError(f"batch_size: expected a positive integer, got {batch_size!r}")
    if top_k is not None and (not isinstance(top_k, int) or top_k < 1):
        raise ConfigError(f"top_k: expected a positive integer or None, got {top_k!r}")
    check_engine(engine, address)
    opened = open_pool(pool)
    total = pool_size(opened)
    ranges = [(start, min(start + batch_size, total)) for start in range(0, total, batch_size)]
    scorer = BatchScorer(posterior, acquisition, device, n_samples, top_k)
    if engine == "ray":
        return _score_on_ray(scorer, pool, opened, ranges, total, address, workers, progress)
    scorer.setup()
    indices, scores = scorer.run(opened, ranges, None if progress is None else lambda stop: progress(stop, total))
    return PoolScores(indices, scores)


def _score_on_ray(scorer: BatchScorer, pool: Any, opened: Any, ranges: list[tuple[int, int]], total: int,
                  address: str | None, workers: int | None, progress: ProgressFn | None) -> PoolScores:  # fmt: skip
    """score_pool's engine="ray": the ranges on a Ray actor pool, the parts merged here."""
    from activebayes.distributed import PoolFile, map_ranges

    shipped = PoolFile(pool) if isinstance(pool, (str, os.PathLike)) else opened
    done = [0]

    def count(items: int) -> None:
        done[0] += items
        if progress is not None:
            progress(min(done[0], total), total)

    use_gpus = str(scorer.device) != "cpu"
    parts = list(map_ranges(scorer, shipped, ranges, address=address, workers=workers, use_gpus=use_gpus, progress=count))
    indices = torch.from_numpy(np.concatenate([p[0] for p in parts])) if parts else torch.empty(0, dtype=torch.long)
    scores = torch.from_numpy(np.concatenate([p[1] for p in parts])) if parts else torch.empty(0)
    if scorer.top_k is not None:
        return PoolScores(*merge_top_k(indices, scores, scorer.top_k))
    in_order = torch.empty(total, dtype=torch.float32)
    in_order[indices] = scores
    return PoolScores(torch.arange(total), in_order)


__all__ = ["BatchScorer", "PoolScores", "ScoreFn", "merge_top_k", "open_pool", "pool_batch", "pool_size", "score_pool"]
