"""Records of a csv file that are no rows of its table (`activebayes.data.stray_rows`): the
header again further down, as two exports pasted one under the other leave it, and a
spreadsheet's summary row at the end; and a comment line. Each is refused in one line naming its line, at `pool add`
and at `--append`, with nothing written, where before the first read as a column of numbers
refused for holding its own name and the second as a pool item keyed "Total"."""

from __future__ import annotations

from pathlib import Path

import pytest

from activebayes.data.csv_table import read_csv_table
from activebayes.data.stray_rows import summary_label
from activebayes.errors import DataError
from cli_checks import assert_mistake, db_dump, ok, run

HEADER = "id,x,colour,label\n"
ROWS = "".join(f"{i},{i * 0.5},{'red' if i % 2 else 'blue'},{'ab'[i % 2]}\n" for i in range(1, 9))


def test_a_repeated_header_is_refused_naming_its_line(tmp_path):
    path = tmp_path / "joined.csv"
    first = ROWS.splitlines(keepends=True)[:3]
    path.write_text(HEADER + "".join(first) + "\n" + " id , x,colour,label\n" + ROWS)  # line 6, spaced
    with pytest.raises(DataError, match=r"joined.csv' line 6: the header is repeated there \(files joined one under the other\?\); delete that line"):
        read_csv_table(path)


def test_two_csv_utf8_files_joined_name_the_second_header(tmp_path):
    """`cat a.csv b.csv` of two files Excel saved as "CSV UTF-8": the second header starts with its
    byte-order mark, and is still named as the header repeated."""
    path = tmp_path / "both.csv"
    path.write_bytes(("\ufeff" + HEADER + ROWS + "\ufeff" + HEADER + ROWS).encode("utf-8"))
    with pytest.raises(DataError, match=r"both.csv' line 10: the header is repeated there"):
        read_csv_table(path)


def test_a_row_that_only_starts_like_the_header_is_a_row(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("name,x,label\nname,1,a\nother,2,b\n")  # a key that happens to be the first column's name
    table = read_csv_table(path)
    assert len(table) == 2 and table.column("name") == ["name", "other"]


@pytest.mark.parametrize("last", ["Total,4.5,,", "TOTAL:,18,,", ",Grand total,,", "Summe,3,,", "Sum,,,", "Subtotal,1,,"])
def test_a_summary_row_at_the_end_is_refused(tmp_path, last):
    path = tmp_path / "report.csv"
    path.write_text(HEADER + ROWS + "\n" + last + "\n\n")
    word = next(c for c in last.split(",") if c)
    with pytest.raises(DataError, match=rf"report.csv' line 11: the last row starts with '{word}', a spreadsheet's summary row rather than an item; delete it"):
        read_csv_table(path)


def test_a_summary_row_that_ends_a_full_chunk_is_refused(tmp_path, monkeypatch):
    """The records are read in chunks: a 'Total' row that fills the last chunk exactly is still the last."""
    import activebayes.data.csv_table as csv_table

    monkeypatch.setattr(csv_table, "CHUNK_ROWS", 4)
    path = tmp_path / "report.csv"
    path.write_text(HEADER + "".join(ROWS.splitlines(keepends=True)[:7]) + "Total,18,,\n")
    with pytest.raises(DataError, match=r"line 9: the last row starts with 'Total'"):
        read_csv_table(path)


def test_total_elsewhere_is_a_value():
    """Only a last record's first cell names a summary: a category 'Total' in another column, or a
    word that merely starts so, is data."""
    assert summary_label(["7", "Total", "a"]) is None
    assert summary_label(["Totally", "1"]) is None and summary_label(["summary", "1"]) is None
    assert summary_label(["", " Grand  Total: ", ""]) == "Grand  Total:"


def test_a_table_whose_middle_row_says_total_reads_it(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("kind,x,label\nTotal,1,a\nsome,2,b\n")
    assert read_csv_table(path).column("kind") == ["Total", "some"]


def test_a_comment_line_is_named_as_one(tmp_path):
    """`# page 2` between the rows: refused as a record of the wrong length, saying it is a
    comment to delete rather than asking to quote a separator; another short record as before."""
    path = tmp_path / "notes.csv"
    path.write_text(HEADER + "# exported 2024-01-01, by hand\n" + ROWS)
    with pytest.raises(DataError, match=r"notes.csv' line 2: expected 4 fields, got 2 \(separator ','\), and it starts with '#': a comment, "
                                        r"which CSV has no way to write; delete the comment lines$"):  # fmt: skip
        read_csv_table(path)
    path.write_text(HEADER + "9,4.5\n" + ROWS)
    with pytest.raises(DataError, match=r"line 2: expected 4 fields, got 2 \(separator ','\); quote a value that holds the separator$"):
        read_csv_table(path)


def test_pool_add_and_append_refuse_them_and_write_nothing(cli_db):
    """A sheet ending in a total row, read with --labels-are-known, once made an unlabelled pool
    item keyed 'Total' of its sums; now pool add refuses it, and an appended file with a repeated
    header, before anything is written."""
    Path("sheet.csv").write_text(HEADER + ROWS + "Total,18,,\n")
    ok("init", "--name", "t")
    before = db_dump(cli_db)
    assert_mistake(run("pool", "add", "sheet.csv", "--label-column", "label", "--labels-are-known"), "sheet.csv", "line 10", "summary row")
    assert db_dump(cli_db) == before
    Path("sheet.csv").write_text(HEADER + ROWS)
    ok("pool", "add", "sheet.csv", "--label-column", "label")
    more = "".join(f"{i},{i},red,a\n" for i in range(20, 24))
    Path("more.csv").write_text(HEADER + more + HEADER + more.replace("2", "3"))
    before = db_dump(cli_db)
    assert_mistake(run("pool", "add", "more.csv", "--label-column", "label", "--append"), "more.csv", "line 6", "header is repeated")
    assert db_dump(cli_db) == before
