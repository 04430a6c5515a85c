"""A first batch that covers the pool: TypiClust (Hacohen, Dekel and Weinshall, "Active learning
on a budget: opposite strategies suit high and low budgets", ICML 2022).

Before any label there is no model to be uncertain with, and at small budgets typical points
teach more than odd ones. TypiClust clusters the pool into L + k groups (L labelled items, k to
choose) and takes, from each of the k largest groups that hold no labelled item, its most typical
point:

    typicality(x) = ( (1/K) Σ_{x' ∈ KNN_K(x)} ‖x − x'‖₂ )⁻¹        K = min(20, |cluster| − 1)

the inverse mean distance to its K nearest neighbours within its cluster (a density estimate).
Clusters smaller than `min_cluster` (5) are skipped; when fewer than k clusters qualify, the rest
of the batch comes from covered clusters by size, then uniformly at random.

What is clustered: a table's model features (standardised, one-hot, imputed: what the network
sees); an image pool's pixels flattened and projected on their first 50 principal components
(`embed`). Clustering is scikit-learn's KMeans (MiniBatchKMeans above 50 clusters, as TypiClust),
seeded, so a seed gives the same batch on the same machine.

    idx = typical_batch(x, k=10, seed=0)        # x [N, D] (or [N, C, H, W]); idx [k] long

A loop's `first="auto"` takes such batches on classification only (`first_batch_as_run`).
"""

from __future__ import annotations

import numpy as np
import torch

from activebayes.errors import ConfigError, ShapeError

MIN_CLUSTER = 5
MAX_NEIGHBOURS = 20
PCA_DIMS = 50
KMEANS_FULL_UP_TO = 50  # clusters; MiniBatchKMeans above


def first_batch_as_run(first: str, task: str) -> str:
    """The early-round batch a loop's `first` ("random", "typical" or "auto") gives on `task`
    ("classification" or "regression"): "auto" takes typical batches on classification only
    (TypiClust's budget is counted in labels a class; `activebayes._selection` says which rounds)
    and is "random", a uniform first batch, on a regression; "random" and "typical" as they are.

    >>> first_batch_as_run("auto", "regression"), first_batch_as_run("auto", "classification")
    ('random', 'auto')
    """
    return "random" if first == "auto" and task != "classification" else first


def embed(x: np.ndarray | torch.Tensor, *, seed: int = 0, overwrite: bool = False) -> np.ndarray:
    """[N, D'] float32 points to cluster: rows of x flattened; more than 64 dimensions (an image)
    are projected on their first 50 principal components (randomised PCA, seeded). The PCA
    centres a copy of the rows, or with `overwrite` the caller's x itself (float32: no copy of
    the features at all; the points are the same)."""
    arr = x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)
    if arr.ndim < 2 or arr.shape[0] == 0:
        raise ShapeError(f"typical_batch: expected items [N >= 1, ...], got shape {arr.shape}")
    flat = arr.reshape(arr.shape[0], -1).astype(np.float32, copy=False)
    if flat.shape[1] > 64 and flat.shape[0] > PCA_DIMS:
        from sklearn.decomposition import PCA

        own = overwrite or not np.may_share_memory(flat, arr)  # a copy made here is ours to centre
        flat = PCA(n_components=PCA_DIMS, svd_solver="randomized", random_state=seed, copy=not own).fit_transform(flat).astype(np.float32)
    return flat


def typicality(points: np.ndarray, k_neighbours: int = MAX_NEIGHBOURS) -> np.ndarray:
    """[n] inverse mean distance of each point to its K = min(k_neighbours, n − 1) nearest
    neighbours among `points` [n, D] (itself excluded); a single point has typicality 1."""
    n = points.shape[0]
    if n == 1:
        return np.ones(1)
    from sklearn.neighbors import NearestNeighbors

    k = min(k_neighbours, n - 1)
    dist, _ = NearestNeighbors(n_neighbors=k + 1).fit(points).kneighbors(points)
    mean = dist[:, 1:].mean(axis=1)
    return 1.0 / np.maximum(mean, 1e-12)


def _cluster(points: np.ndarray, n_clusters: int, seed: int) -> np.ndarray:
    """[N] cluster of each point. Fewer distinct points than clusters (duplicated rows) leave
    some clusters empty, which `typical_batch` fills; scikit-learn's warning about it is muted."""
    import warnings

    from sklearn.cluster import KMeans, MiniBatchKMeans
    from sklearn.exceptions import ConvergenceWarning

    if n_clusters <= KMEANS_FULL_UP_TO:
        model = KMeans(n_clusters=n_clusters, n_init=3, random_state=seed)
    else:
        model = MiniBatchKMeans(n_clusters=n_clusters, n_init=3, random_state=seed, batch_size=max(1024, 4 * n_clusters))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit_predict(points)


def typical_batch(
    x: np.ndarray | torch.Tensor,
    k: int,
    *,
    labelled: np.ndarray | torch.Tensor | None = None,
    seed: int = 0,
    min_cluster: int = MIN_CLUSTER,
    overwrite: bool = False,
) -> torch.Tensor:
    """[k] long: positions in x (the N candidates) of a TypiClust batch (module docstring).

    labelled: items already labelled [L, ...] (their clusters count as covered), or None.
    overwrite: x may be changed (`embed`: no copy of x made; the batch is the same)."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigError(f"typical_batch: k must be a positive integer, got {k!r}")
    n = int(x.shape[0])
    if k > n:
        raise ConfigError(f"typical_batch: k={k} exceeds the {n} candidates")
    n_labelled = 0 if labelled is None else int(labelled.shape[0])
    both = x if labelled is None or n_labelled == 0 else _concat(x, labelled)
    points = embed(both, seed=seed, overwrite=overwrite or both is not x)
    n_clusters = min(n_labelled + k, points.shape[0])
    assign = _cluster(points, n_clusters, seed)
    cand_assign, covered = assign[:n], set(assign[n:].tolist())
    sizes = np.bincount(cand_assign, minlength=n_clusters)
    order = sorted(range(n_clusters), key=lambda c: (c in covered, sizes[c] < min_cluster, -sizes[c], c))
    chosen: list[int] = []
    for c in order:
        if len(chosen) == k:
            break
        members = np.flatnonzero(cand_assign == c)
        if members.size == 0:
            continue
        chosen.append(int(members[int(np.argmax(typicality(points[members])))]))
    if len(chosen) < k:  # fewer non-empty clusters than k: the rest uniformly at random
        rest = np.setdiff1d(np.arange(n), chosen)
        rng = np.random.default_rng(seed)
        chosen.extend(rng.choice(rest, size=k - len(chosen), replace=False).tolist())
    return torch.as_tensor(chosen, dtype=torch.long)


def _concat(a: np.ndarray | torch.Tensor, b: np.ndarray | torch.Tensor) -> np.ndarray:
    to_np = lambda t: t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)  # noqa: E731
    return np.concatenate([to_np(a), to_np(b)], axis=0)
