"""A csv file that is not UTF-8: Excel on Windows saves "CSV" in Windows-1252 (a German sheet:
`;`-separated, decimal commas, umlauts). `read_csv_table` reads a file whose bytes stop being
UTF-8 after ASCII alone as Windows-1252, says where in a note (line and the text there, so a
person can see the reading is right), and decodes every later re-read of a row by its byte offset
the same way. A file that mixes UTF-8 with other bytes, or holds a byte Windows-1252 does not
define, is one line naming the byte, its offset and its line."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from activebayes.data import csv_records
from activebayes.data.csv_encoding import WINDOWS_1252, csv_text
from activebayes.data.csv_table import read_csv_table
from activebayes.data.tabular import TableOptions, plan_table
from activebayes.errors import DataError
from cli_checks import assert_mistake, db_dump, ok, run

CITIES = ["München", "Köln", "Zürich", "Genève", "Linz"]


def german_rows(n: int = 40) -> list[str]:
    """A German Excel sheet as text: id;Größe;Stadt;Preis;label, decimal commas, umlauts."""
    lines = ["id;Größe;Stadt;Preis;label"]
    for i in range(n):
        lines.append(f"k{i};{1 + (i * 37 % 100) / 100:.2f}".replace(".", ",") + f";{CITIES[i % 5]};{i * 7 % 13},5;{'ja' if i % 3 else 'nein'}")
    return lines


def write_lines(path: Path, lines: list[str], encoding: str = WINDOWS_1252) -> Path:
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode(encoding))
    return path


def test_a_windows_1252_sheet_reads_as_its_utf8_copy(tmp_path):
    lines = german_rows()
    ansi = read_csv_table(write_lines(tmp_path / "ansi.csv", lines), text_columns=("id", "label"))
    utf8 = read_csv_table(write_lines(tmp_path / "utf8.csv", lines, "utf-8"), text_columns=("id", "label"))
    assert ansi.header == utf8.header == ["id", "Größe", "Stadt", "Preis", "label"]
    assert ansi.encoding == WINDOWS_1252 and utf8.encoding == "utf-8" and utf8.fallback is None
    assert (ansi.fallback.line, ansi.fallback.example) == (1, "id;Größe;Stadt;Preis;label")
    for name in ansi.header:
        assert ansi.column(name) == utf8.column(name)
    starts = np.cumsum([len(line.encode(WINDOWS_1252)) + 2 for line in lines])[:-1]  # one byte a character
    np.testing.assert_array_equal(ansi.offsets, starts)
    assert ansi.read_rows([2, 7]) == utf8.read_rows([2, 7]) == [lines[3].split(";"), lines[8].split(";")]
    assert set(ansi.text_codes("Stadt")[1]) == set(CITIES)

    plan = plan_table(ansi, TableOptions(label_column="label", categorical="auto"))
    assert plan.notes[0] == ("'" + str(ansi.path) + "' is not UTF-8: read as Windows-1252 (Excel's 'CSV'); line 1 holds "
                             "'id;Größe;Stadt;Preis;label' (if that reads wrong, save the file as 'CSV UTF-8')")  # fmt: skip
    assert {c.name: c.kind for c in plan.columns} == {"Größe": "numeric", "Stadt": "categorical", "Preis": "numeric"}


def test_the_switch_after_ascii_blocks_names_its_line_and_keeps_the_offsets(tmp_path, monkeypatch):
    """Streamed in blocks of 64 bytes: 30 ASCII lines, then a Windows-1252 cell on line 32 (the note
    quotes up to 20 characters on each side of it, within its line)."""
    monkeypatch.setattr(csv_records, "_BLOCK_BYTES", 64)
    lines = ["key,x,town,label"] + [f"r{i},{i / 10},Graz,{'ab'[i % 2]}" for i in range(30)] + ["r30,3.0,Zürich,a", "r31,3.1,Köln,b"]
    table = read_csv_table(write_lines(tmp_path / "t.csv", lines), text_columns=("key",))
    assert table.encoding == WINDOWS_1252 and (table.fallback.line, table.fallback.example) == (32, "r30,3.0,Zürich,a")
    assert table.column("town")[-3:] == ["Graz", "Zürich", "Köln"]
    assert table.read_rows([31, 0]) == [["r31", "3.1", "Köln", "b"], ["r0", "0.0", "Graz", "a"]]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"a,b\n1,caf\x81\n", r"neither UTF-8 nor Windows-1252 text \(byte 0x81 at offset 9, line 2\)"),
        ("a,b\n1,café\n2,thé\n".encode() + "3,thé\n".encode(WINDOWS_1252), r"mixes UTF-8 with other text \(byte 0xe9 at offset 23, line 4\)"),
        ("\ufeffa,b\n".encode() + "1,thé\n".encode(WINDOWS_1252), r"mixes UTF-8 with other text \(byte 0xe9 at offset 11, line 2\)"),  # a BOM says UTF-8
        ("a,b\n1,thé\n".encode(WINDOWS_1252) + b"2,caf\x9d\n", r"neither UTF-8 nor Windows-1252 text \(byte 0x9d at offset 15, line 3\)"),
        ("a,b\n1,thé\n".encode(WINDOWS_1252) + "2,thé\n".encode(), r"mixes UTF-8 with other text \(byte 0xc3 at offset 14, line 3, which with the next reads 'é' in UTF-8\)"),
    ],
)
@pytest.mark.parametrize("block_bytes", [1 << 23, 8])
def test_what_is_neither_is_one_line_naming_the_byte(tmp_path, monkeypatch, raw, message, block_bytes):
    monkeypatch.setattr(csv_records, "_BLOCK_BYTES", block_bytes)
    path = tmp_path / "t.csv"
    path.write_bytes(raw)
    with pytest.raises(DataError, match=message + r"; save it as 'CSV UTF-8'"):
        read_csv_table(path)
    with pytest.raises(DataError, match=r"^labels file '.*t.csv' (is )?" + message):
        csv_text(path, "labels file")


def test_labels_files_are_read_the_same_way(tmp_path):
    path = tmp_path / "answers.csv"
    path.write_bytes("key;label\r\nk1;Bär\r\n".encode(WINDOWS_1252))
    assert csv_text(path, "labels file") == "key;label\r\nk1;Bär\r\n"


@pytest.fixture
def db(cli_db):
    ok("init", "--name", "t")
    return cli_db


def test_pool_add_a_round_and_labels_from_excel(db):
    """The whole path of a German Excel user: pool add of the sheet (a note, nothing refused), a
    round whose file shows the cells as written (from the features cached at pool add), written
    as the sheet came (';' between the cells, a byte-order mark so that Excel reads UTF-8), and
    the round file filled in and saved by Excel as Windows-1252 again, whose labels are recorded."""
    write_lines(Path("sheet.csv"), german_rows())
    added = ok("--json", "pool", "add", "sheet.csv", "--label-column", "label", "--test-fraction", "0.25")
    assert json.loads(added.stdout)["features"] == [7]  # Größe, Preis, five towns
    assert "is not UTF-8: read as Windows-1252 (Excel's 'CSV'); line 1 holds 'id;Größe;Stadt;Preis;label'" in " ".join(added.stderr.split())
    ok("round", "--oracle", "truth", "--k", "4", "--device", "cpu")
    ok("round", "--k", "3", "--device", "cpu", "--samples", "2", "--epochs", "2")
    assert Path("t-round-2.csv").read_bytes().startswith(b"\xef\xbb\xbfkey;label;")  # as the pool came: a BOM for Excel, and ';'
    with Path("t-round-2.csv").open(newline="", encoding="utf-8-sig") as fh:
        rows = list(csv.DictReader(fh, delimiter=";"))
    by_key = {line.split(";")[0]: line.split(";") for line in german_rows()}
    assert [[r["Größe"], r["Stadt"], r["Preis"]] for r in rows] == [by_key[r["key"]][1:4] for r in rows]
    answered = ["key;label"] + [f"{r['key']};{'nein' if i else 'ja'}" for i, r in enumerate(rows)]
    write_lines(Path("answers.csv"), answered)
    ok("label", "--from", "answers.csv")
    labelled = json.loads(ok("--json", "status").stdout)
    assert labelled["labelled"] == 4 + 3
    ok("export", "labels.csv")  # the labels as the sheet came too, so that Excel opens them in columns
    assert Path("labels.csv").read_bytes().startswith(b"\xef\xbb\xbfkey;row;split;label;")
    with Path("labels.csv").open(newline="", encoding="utf-8-sig") as fh:
        exported = {r["key"]: r["label"] for r in csv.DictReader(fh, delimiter=";") if r["split"] == "pool"}
    assert {r["key"]: ("nein" if i else "ja") for i, r in enumerate(rows)}.items() <= exported.items()
    assert len(exported) == 7


def test_pool_add_of_a_file_that_is_neither_writes_nothing(db):
    Path("sheet.csv").write_bytes(b"id,x,label\nk1,0.5,a\nk2,0.7,caf\x8f\n")
    before = db_dump(db)
    assert_mistake(run("pool", "add", "sheet.csv", "--label-column", "label"), "neither UTF-8 nor Windows-1252", "byte 0x8f", "line 3")
    assert db_dump(db) == before


def test_round_files_are_written_as_the_pool_came(db):
    """Excel's "CSV UTF-8" of a German sheet (a byte-order mark, ';'): the round file has both, and
    `label --from` reads it back filled in; a plain UTF-8 ',' pool gets a plain ',' round file."""
    Path("bom.csv").write_bytes(("\ufeff" + "\r\n".join(german_rows(30)) + "\r\n").encode("utf-8"))
    ok("pool", "add", "bom.csv", "--label-column", "label")
    ok("round", "--k", "3", "--device", "cpu", "--samples", "2", "--epochs", "2")
    text = Path("t-round-1.csv").read_bytes().decode("utf-8")
    assert text.startswith("\ufeffkey;label;score;rank;") and any(city in text for city in CITIES)
    lines = text.lstrip("\ufeff").splitlines()
    filled = [lines[0]] + [";".join([line.split(";")[0], "ja", *line.split(";")[2:]]) for line in lines[1:]]
    Path("t-round-1.csv").write_text("\ufeff" + "\r\n".join(filled) + "\r\n", encoding="utf-8")
    ok("label", "--from", "t-round-1.csv")
    assert json.loads(ok("--json", "status").stdout)["labelled"] == 3
    ok("init", "--name", "plain")
    with Path("plain.csv").open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([c.replace(",", ".") for c in line.split(";")] for line in german_rows(30))
    ok("--project", "plain", "pool", "add", "plain.csv", "--label-column", "label")
    ok("--project", "plain", "round", "--k", "3", "--device", "cpu", "--samples", "2", "--epochs", "2")
    assert Path("plain-round-1.csv").read_bytes().startswith(b"key,label,score,rank,")
