"""What the hostile-input tests share (`test_hostile_files.py`, `test_hostile_storage.py`,
`test_hostile_configs.py`): a project with a csv pool on SQLite or PostgreSQL, files of rows,
and the check that a mistake is one line."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy.engine import make_url

from activebayes.store import PoolStore
from cli_checks import assert_mistake, run


CLASSES = "a,b,c"
TINY = ("--epochs", "1", "--samples", "2", "--device", "cpu", "--k", "2")
MAX_LINE = 2000  # an error line never echoes megabytes of input


def mistake(result, *words: str) -> None:
    """assert_mistake, and the line stays short whatever the input held."""
    assert_mistake(result, *words)
    assert len(result.stderr) < MAX_LINE, len(result.stderr)


def sqlite_file(url: str) -> Path | None:
    parsed = make_url(url)
    return Path(parsed.database) if parsed.get_backend_name() == "sqlite" else None


def pool_rows(n: int = 30, seed: int = 0) -> list[list[str]]:
    """Rows key, f0, f1, label with three classes."""
    rng = np.random.default_rng(seed)
    return [[f"item-{i:03d}", f"{rng.normal():.4f}", f"{rng.normal():.4f}", "abc"[i % 3]] for i in range(n)]


def write_rows(path: str | Path, header: list[str] | None, rows: list[list[str]], *, delimiter: str = ",",
               encoding: str = "utf-8", newline: str = "\n") -> Path:  # fmt: skip
    path = Path(path)
    with path.open("w", newline="", encoding=encoding) as fh:
        writer = csv.writer(fh, delimiter=delimiter, lineterminator=newline)
        if header is not None:
            writer.writerow(header)
        writer.writerows(rows)
    return path


def item_keys(url: str, project: str = "blobs") -> set[str]:
    with PoolStore(url, create=False, upgrade=False) as store:
        return store.item_keys(project)


def labels_of(url: str, project: str = "blobs") -> dict[str, str]:
    with PoolStore(url, create=False, upgrade=False) as store:
        _, keys, values = store.labels(project)
        return dict(zip(keys, values))


def add_pool() -> None:
    write_rows("pool.csv", ["id", "f0", "f1", "label"], pool_rows())
    result = run("pool", "add", "pool.csv", "--key-column", "id", "--test-fraction", "0.2")
    assert result.exit_code == 0, result.output


# The many parsing cases run one test each on SQLite (`sqlite_*`), and all in one test on
# PostgreSQL (`pg_*`): the refusal is the same code, the database each backend's own.
def cli_on(url: str, tmp_path: Path, monkeypatch) -> str:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ACTIVEBAYES_PROJECT", raising=False)
    monkeypatch.setenv("ACTIVEBAYES_DB", url)
    result = run("init", "--name", "blobs", "--classes", CLASSES)
    assert result.exit_code == 0, result.output
    return url


@pytest.fixture
def project(cli_db) -> str:
    """cli_db holding the project "blobs" (classes a, b, c) without data."""
    result = run("init", "--name", "blobs", "--classes", CLASSES)
    assert result.exit_code == 0, result.output
    return cli_db


@pytest.fixture
def pooled(project) -> str:
    """`project` with a 30-row pool (24 pool items, 6 labelled test items) from pool.csv."""
    add_pool()
    return project


@pytest.fixture
def sqlite_project(tmp_path, monkeypatch) -> str:
    return cli_on(f"sqlite:///{tmp_path / 'test.db'}", tmp_path, monkeypatch)


@pytest.fixture
def pg_project(pg_url, tmp_path, monkeypatch) -> str:
    return cli_on(pg_url, tmp_path, monkeypatch)


@pytest.fixture
def sqlite_pooled(sqlite_project) -> str:
    add_pool()
    return sqlite_project


@pytest.fixture
def pg_pooled(pg_project) -> str:
    add_pool()
    return pg_project
