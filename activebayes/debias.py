"""`debias`: train on the LURE-weighted loss of the actively chosen labels (Farquhar, Gal &
Rainforth, ICLR 2021, section 5: R̃_LURE as the training objective).

The labelled set is a sequential draw from the pool: M items, the m-th drawn with probability q_m
among the items still left. Training minimises (1/M) Σ_m v_m ℓ(x_m, y_m) with the LURE weights

    v_m = 1 + (N − M)/(N − m) · (1/((N − m + 1) q̃_m) − 1)         (`estimates.lure_weights`)

N the pool (labelled and unlabelled pool items), m the item's place in the order of acquisition
(round, then rank), and q̃_m the probability of the draw over all N − m + 1 items left. A round
drew among its N_t candidates (fewer than N − m + 1 with an acquisition subset, a uniform
sample of them), so its j-th draw (j = 0, 1, ...) is taken over as
q̃_m = q · (N_t − j)/(N − m + 1): exact for uniform draws (v = 1), the subset's inclusion
probability otherwise. Items without a recorded probability (a deterministic top-k, a typical
first batch, labels given outside a round) keep v = 1: no proposal, nothing to correct.

The weights reach training through a context (`sample_weights`), read by
`activebayes.training.train`: each epoch then draws its items with probability ∝ v_m, with
replacement (`weighted_epoch_order`), so every loss a posterior trains with (its own `loss_fn`
included) is the weighted one in expectation: E[ℓ of a drawn item] = Σ v_m ℓ_m / Σ v_m. A context
does not cross processes: members trained as Ray tasks, and posteriors that do not train with
`train` (the Gaussian process), are fitted unweighted.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np
import torch
from torch import Tensor

from activebayes.errors import ShapeError

_WEIGHTS: ContextVar[Tensor | None] = ContextVar("activebayes_sample_weights", default=None)


@contextmanager
def sample_weights(weights: Tensor | np.ndarray | None) -> Iterator[None]:
    """Within the block, `train` weights its N training items by `weights` [N] (None: unweighted)."""
    value = None if weights is None else torch.as_tensor(np.asarray(weights, dtype=np.float64)).float()
    if value is not None and (value.dim() != 1 or not torch.all(torch.isfinite(value)) or torch.any(value < 0) or value.sum() <= 0):
        raise ShapeError("sample weights: expected a vector [N] of finite non-negative weights with a positive sum")
    token = _WEIGHTS.set(value)
    try:
        yield
    finally:
        _WEIGHTS.reset(token)


def current_sample_weights(n: int) -> Tensor | None:
    """The weights [n] set by `sample_weights` for a training set of n items, or None."""
    weights = _WEIGHTS.get()
    if weights is None:
        return None
    if weights.shape[0] != n:
        raise ShapeError(f"sample weights: {weights.shape[0]} weights for {n} training items")
    return weights


def weighted_epoch_order(weights: Tensor, length: int, generator: torch.Generator) -> Tensor:
    """[length] item indices drawn with replacement with probability ∝ weights [n]."""
    return torch.multinomial(weights.cpu(), length, replacement=True, generator=generator)


def acquisition_weights(
    order: Sequence[tuple[str, float | None, int | None, int]], pool_size: int, outside: int = 0
) -> dict[str, float]:
    """{key: v_m} (module docstring) for the items acquired by rounds, in order of acquisition:
    (key, q or None, the round's N_t or None, j the draw's index in its round). `outside` labels
    came before them without a round (weight 1, counted in M)."""
    m_total = outside + len(order)
    n = int(pool_size)
    if n < m_total:
        raise ShapeError(f"pool_size: {n} pool items cannot hold {m_total} labels")
    weights: dict[str, float] = {}
    for place, (key, q, candidates, j) in enumerate(order, start=outside + 1):
        if q is None or candidates is None or m_total == n or place == n:
            weights[key] = 1.0
            continue
        weights[key] = 1.0 + (n - m_total) / (n - place) * (1.0 / ((candidates - j) * float(q)) - 1.0)
    return weights


def lure_training_weights(store: Any, project: str, keys: Sequence[str]) -> np.ndarray:
    """v [L] of the labelled pool items `keys` (as `PoolStore.labels` lists them) from the
    recorded rounds and their queries' draw probabilities; 1 for an item no round drew."""
    labelled = set(keys)
    order: list[tuple[str, float | None, int | None, int]] = []
    seen: set[str] = set()
    for rnd in store.rounds(project):
        candidates = (rnd.acquisition_settings or {}).get("candidates")
        for j, q in enumerate(sorted(store.queries(project, rnd.number), key=lambda q: q.rank)):
            if q.key in labelled and q.key not in seen:
                order.append((q.key, getattr(q, "probability", None), candidates, j))
                seen.add(q.key)
    pool_size = store.count_items(project, split="pool")
    weights = acquisition_weights(order, pool_size, outside=len(labelled - seen))
    return np.asarray([weights.get(k, 1.0) for k in keys], dtype=np.float64)
