"""Shared fixtures. Keep each small; append new ones at the end."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import Tensor

# The tests' tensors are small and the machines shared: one intra-op thread avoids contention.
# ACTIVEBAYES_TEST_THREADS re-runs the suite at another thread count (results must not move).
torch.set_num_threads(int(os.environ.get("ACTIVEBAYES_TEST_THREADS", "1")))

MNIST_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "mnist"


@pytest.fixture
def bald() -> Callable:
    """BALD scores [N] of a Predictive, in nats."""
    from activebayes.acquisition import bald

    return bald


@pytest.fixture(scope="session")
def moons() -> tuple[Tensor, Tensor]:
    """Two moons (sklearn.datasets.make_moons): x [200, 2] float32, y [200] long, seed 0."""
    from sklearn.datasets import make_moons

    x, y = make_moons(n_samples=200, noise=0.1, random_state=0)
    return torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(y, dtype=torch.long)


@pytest.fixture(scope="session")
def mnist_dir() -> Path:
    """../shared/data/mnist from the project root; skips when absent."""
    if not (MNIST_DIR / "train-images-idx3-ubyte.gz").is_file():
        pytest.skip(f"MNIST not found at {MNIST_DIR}")
    return MNIST_DIR


@pytest.fixture(scope="session")
def mnist(mnist_dir: Path) -> dict[str, Tensor]:
    """MNIST as tensors: train_x [60000, 1, 28, 28] and test_x [10000, 1, 28, 28] float32 in
    [0, 1], train_y and test_y long. Skips when the data are absent."""
    from activebayes.data import read_idx

    out = {}
    for split, prefix in (("train", "train"), ("test", "t10k")):
        images = read_idx(mnist_dir / f"{prefix}-images-idx3-ubyte.gz")
        labels = read_idx(mnist_dir / f"{prefix}-labels-idx1-ubyte.gz")
        out[f"{split}_x"] = torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)
        out[f"{split}_y"] = torch.from_numpy(labels.astype(np.int64))
    return out


@pytest.fixture
def pg_url():
    """A URL to a fresh, empty PostgreSQL schema on ACTIVEBAYES_TEST_PG_URL, dropped afterwards;
    skips when the variable is unset or the server unreachable."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    base = os.environ.get("ACTIVEBAYES_TEST_PG_URL")
    if not base:
        pytest.skip("ACTIVEBAYES_TEST_PG_URL is not set")
    admin = create_engine(base)
    schema = f"ab_test_{uuid.uuid4().hex[:12]}"
    try:
        with admin.begin() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    except Exception as exc:  # noqa: BLE001 - any connection failure means "no server here"
        admin.dispose()
        pytest.skip(f"PostgreSQL at ACTIVEBAYES_TEST_PG_URL is unreachable: {exc}")
    yield make_url(base).update_query_dict({"options": f"-csearch_path={schema}"}).render_as_string(False)
    with admin.begin() as conn:
        conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request, tmp_path):
    """An empty database: a SQLite file, then (when reachable) a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'test.db'}"
    return request.getfixturevalue("pg_url")


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.cuda)])
def device(request) -> str:
    """Each device a tensor test runs on: "cpu", then "cuda" (marked `cuda`, the GPU lane run by
    `./dev.sh test -m cuda`), which is skipped where torch sees no CUDA device."""
    if request.param == "cuda" and not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return request.param


@pytest.fixture(scope="session")
def test_seed() -> int:
    """The seed of the slow training tests, from ACTIVEBAYES_TEST_SEED (default 0), so their
    assertions can be re-run at other seeds: a test must hold whatever the seed."""
    return int(os.environ.get("ACTIVEBAYES_TEST_SEED", "0"))


@pytest.fixture
def cli_db(db_url, tmp_path, monkeypatch) -> str:
    """`db_url` (SQLite, then PostgreSQL) as the CLI's database: ACTIVEBAYES_DB set, no
    ACTIVEBAYES_PROJECT, and an empty working directory (tmp_path)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ACTIVEBAYES_PROJECT", raising=False)
    monkeypatch.setenv("ACTIVEBAYES_DB", db_url)
    return db_url


@pytest.fixture
def interleaved_input(monkeypatch):
    """Lets `CliRunner.invoke(..., input=InterleavedInput(...))` hand that stream itself to the command."""
    import typer.testing

    from cli_checks import InterleavedInput

    plain = typer.testing.make_input_stream
    monkeypatch.setattr(typer.testing, "make_input_stream", lambda given, charset: given if isinstance(given, InterleavedInput) else plain(given, charset))
