"""Shared fixtures. Keep each small; append new ones at the end."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import Tensor

# The tests' tensors are small and the machines shared: one intra-op thread avoids contention.
torch.set_num_threads(1)

MNIST_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "mnist"


def _bald(pred) -> Tensor:
    """BALD [N] = H[mean_s p] − mean_s H[p_s] for probs [S, N, C] (equal weights), in nats."""
    try:
        from activebayes.acquisition import bald
    except ImportError:
        bald = None
    if bald is not None:
        return bald(pred)
    probs = pred.probs if hasattr(pred, "probs") else pred
    mean = probs.mean(0)
    total = -(mean * mean.clamp_min(1e-12).log()).sum(-1)
    expected = -(probs * probs.clamp_min(1e-12).log()).sum(-1).mean(0)
    return total - expected


@pytest.fixture
def bald() -> Callable:
    """BALD scores of a Predictive: activebayes.acquisition.bald when present, else inline."""
    return _bald


@pytest.fixture(scope="session")
def moons() -> tuple[Tensor, Tensor]:
    """Two moons (sklearn.datasets.make_moons): x [200, 2] float32, y [200] long, seed 0."""
    from sklearn.datasets import make_moons

    x, y = make_moons(n_samples=200, noise=0.1, random_state=0)
    return torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(y, dtype=torch.long)


@pytest.fixture(scope="session")
def mnist_dir() -> Path:
    """/work/shared/data/mnist (../shared/data/mnist from the project root); skips when absent."""
    if not (MNIST_DIR / "train-images-idx3-ubyte.gz").is_file():
        pytest.skip(f"MNIST not found at {MNIST_DIR}")
    return MNIST_DIR


def read_idx(path: Path) -> np.ndarray:
    """An IDX file (gzipped or not) as a numpy array of its stored shape."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        data = handle.read()
    n_dims = data[3]
    shape = tuple(int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(n_dims))
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * n_dims).reshape(shape)


@pytest.fixture(scope="session")
def mnist(mnist_dir: Path) -> dict[str, Tensor]:
    """MNIST as tensors: train_x [60000, 1, 28, 28] and test_x [10000, 1, 28, 28] float32 in
    [0, 1], train_y and test_y long. Skips when the data are absent."""
    out = {}
    for split, prefix in (("train", "train"), ("test", "t10k")):
        images = read_idx(mnist_dir / f"{prefix}-images-idx3-ubyte.gz")
        labels = read_idx(mnist_dir / f"{prefix}-labels-idx1-ubyte.gz")
        out[f"{split}_x"] = torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)
        out[f"{split}_y"] = torch.from_numpy(labels.astype(np.int64))
    return out
