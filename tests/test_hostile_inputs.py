"""Hostile input, end to end through the CLI: every mistake prints ONE line on stderr naming what
is wrong and where (file, line, column, key), exits with code 2, and writes nothing (the
database dump is the same before and after, on SQLite and PostgreSQL where a database is
involved). Valid but unusual CSVs (a byte-order mark, `;` or tab delimiters, extra columns,
keys holding commas, quotes or non-ASCII text) work.

Items covered elsewhere (not repeated here): label --from with a BOM, `;`, tab, UTF-16, extra
columns, no header, a ragged row, a key given twice, an unknown key, a label outside the
classes, not UTF-8 (tests/test_cli_label.py); pool add with a ragged row, a text feature, a
label outside the classes (tests/test_cli.py::test_pool_add_mistakes_leave_database_unchanged);
a changed data file (tests/test_cli.py::test_changed_data_file_is_refused); a text file as
SQLite database for `status` (tests/test_cli_global.py::test_a_file_that_is_not_sqlite); a
missing model module or attribute (tests/test_cli.py::test_round_mistakes_leave_database_unchanged);
study config keys (tests/test_study.py)."""

from __future__ import annotations

import csv
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy.engine import make_url

from activebayes.store import PoolStore
from cli_checks import assert_mistake, db_dump, run

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


@pytest.fixture
def project(cli_db) -> str:
    """cli_db holding the project "blobs" (classes a, b, c) without data."""
    result = run("init", "--name", "blobs", "--classes", CLASSES)
    assert result.exit_code == 0, result.output
    return cli_db


def _add_pool() -> None:
    write_rows("pool.csv", ["id", "f0", "f1", "label"], pool_rows())
    result = run("pool", "add", "pool.csv", "--key-column", "id", "--test-fraction", "0.2")
    assert result.exit_code == 0, result.output


@pytest.fixture
def pooled(project) -> str:
    """`project` with a 30-row pool (24 pool items, 6 labelled test items) from pool.csv."""
    _add_pool()
    return project


# The many parsing cases run one test each on SQLite (`sqlite_*`), and all in one test on
# PostgreSQL (`pg_*`): the refusal is the same code, the database each backend's own.
def _cli_on(url: str, tmp_path: Path, monkeypatch) -> str:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ACTIVEBAYES_PROJECT", raising=False)
    monkeypatch.setenv("ACTIVEBAYES_DB", url)
    result = run("init", "--name", "blobs", "--classes", CLASSES)
    assert result.exit_code == 0, result.output
    return url


@pytest.fixture
def sqlite_project(tmp_path, monkeypatch) -> str:
    return _cli_on(f"sqlite:///{tmp_path / 'test.db'}", tmp_path, monkeypatch)


@pytest.fixture
def pg_project(pg_url, tmp_path, monkeypatch) -> str:
    return _cli_on(pg_url, tmp_path, monkeypatch)


@pytest.fixture
def sqlite_pooled(sqlite_project) -> str:
    _add_pool()
    return sqlite_project


@pytest.fixture
def pg_pooled(pg_project) -> str:
    _add_pool()
    return pg_project


# ---- pool add: unusual but valid CSVs work ---------------------------------------------------------
ODD_KEYS = ["a,b", 'say "hi"', "café", "日本語", "semi;colon", "tab\there", " padded "]


