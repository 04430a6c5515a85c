"""Hostile storage through the CLI: a database file of random bytes, a read-only database, a full
disk, a PostgreSQL server that never answers or cannot be reached: one line each, exit 2, and
the database as it was."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from activebayes.store import PoolStore
from cli_checks import db_dump, run
from hostile_files import CLASSES, TINY, item_keys, mistake, pool_rows, write_rows


# ---- the database file itself ---------------------------------------------------------------------------
NOISE = bytes(np.random.default_rng(1).integers(0, 256, size=8192, dtype=np.uint8))


@pytest.mark.parametrize(
    "command",
    [("status",), ("init", "--name", "x", "--classes", "2"), ("pool", "add", "pool.csv"), ("label", "--from", "pool.csv"),
     ("round", *TINY), ("migrate",), ("export", "out.csv")],
    ids=["status", "init", "pool-add", "label", "round", "migrate", "export"],
)  # fmt: skip
def test_a_database_file_of_random_bytes_is_refused(tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ACTIVEBAYES_PROJECT", raising=False)
    monkeypatch.setenv("ACTIVEBAYES_DB", "sqlite:///noise.db")
    Path("noise.db").write_bytes(NOISE)
    write_rows("pool.csv", ["key", "f0", "f1", "label"], pool_rows(6))
    mistake(run(*command), "noise.db", "not an SQLite database")
    assert Path("noise.db").read_bytes() == NOISE
    assert sorted(p.name for p in tmp_path.iterdir()) == ["noise.db", "pool.csv"]  # no -wal, -shm, out.csv


def make_read_only(path: Path) -> Callable[[], None]:
    """Make `path` (a file, or a folder nothing may be created in) read-only; returns the undo.
    chmod does not stop root, so as root the immutable attribute (chattr +i) is used instead,
    and the test is skipped only where neither can work."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(0o555 if path.is_dir() else 0o444)
        return lambda: path.chmod(mode)
    try:
        subprocess.run(["chattr", "+i", str(path)], check=True, capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"running as root, where chmod does not stop writes, and chattr +i fails here ({exc})")
    return lambda: subprocess.run(["chattr", "-i", str(path)], check=True, capture_output=True, timeout=10)


@pytest.mark.parametrize("target", ["file", "folder"])
def test_a_read_only_database_refuses_writes_in_one_line(tmp_path, monkeypatch, target):
    """A read-only database file, or a read-only folder (SQLite cannot make its journal there):
    pool add and init fail in one line naming the file, and the database is unchanged."""
    folder = tmp_path / "dbdir"
    folder.mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ACTIVEBAYES_PROJECT", raising=False)
    url = f"sqlite:///{folder / 'ro.db'}"
    monkeypatch.setenv("ACTIVEBAYES_DB", url)
    assert run("init", "--name", "blobs", "--classes", CLASSES).exit_code == 0
    with PoolStore(url) as store:  # checkpoint: the WAL's changes are in the file itself
        with store.engine.connect() as conn:
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    write_rows("pool.csv", ["key", "f0", "f1", "label"], pool_rows(6))
    before = db_dump(url)
    for extra in folder.glob("ro.db-*"):  # no -wal / -shm left to write into: the folder holds the file alone
        extra.unlink()
    undo = make_read_only(folder / "ro.db" if target == "file" else folder)
    try:
        for command in (("pool", "add", "pool.csv"), ("init", "--name", "second", "--classes", "2")):
            result = run(*command)
            mistake(result, "ro.db")
            assert any(w in result.stderr.lower() for w in ("read-only", "readonly", "permission")), result.stderr
    finally:
        undo()
    assert db_dump(url) == before


# ---- a full disk: a write fails with EFBIG under RLIMIT_FSIZE -----------------------------------------
_LIMITED = textwrap.dedent(
    """
    import resource, signal, sys
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
    limit = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    from activebayes_cli.main import app
    app(sys.argv[2:], prog_name="activebayes")
    """
)


def run_limited(limit: int, *args: str) -> subprocess.CompletedProcess:
    """The CLI in a subprocess whose files cannot grow past `limit` bytes."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run([sys.executable, "-c", _LIMITED, str(limit), *args], capture_output=True, text=True,
                          env=env, timeout=120)  # fmt: skip


def test_a_full_disk_fails_cleanly_and_keeps_the_database(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ACTIVEBAYES_PROJECT", raising=False)
    url = f"sqlite:///{tmp_path / 'full.db'}"
    monkeypatch.setenv("ACTIVEBAYES_DB", url)
    assert run("init", "--name", "blobs", "--classes", CLASSES).exit_code == 0
    assert run("init", "--name", "other", "--classes", CLASSES).exit_code == 0
    rng = np.random.default_rng(0)
    rows = [[f"item-{i:05d}-{'x' * 40}", *(f"{v:.4f}" for v in rng.normal(size=4)), "abc"[i % 3]] for i in range(6000)]
    write_rows("big.csv", ["key", "f0", "f1", "f2", "f3", "label"], rows)
    before = db_dump(url)
    limit = (tmp_path / "full.db").stat().st_size + 64 * 1024
    done = run_limited(limit, "--project", "blobs", "pool", "add", "big.csv", "--test-fraction", "0.5")
    assert done.returncode == 2, (done.returncode, done.stderr[-3000:])
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert "full" in lines[0] or "too large" in lines[0] or "space" in lines[0], lines[0]
    assert db_dump(url) == before  # re-opened: every earlier row intact, nothing half-written
    result = run("--project", "blobs", "pool", "add", "big.csv", "--test-fraction", "0.5")  # room again: it works
    assert result.exit_code == 0, result.output
    assert len(item_keys(url)) == 6000


def test_a_full_disk_on_a_new_database(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    done = run_limited(4096, "--db", f"sqlite:///{tmp_path / 'new.db'}", "init", "--name", "p", "--classes", "2")
    assert done.returncode == 2, (done.returncode, done.stderr[-3000:])
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "new.db" in lines[0], done.stderr[-3000:]


# ---- a PostgreSQL server that never answers ------------------------------------------------------------
@pytest.fixture
def silent_server():
    """A local port that accepts TCP connections and never sends a byte; yields the port."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for conn in accepted:
        conn.close()
    server.close()


@pytest.mark.parametrize("command", [("init", "--name", "x", "--classes", "2")], ids=["init"])
def test_a_silent_postgresql_server_is_one_line_within_10_s(tmp_path, monkeypatch, silent_server, command):
    monkeypatch.chdir(tmp_path)
    url = f"postgresql+psycopg://postgres@127.0.0.1:{silent_server}/x"
    started = time.monotonic()
    result = run("--db", url, *command)
    assert time.monotonic() - started < 10
    mistake(result, "database", "timeout")
    assert list(tmp_path.iterdir()) == []


def test_an_unroutable_postgresql_host_is_one_line_within_10_s(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    started = time.monotonic()
    result = run("--db", "postgresql+psycopg://postgres@10.255.255.1:5432/x", "status")
    assert time.monotonic() - started < 10
    mistake(result, "database")
