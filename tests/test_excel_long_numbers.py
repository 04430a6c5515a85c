"""Long numbers as Excel shows them (`activebayes.data.csv_columns.excel_display`): a column of
12 digits or more that Excel saved as 1.23457E+15 (6 significant digits and a power of ten) has
lost its other digits. As a feature it is left out with a note saying how to save it whole; as
the key it is refused in one line, nothing written. Real numbers stay numbers: fewer digits, a
small power, a lower-case e, or a plain number among them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from activebayes.data.csv_columns import excel_display
from activebayes.data.csv_table import read_csv_table
from activebayes.data.table_spec import apply_table_spec, fit_table_spec
from activebayes.data.tabular import TableOptions, plan_table
from activebayes.errors import DataError
from cli_checks import assert_mistake, db_dump, ok, run
from table_files import write_csv

IDS = ["1.23457E+15", "9.87654E+15", "4.5E+15", "3.14159E+15", "2.71828E+15", "1.41421E+15", "5.55556E+15", "7.07107E+15"]


def rows_with(column: list[str], n: int = 24) -> list[list[str]]:
    """key, the column's values in turn, a real feature x and a label a/b."""
    return [[f"k{i}", column[i % len(column)], f"{0.5 * i:.1f}", "ab"[i % 2]] for i in range(n)]


def plan(path: Path, **options):
    return plan_table(read_csv_table(path, text_columns=options.pop("text", ())), TableOptions(label_column="label", missing="impute", **options))


@pytest.mark.parametrize(
    ("cells", "seen"),
    [
        (["1.23457E+15", "1.2E+11", "9E+20"], (3, 1)),
        (["1.23457E+110"], (1, 1)),
        (["1.23457E+10"], None),  # 11 digits Excel shows whole
        (["1.23457e+15"], None),  # Excel writes E
        (["1.234567E+15"], None),  # 7 digits: not Excel's display
        (["1.23457E-15"], None),
        (["1.23457E+15", "1234"], None),
    ],
)
def test_excel_display(cells, seen):
    assert excel_display(cells) == seen


def test_a_column_of_ids_excel_cut_short_is_left_out_with_the_way_to_save_them(tmp_path):
    p = plan(write_csv(tmp_path / "o.csv", ["key", "order_id", "x", "label"], rows_with(IDS)))
    assert [c.name for c in p.columns] == ["x"] and "order_id" in p.left_out
    (note,) = [n for n in p.notes if "order_id" in n]
    assert "as Excel shows them ('1.23457E+15'" in note and "Data > From Text/CSV" in note and "--features" in note
    spec = fit_table_spec(p, np.arange(24))
    assert apply_table_spec(p.table, spec)[1] == ["x"]


def test_one_under_a_name_that_is_no_id_and_with_gaps_is_left_out_too(tmp_path):
    p = plan(write_csv(tmp_path / "o.csv", ["key", "amount", "x", "label"], rows_with([*IDS, "", "NA"])))
    assert "amount" in p.left_out and [c.name for c in p.columns] == ["x"]


def test_named_in_features_it_is_a_number_as_before(tmp_path):
    p = plan(write_csv(tmp_path / "o.csv", ["key", "order_id", "x", "label"], rows_with(IDS)), features=("order_id", "x"))
    assert p.columns[0].kind == "numeric" and p.columns[0].numbers[0] == 1.23457e15


@pytest.mark.parametrize(
    "column",
    [
        ["1.5E+12", "2E+13", "3.3E+12", "4.25E+12"],  # a quantity in scientific notation: fewer digits than Excel's 6 in most rows
        ["1.23457E+10", "2.5E+10"],  # 11 digits: Excel would have shown them whole
        ["1.23457e+15", "2.87654e+15"],  # lower-case e: not Excel
        ["1.23457E+15", "12", "2.87654E+15"],  # a plain number among them
        ["6.02214E+13", "6.022E+13", "NA", "6.0221E+13", "1.3E+13"],  # half or fewer with 6 digits
    ],
)
def test_real_numbers_stay_numbers(tmp_path, column):
    p = plan(write_csv(tmp_path / "q.csv", ["key", "q", "x", "label"], rows_with(column)))
    assert [c.name for c in p.columns] == ["q", "x"] and p.columns[0].kind == "numeric" and not p.left_out


def test_the_key_column_so_cut_short_is_refused(tmp_path):
    path = write_csv(tmp_path / "k.csv", ["id", "x", "label"], [r[1:] for r in rows_with(IDS, 8)])
    for options in ({"text": ("id", "label")}, {"text": ("id", "label"), "key_column": "id"}):
        with pytest.raises(DataError, match=r"the key column 'id' holds long numbers as Excel shows them \('1.23457E\+15'.*cannot name the items; .*Text"):
            plan(path, **options)


def test_a_guessed_numeric_key_so_cut_short_keys_nothing(tmp_path):
    p = plan(write_csv(tmp_path / "c.csv", ["customer_id", "x", "label"], [r[1:] for r in rows_with(IDS, 8)]))
    assert p.key_column is None and "customer_id" in p.left_out


@pytest.fixture
def db(cli_db):
    ok("init", "--name", "t")
    return cli_db


def test_pool_add_leaves_the_column_out_with_a_note(db):
    write_csv(Path("o.csv"), ["key", "order_id", "x", "label"], rows_with(IDS))
    added = json.loads(ok("--json", "pool", "add", "o.csv").stdout)
    assert added["pool_items"] == 24 and added["features"] == [1]  # x alone
    assert any("'order_id' holds long numbers as Excel shows them" in n for n in added["notes"])


def test_pool_add_refuses_such_a_key_column_and_writes_nothing(db):
    write_csv(Path("k.csv"), ["id", "x", "label"], [r[1:] for r in rows_with(IDS, 8)])
    before = db_dump(db)
    assert_mistake(run("pool", "add", "k.csv"), "k.csv", "the key column 'id'", "'1.23457E+15'", "From Text/CSV")
    assert db_dump(db) == before