@pytest.mark.parametrize("form", ["bom", "semicolon", "tab", "crlf", "utf16-tab", "extra-columns", "odd-keys"])
def test_pool_add_reads_valid_csv_forms(project, form):
    rows = pool_rows()
    header, delimiter, encoding, newline, args = ["key", "f0", "f1", "label"], ",", "utf-8", "\n", []
    if form == "bom":  # Excel's "CSV UTF-8": the key column is still found by its name
        encoding = "utf-8-sig"
    elif form == "semicolon":
        delimiter = ";"
    elif form == "tab":
        delimiter = "\t"
    elif form == "crlf":
        newline = "\r\n"
    elif form == "utf16-tab":  # Excel's "Unicode Text"
        delimiter, encoding, newline = "\t", "utf-16", "\r\n"
    elif form == "extra-columns":  # a numeric and a quoted text column besides the features
        header = ["note", "key", "f0", "f1", "weight", "label"]
        rows = [[f"seen, {'xy'[i % 2]}", r[0], r[1], r[2], str(2 * i + 1), r[3]] for i, r in enumerate(rows)]
    else:  # keys that need quoting, or are not ASCII
        for i, key in enumerate(ODD_KEYS):
            rows[i][0] = key
    write_rows("pool.csv", header, rows, delimiter=delimiter, encoding=encoding, newline=newline)
    result = run("--json", "pool", "add", "pool.csv", *args)
    assert result.exit_code == 0, result.output
    expected = {r[1] if form == "extra-columns" else r[0] for r in rows}
    assert item_keys(project) == {k.strip() for k in expected}
    if form == "extra-columns":
        assert '"note"' in result.stdout and "weight" not in result.stderr  # one-hot note, numeric weight


def test_odd_keys_round_trip_through_label_from(project):
    rows = pool_rows()
    for i, key in enumerate(ODD_KEYS):
        rows[i][0] = key
    write_rows("pool.csv", ["key", "f0", "f1", "label"], rows)
    assert run("pool", "add", "pool.csv").exit_code == 0
    answers = [[key.strip(), "abc"[i % 3]] for i, key in enumerate(ODD_KEYS)]
    write_rows("answers.csv", ["key", "label"], answers)
    result = run("label", "--from", "answers.csv")
    assert result.exit_code == 0, result.output
    assert labels_of(project) == dict(answers)
    write_rows("semi.csv", ["key", "label"], answers, delimiter=";")  # ';' file: keys holding ',' or ';' quoted
    assert run("label", "--from", "semi.csv").exit_code == 0


# ---- pool add: malformed or ambiguous CSVs are refused in one line ---------------------------------
def _bad_pool(case: str) -> tuple[bytes, list[str], list[str]]:
    """(file bytes, extra args, words the error line must hold) of a refused pool csv."""
    header = "id,f0,f1,label\n"
    rows = [",".join(r) + "\n" for r in pool_rows(8)]
    key = ["--key-column", "id"]

    def body(*replace: tuple[int, str]) -> bytes:
        out = list(rows)
        for index, line in replace:
            out[index] = line
        return (header + "".join(out)).encode()

    cases = {
        "no-header": ("".join(rows).encode(), [], ["line 1", "header"]),
        "no-header-key-column": ("".join(rows).encode(), key, ["line 1", "header"]),
        "duplicate-key": (body((4, "item-001,0.1,0.2,b\n")), key, ["'item-001'", "line 3", "line 6"]),
        "empty-key": (body((2, ",0.1,0.2,b\n")), key, ["line 4", "empty key", "'id'"]),
        "duplicate-column": (("id,f0,f0,label\n" + "".join(rows)).encode(), key, ["line 1", "'f0'", "more than once"]),
        "mixed-delimiters": (("id;f0,f1;label\n" + "".join(rows)).encode(), key, ["line 1", "','", "';'"]),
        "unquoted-comma-in-key": (body((3, "a,b,0.1,0.2,b\n")), key, ["line 5", "expected 4 fields"]),
        "ten-mb-field": (body((1, "item-x," + "7" * 10_000_000 + ",0.2,a\n")), key, ["line 3"]),
        "ten-mb-line-alone": (b"x" * 10_000_000, [], ["line 1"]),
        "ten-mb-header": (("h," * 5_000_000 + "\n").encode(), [], ["line 1"]),
        "nul-byte": (body((1, "item-x,0\x00.1,0.2,a\n")), key, ["line 3", "NUL"]),
        "undefined-byte": (header.encode() + "café,0.1,0.2,a\n".encode("latin-1").replace(b"\xe9", b"\x81"), key,
                           ["neither UTF-8 nor Windows-1252", "byte 0x81", "line 2"]),
        "mixed-encodings": (header.encode() + "café,0.1,0.2,a\n".encode() + "thé,0.1,0.2,b\n".encode("cp1252"), key,
                            ["mixes UTF-8 with other text", "byte 0xe9", "line 3"]),
        "label-float": (body((2, "item-x,0.1,0.2,1.5\n")), key, ["line 4", "'1.5'", "not one of the classes"]),
        "label-wrong-case": (body((2, "item-x,0.1,0.2,A\n")), key, ["line 4", "'A'", "not one of the classes"]),
        "label-empty": (body((2, "item-x,0.1,0.2,\n")), key, ["line 4", "label", "empty"]),
        "nan": (body((3, "item-x,nan,0.2,a\n")), [*key, "--missing", "error"], ["line 5", "'f0' has no value", "--missing impute"]),
        "NaN": (body((3, "item-x,0.1,NaN,a\n")), [*key, "--missing", "error"], ["line 5", "'f1' has no value"]),
        "inf": (body((0, "item-x,inf,0.2,a\n")), key, ["line 2", "infinite"]),
        "minus-inf": (body((7, "item-x,-Infinity,0.2,a\n")), key, ["line 9", "infinite"]),
        "overflow": (body((1, "item-x,1e999,0.2,a\n")), key, ["line 3", "infinite"]),
        "decimal-comma": (("id;f0;f1;label\n" + "".join(f"k{i};{'0.1.2' if i == 3 else f'0,{i}'};1;a\n" for i in range(6))).encode(), key,
                          ["line 5", "'f0'", "decimal comma ('0,0')", "'0.1.2'"]),
        "only-header": (header.encode(), key, ["no rows"]),
        "empty-file": (b"", [], ["empty"]),
        "blank-lines": (b"\n\n\n", [], ["empty"]),
    }  # fmt: skip
    return cases[case]


