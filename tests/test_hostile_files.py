"""Hostile input, end to end through the CLI: every mistake prints ONE line on stderr naming what
is wrong and where (file, line, column, key), exits with code 2, and writes nothing (the
database dump is the same before and after, on SQLite and PostgreSQL where a database is
involved). Valid but unusual CSVs (a byte-order mark, `;` or tab delimiters, extra columns,
keys holding commas, quotes or non-ASCII text) work.

Items covered elsewhere (not repeated here): label --from with a BOM, `;`, tab, UTF-16, extra
columns, no header, a ragged row, a key given twice, an unknown key, a label outside the
classes, not UTF-8 (tests/test_cli_label.py); pool add with a ragged row, a text feature, a
label outside the classes (tests/test_cli.py::test_pool_add_mistakes_leave_database_unchanged);
a changed data file (tests/test_cli_campaign.py::test_changed_data_file_is_refused); a text file as
SQLite database for `status` (tests/test_cli_global.py::test_a_file_that_is_not_sqlite); a
missing model module or attribute (tests/test_cli_campaign.py::test_round_mistakes_leave_database_unchanged);
study config keys (tests/test_study.py)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from activebayes.data.csv_table import read_csv_table
from cli_checks import db_dump, run
from hostile_files import TINY, cli_on, item_keys, labels_of, mistake, pool_rows, write_rows
from hostile_files import pg_pooled, pg_project, pooled, project, sqlite_pooled, sqlite_project  # noqa: F401  (the fixtures)


# ---- pool add: unusual but valid CSVs work ---------------------------------------------------------
ODD_KEYS = ["a,b", 'say "hi"', "café", "日本語", "semi;colon", "tab\there", " padded "]


LONG_CELL = 300_000  # characters: over Python csv's default field limit (131,072), as a text column of whole documents holds


@pytest.mark.parametrize("form", ["bom", "semicolon", "tab", "crlf", "utf16-tab", "extra-columns", "odd-keys", "long-text-cell"])
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
    elif form == "long-text-cell":  # a document of 300,000 characters, with commas, quotes and line breaks, in a text column
        header, args = ["key", "f0", "f1", "doc", "label"], ["--text-column", "doc"]
        document = ('the "report", page after page\n' * (LONG_CELL // 30 + 1))[:LONG_CELL]
        rows = [[*r[:3], document if i == 4 else f"short note {i}", r[3]] for i, r in enumerate(rows)]
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


def test_a_long_text_cell_is_read_whole(tmp_path):
    document = ("x, \"y\"\n" * LONG_CELL)[:LONG_CELL]
    path = write_rows(tmp_path / "docs.csv", ["key", "doc"], [["a", "short"], ["b", document]])
    assert read_csv_table(path, text_columns=("doc",)).column("doc") == ["short", document.strip()]


@pytest.mark.parametrize(
    "text",
    [
        'key,doc\na,"one\ntwo"\n',  # a quoted value over lines, closed at the end of the file
        'key,doc\na,"one\ntwo"',  # ... without a last line break
        'key,doc\r\na,"one\r\ntwo"\r\n',
        'key,doc\na,"one\n"\n',  # a value that ends in a line break
    ],
)
def test_a_quote_closed_at_the_end_of_the_file_is_no_mistake(tmp_path, text):
    path = tmp_path / "docs.csv"
    path.write_bytes(text.encode())
    assert len(read_csv_table(path, text_columns=("doc",)).column("doc")) == 1


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
        "ten-mb-line-alone": (b"x" * 10_000_000, [], ["a header but no rows"]),  # one column's name, 10 MB long
        "ten-mb-header": (("h," * 5_000_000 + "\n").encode(), [], ["line 1"]),
        "nul-byte": (body((1, "item-x,0\x00.1,0.2,a\n")), key, ["line 3", "NUL"]),
        "unclosed-quote": (body((2, 'item-x,"0.1,0.2,a\n')), key, ["line 4", "never closed", "lines 4 to 9"]),  # the rest of the file, one value
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
    "unquoted-comma-in-key", "ten-mb-field", "ten-mb-line-alone", "ten-mb-header", "nul-byte", "unclosed-quote", "undefined-byte", "mixed-encodings",
    "label-float", "label-wrong-case", "label-empty", "nan", "NaN", "inf", "minus-inf", "overflow",
    "decimal-comma", "only-header", "empty-file", "blank-lines",
]  # fmt: skip


def test_square_brackets_are_shown_as_written(tmp_path, monkeypatch):
    """Cells, column names and classes holding square brackets ('[urgent]', 'B[/x]') are printed
    as written by every command that shows them (rich reads no markup in them), and one that
    looks like a closing tag does not crash a command after it has written."""
    cli_on(f"sqlite:///{tmp_path / 'b.db'}", tmp_path, monkeypatch)
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