BAD_POOL = [
    "no-header", "no-header-key-column", "duplicate-key", "empty-key", "duplicate-column", "mixed-delimiters",
    "unquoted-comma-in-key", "ten-mb-field", "ten-mb-line-alone", "ten-mb-header", "nul-byte", "undefined-byte", "mixed-encodings",
    "label-float", "label-wrong-case", "label-empty", "nan", "NaN", "inf", "minus-inf", "overflow",
    "decimal-comma", "only-header", "empty-file", "blank-lines",
]  # fmt: skip


def test_square_brackets_are_shown_as_written(tmp_path, monkeypatch):
    """Cells, column names and classes holding square brackets ('[urgent]', 'B[/x]') are printed
    as written by every command that shows them (rich reads no markup in them), and one that
    looks like a closing tag does not crash a command after it has written."""
    _cli_on(f"sqlite:///{tmp_path / 'b.db'}", tmp_path, monkeypatch)
    rows = [[str(i), f"0.{i}", ("[urgent]", "see [1]", "[/b]cold")[i % 3], ("B[/x]", "c")[i % 2]] for i in range(1, 9)]
    write_rows("b.csv", ["id", "x", "[draft] note", "label"], rows)
    added = run("--project", "b2", "init", "--name", "b2")
    assert added.exit_code == 0, added.output
    added = run("--project", "b2", "pool", "add", "b.csv")
    assert added.exit_code == 0, added.output
    said = " ".join(added.output.split())
    assert "classes read from the labels: B[/x], c" in said and "one-hot: [draft] note" in said
    asked = run("--project", "b2", "round", *TINY)
    assert asked.exit_code == 0, asked.output
    typed = run("--project", "b2", "label", input="s\nB[/x]\n")
    assert typed.exit_code == 0, typed.output
    assert "[draft] note" in typed.output and "label [1 B[/x], 2 c]" in typed.output
    assert any(cell in typed.output for cell in ("[urgent]", "see [1]", "[/b]cold"))
    status = run("--project", "b2", "status")
    assert status.exit_code == 0 and "Traceback" not in status.output
    helped = run("round", "--help")
    assert "pip install 'activebayes[ray]'" in " ".join(helped.output.split())


def _refuse_bad_pool(case: str) -> None:
    data, args, words = _bad_pool(case)
    Path("bad.csv").write_bytes(data)
    started = time.monotonic()
    mistake(run("pool", "add", "bad.csv", *args), "bad.csv", *words)
    assert time.monotonic() - started < 20


@pytest.mark.parametrize("case", BAD_POOL)
def test_pool_add_refuses_bad_csv_in_one_line(sqlite_project, case):
    before = db_dump(sqlite_project)
    _refuse_bad_pool(case)
    assert db_dump(sqlite_project) == before


@pytest.mark.postgres
def test_pool_add_refuses_bad_csv_in_one_line_on_postgresql(pg_project):
    before = db_dump(pg_project)
    for case in BAD_POOL:
        _refuse_bad_pool(case)
    assert db_dump(pg_project) == before  # nothing any of them wrote survives


@pytest.mark.parametrize("case", ["nan-npy", "inf-npz", "labels-npz"])
def test_pool_add_refuses_bad_arrays(project, case):
    x = np.zeros((6, 2), dtype=np.float32)
    if case == "nan-npy":
        x[3, 1] = np.nan
        np.save("bad.npy", x)
        name, words = "bad.npy", ["row 3", "NaN or infinite"]
    elif case == "inf-npz":
        x[4, 0] = -np.inf
        np.savez("bad.npz", x=x)
        name, words = "bad.npz", ["row 4", "NaN or infinite"]
    else:
        np.savez("bad.npz", x=x, y=np.array([0.5, 1, 2, 0, 1, 2]))
        name, words = "bad.npz", ["row 0", "0.5", "not one of the classes"]
    before = db_dump(project)
    mistake(run("pool", "add", name), name, *words)
    assert db_dump(project) == before


def test_truth_file_with_bad_rows(project):
    write_rows("x.csv", ["id", "f0", "f1"], [r[:3] for r in pool_rows(6)])
    write_rows("truth.csv", ["key", "label"], [[r[0], r[3]] for r in pool_rows(6)][:5] + [["item-005", "7.5"]])
    before = db_dump(project)
    mistake(run("pool", "add", "x.csv", "--key-column", "id", "--truth", "truth.csv"), "truth.csv", "'7.5'", "line 7")
    Path("truth.csv").write_bytes(b"key;label\nitem-000;a\n" + b"z" * 10_000_000 + b"\n")
    mistake(run("pool", "add", "x.csv", "--key-column", "id", "--truth", "truth.csv"), "truth.csv", "line 3")
    assert db_dump(project) == before


# ---- label --from: hostile files --------------------------------------------------------------------
LABEL_FILES = [
        (b"key,label\nitem-001,a\n" + b"q" * 10_000_000 + b",a\n", ["line 3"]),
        (b"key,label\nitem-001," + b"q" * 100_000 + b"\n", ["line 2", "not one of the classes"]),
        (b"key,label\n" + b"q" * 100_000 + b",a\n", ["line 2", "is not an item"]),
        (b"key,label\nitem-001,a\x00\n", ["line 2"]),
        (b"key,label\nitem-001,1.5\n", ["line 2", "'1.5'", "not one of the classes"]),
        (b"key,label\nitem-001,A\n", ["line 2", "'A'", "not one of the classes"]),
        (b"key,label\nitem-001,nan\n", ["line 2", "'nan'", "not one of the classes"]),
        (b"key;label\nitem-001;a,b\n", ["line 2", "'a,b'"]),
]


@pytest.mark.parametrize(
    "content, words",
    LABEL_FILES,
    ids=["ten-mb-line", "long-label", "long-key", "nul-byte", "float", "case", "nan", "comma-in-label"],
)
def test_label_from_refuses_hostile_files(sqlite_pooled, content, words):
    Path("answers.csv").write_bytes(content)
    before = db_dump(sqlite_pooled)
    mistake(run("label", "--from", "answers.csv"), "answers.csv", *words)
    assert db_dump(sqlite_pooled) == before


@pytest.mark.postgres
def test_label_from_refuses_hostile_files_on_postgresql(pg_pooled):
    before = db_dump(pg_pooled)
    for content, words in LABEL_FILES:
        Path("answers.csv").write_bytes(content)
        mistake(run("label", "--from", "answers.csv"), "answers.csv", *words)
    assert db_dump(pg_pooled) == before


# ---- the data file after import ----------------------------------------------------------------------
@pytest.mark.parametrize("change", ["changed", "truncated", "emptied", "deleted", "replaced-by-folder"])
def test_round_refuses_a_data_file_changed_after_import(pooled, change):
    path = Path("pool.csv")
    if change == "changed":
        path.write_text(path.read_text().replace("item-003", "item-033"))
    elif change == "truncated":
        path.write_bytes(path.read_bytes()[:200])
    elif change == "emptied":
        path.write_bytes(b"")
    elif change == "deleted":
        path.unlink()
    else:
        path.unlink()
        path.mkdir()
    before = db_dump(pooled)
    words = ["pool.csv", "missing" if change in ("deleted", "replaced-by-folder") else "changed"]
    mistake(run("round", *TINY, "--oracle", "truth"), *words)
    mistake(run("label", "--from", "missing-answers.csv"), "missing-answers.csv")
    assert db_dump(pooled) == before


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


# ---- --model module:factory that fails ---------------------------------------------------------------
MODELS = {
    "raises": ("raise RuntimeError('boom at import')\n", ["RuntimeError", "boom at import"]),
    "syntax": ("def make(:\n", ["SyntaxError"]),
    "exits": ("import sys\nsys.exit(3)\n", ["SystemExit"]),
    "missing-import": ("import no_such_dependency_xyz\n", ["no_such_dependency_xyz"]),
    "factory-raises": ("def make():\n    raise ValueError('bad width')\n", ["ValueError", "bad width"]),
    "factory-exits": ("import sys\ndef make():\n    sys.exit(4)\n", ["SystemExit"]),
    "not-a-module": ("def make():\n    return 42\n", ["not a torch.nn.Module"]),
}


def _refuse_model(url: str, case: str) -> None:
    """`round --model FILE.py:make` and `--model MODULE:make` of MODELS[case]: one line each."""
    source, words = MODELS[case]
    before = db_dump(url) if url.startswith("sqlite") else None
    for form in ("file", "module"):
        name = f"usermodel_{uuid.uuid4().hex[:10]}"
        Path(f"{name}.py").write_text(source)
        spec = f"{name}.py:make" if form == "file" else f"{name}:make"
        mistake(run("round", *TINY, "--model", spec), "--model", name, *words)
    if before is not None:
        assert db_dump(url) == before


@pytest.mark.parametrize("case", list(MODELS))
def test_a_model_factory_that_fails_is_one_line(sqlite_pooled, case):
    _refuse_model(sqlite_pooled, case)


@pytest.mark.postgres
def test_a_model_factory_that_fails_is_one_line_on_postgresql(pg_pooled):
    before = db_dump(pg_pooled)
    for case in MODELS:
        _refuse_model(pg_pooled, case)
    assert db_dump(pg_pooled) == before


# ---- study run: every kind of wrong type in the TOML config ---------------------------------------------
BASE_TOML = """\
name = "hostile"
acquisitions = ["bald", "random"]
seed = 0
repeats = 1

[data]
dataset = "digits"

[loop]
initial = 20
batch_size = 10
max_labels = 40

[model]
posterior = "mc-dropout"
epochs = 2
"""


def _toml(case: str) -> tuple[str, list[str]]:
    b = BASE_TOML
    cases = {
        "string-for-int": (b.replace("batch_size = 10", 'batch_size = "10"'), ["loop.batch_size", "positive integer", "'10'"]),
        "float-for-int": (b.replace("batch_size = 10", "batch_size = 10.5"), ["loop.batch_size", "positive integer"]),
        "negative": (b.replace("seed = 0", "seed = -1"), ["seed", "non-negative integer"]),
        "negative-epochs": (b.replace("epochs = 2", "epochs = -2"), ["model.epochs", "positive integer"]),
        "zero-repeats": (b.replace("repeats = 1", "repeats = 0"), ["repeats", "positive integer"]),
        "bool-for-int": (b.replace("repeats = 1", "repeats = true"), ["repeats", "positive integer", "True"]),
        "bool-for-float": (b + "lr = false\n", ["model.lr", "number"]),
        "string-for-float": (b + 'lr = "0.01"\n', ["model.lr", "number"]),
        "nan": (b + "lr = nan\n", ["model.lr", "number"]),
        "inf": (b + "lr = inf\n", ["model.lr", "number"]),
        "fraction-above-one": (b + "dropout = 1.5\n", ["model.dropout", "[0, 1)"]),
        "list-for-table": (b.replace("[data]\ndataset = \"digits\"\n", "data = [1, 2]\n"), ["[data]", "expected a table"]),
        "string-for-table": ('report = "x"\n' + b, ["[report]", "expected a table"]),
        "table-for-value": (b.replace("batch_size = 10", "batch_size = { size = 10 }"), ["loop.batch_size", "positive integer"]),
        "table-for-list": (b.replace('acquisitions = ["bald", "random"]', "acquisitions = { a = 1 }"), ["acquisitions", "list of names"]),
        "string-for-list": (b.replace('acquisitions = ["bald", "random"]', 'acquisitions = "bald"'), ["acquisitions", "list of names"]),
        "numbers-in-list": (b.replace('["bald", "random"]', '["bald", 3]'), ["acquisitions", "list of names"]),
        "empty-list": (b.replace('["bald", "random"]', "[]"), ["acquisitions", "at least one"]),
        "hidden-floats": (b + "hidden = [1.5]\n", ["model.hidden"]),
        "hidden-empty": (b + "hidden = []\n", ["model.hidden"]),
        "unknown-top": (b.replace('name = "hostile"', 'name = "hostile"\nnmae = "typo"'), ["nmae: unknown key"]),
        "unknown-table": (b + "[training]\nepochs = 3\n", ["training: unknown key"]),
        "unknown-nested-key": (b + "colour = 1\n", ["model.colour: unknown key"]),
        "wrong-nested-table": (b + "[model.network]\nkind = \"mlp\"\n", ["model.network", "non-empty string"]),
        "sub-table": (b.replace("[loop]", "[loop.extra]\nx = 1\n[loop]"), ["loop.extra: unknown key"]),
        "bool-for-string": (b.replace('posterior = "mc-dropout"', "posterior = true"), ["model.posterior", "non-empty string"]),
        "empty-string": (b.replace('name = "hostile"', 'name = ""'), ["name", "non-empty string"]),
        "int-for-bool": (b.replace("max_labels = 40", "max_labels = 40\nbalanced_initial = 0"), ["loop.balanced_initial", "true or false"]),
        "date-for-int": (b.replace("seed = 0", "seed = 1979-05-27"), ["seed", "non-negative integer"]),
        "array-of-tables": (b + "[[loop.steps]]\nx = 1\n", ["loop.steps: unknown key"]),
        "duplicate-key": (b.replace("seed = 0", "seed = 0\nseed = 1"), ["not valid TOML"]),
        "binary": ("\x00\x01\x02 = \xff", ["not valid TOML"]),
    }  # fmt: skip
    return cases[case]


TOML_CASES = [
    "string-for-int", "float-for-int", "negative", "negative-epochs", "zero-repeats", "bool-for-int", "bool-for-float",
    "string-for-float", "nan", "inf", "fraction-above-one", "list-for-table", "string-for-table", "table-for-value",
    "table-for-list", "string-for-list", "numbers-in-list", "empty-list", "hidden-floats", "hidden-empty",
    "unknown-top", "unknown-table", "unknown-nested-key", "wrong-nested-table", "sub-table", "bool-for-string",
    "empty-string", "int-for-bool", "date-for-int", "array-of-tables", "duplicate-key", "binary",
]  # fmt: skip


@pytest.mark.parametrize("case", TOML_CASES)
def test_study_config_with_wrong_types_is_one_line(tmp_path, case):
    text, words = _toml(case)
    config = tmp_path / "study.toml"
    config.write_bytes(text.encode("utf-8", "surrogateescape") if case != "binary" else b"\x00\x01\x02 = \xff")
    mistake(run("study", "run", str(config), "--out", str(tmp_path / "out")), "study.toml", *words)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["study.toml"]


def test_study_config_that_is_a_folder_or_unreadable(tmp_path):
    (tmp_path / "dir.toml").mkdir()
    mistake(run("study", "run", str(tmp_path / "dir.toml"), "--out", str(tmp_path / "out")), "dir.toml")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir.toml"]
