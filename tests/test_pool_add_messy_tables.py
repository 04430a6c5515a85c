"""Tables as users bring them to `pool add`: a numeric target in a classification project,
number-like codes (zip codes with leading zeros, ids beyond a float's precision), empty and
constant columns, other tools' files, and how the summary reports each column. A refusal is one line, exit 2, and
leaves the database as it was, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cli_checks import assert_mistake, db_dump, ok, run


@pytest.fixture
def db(cli_db):
    return cli_db


def write_rows(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    path.write_text("\n".join(",".join(r) for r in [header, *rows]) + "\n", encoding="utf-8")
    return path


def numbered(n: int, **columns) -> list[list[str]]:
    """n rows of `columns` {name: function of the row number -> cell}, in order."""
    return [[f(i) for f in columns.values()] for i in range(n)]


@pytest.mark.parametrize("written", ["{:.1f}", "{:.0f} mg"])
def test_many_numeric_labels_in_a_classification_project_are_refused(db, written):
    """42 distinct numbers in 42 rows (a disease's progression, maybe with a unit) are a
    quantity: refused with the way to a regression project, nothing written."""
    ok("init", "--name", "t")
    write_rows(Path("t.csv"), ["x", "y"], numbered(42, x=lambda i: str(i % 7), y=lambda i: written.format(25 + 3 * i)))
    before = db_dump(db)
    assert_mistake(run("pool", "add", "t.csv", "--label-column", "y"), "42 different numbers", "--task regression", "--classes")
    assert db_dump(db) == before
    assert not Path("activebayes-cache").exists() or not any(Path("activebayes-cache").iterdir())


def test_few_numeric_labels_are_classes_and_many_named_ones_are_accepted(db):
    """0/1 labels (or ratings 1..5) are classes; so are many numbers the project names with --classes."""
    ok("init", "--name", "t")
    write_rows(Path("t.csv"), ["x", "y"], numbered(42, x=lambda i: str(i % 7), y=lambda i: str(i % 2)))
    assert json.loads(ok("--json", "pool", "add", "t.csv", "--label-column", "y").stdout)["classes"] == ["0", "1"]
    ok("init", "--name", "u", "--classes", ",".join(str(25 + 3 * i) for i in range(42)))
    write_rows(Path("u.csv"), ["x", "y"], numbered(42, x=lambda i: str(i % 7), y=lambda i: str(25 + 3 * i)))
    assert json.loads(ok("--json", "--project", "u", "pool", "add", "u.csv", "--label-column", "y").stdout)["pool_items"] == 42


def test_quantity_labels_rule():
    from activebayes_cli._pool_import import quantity_labels

    numbers = [str(v) for v in range(30)]
    assert quantity_labels(numbers, numbers)  # 30 distinct > max(20, 1.5)
    assert not quantity_labels(numbers * 40, numbers)  # 30 distinct <= 5 % of 1,200 labels: classes 0..29
    assert quantity_labels([f"{v} mg" for v in range(30)], [f"{v} mg" for v in range(30)])
    assert quantity_labels([f"{v},5 %" for v in range(30)], [f"{v},5 %" for v in range(30)])
    names = [f"class {v}" for v in range(30)]
    assert not quantity_labels(names, names)  # names with numbers in them are classes


@pytest.mark.parametrize(
    "cell, words",
    [
        (lambda i: f"{2134 + 7 * i:05d}", ["'zip'", "'02134'", "a leading zero"]),
        (lambda i: str(9007199254740993 + 2 * i), ["'zip'", "'9007199254740993'", "16 digits"]),
    ],
)
def test_codes_written_in_digits_are_no_features(db, cell, words):
    """A zip code with a leading zero or an id beyond a float's exact whole numbers is a code:
    refused as a feature, nothing written; as the key it is kept exactly as written."""
    ok("init", "--name", "t")
    write_rows(Path("t.csv"), ["zip", "x", "label"], numbered(30, zip=cell, x=lambda i: f"{i * 0.37:.2f}", label=lambda i: "ab"[i % 2]))
    before = db_dump(db)
    assert_mistake(run("pool", "add", "t.csv"), *words, "--key-column zip", "--ignore zip")
    assert db_dump(db) == before
    summary = json.loads(ok("--json", "pool", "add", "t.csv", "--key-column", "zip").stdout)
    from activebayes.store import PoolStore

    with PoolStore(db, create=False) as store:
        keys = store.item_keys("t")
    assert summary["pool_items"] == 30 and keys == {cell(i) for i in range(30)}


def test_a_code_column_named_in_features_is_a_number_and_decimals_are_no_codes(db):
    ok("init", "--name", "t")
    rows = numbered(30, zip=lambda i: f"{i:05d}", x=lambda i: f"0{i}.5", label=lambda i: "ab"[i % 2])
    write_rows(Path("t.csv"), ["zip", "x", "label"], rows)  # x: 00.5, 01.5, ... are amounts, not codes
    summary = json.loads(ok("--json", "pool", "add", "t.csv", "--features", "zip,x").stdout)
    assert summary["features"] == [2]


def test_number_code_finds_the_first_code():
    from activebayes.data.csv_columns import number_code

    def code(cells):
        return number_code(cells, np.asarray([float(c) if c else np.nan for c in cells]))

    assert code(["12", "", "007", "08"]) == "007"
    assert code(["0", "10", "0.5"]) is None  # a lone 0 is a number, 0.5 not whole
    assert code(["012.5", "3"]) is None
    assert code(["1", "9007199254740993"]) == "9007199254740993"
    assert code(["9007199254740991"]) is None  # 2**53 - 1 is exact


def test_an_empty_column_is_left_out_and_a_constant_one_noted(db):
    """A column with no values is left out, named in the notes and among the columns that are
    not features (refused when --features names it); one with one value in every row stays a
    feature (the input width a model expects does not change) with a note."""
    ok("init", "--name", "t")
    rows = numbered(30, x=lambda i: f"{i * 0.37:.2f}", empty=lambda i: ["", "NA"][i % 2], const=lambda i: "x",
                    one=lambda i: "7", label=lambda i: "ab"[i % 2])  # fmt: skip
    write_rows(Path("t.csv"), ["x", "empty", "const", "one", "label"], rows)
    summary = json.loads(ok("--json", "pool", "add", "t.csv").stdout)
    assert summary["columns"] == {"x": {"kind": "numeric", "features": 1}, "const": {"kind": "categorical", "features": 1},
                                  "one": {"kind": "numeric", "features": 1}}  # fmt: skip
    assert summary["ignored"] == ["empty"]
    notes = " ".join(summary["notes"])
    assert "'empty' has no values (all 30 missing): left out" in notes
    assert "'const' holds 'x' in every row: it tells no rows apart (--ignore const leaves it out)" in notes
    assert "'one' holds '7' in every row" in notes and "'x' holds" not in notes
    ok("init", "--name", "v")
    before = db_dump(db)
    assert_mistake(run("--project", "v", "pool", "add", "t.csv", "--features", "x,empty"), "'empty' has no values", "--features")
    write_rows(Path("c.csv"), ["empty", "label"], numbered(30, empty=lambda i: "", label=lambda i: "ab"[i % 2]))
    assert_mistake(run("--project", "v", "pool", "add", "c.csv"), "no feature columns", "no values")
    assert db_dump(db) == before


def test_summary_says_how_each_column_was_read(db):
    """Each feature column's kind and the features it became: a number with gaps 2 (its
    indicator), a date 5, a category one per level, a text its SVD dimensions."""
    ok("init", "--name", "t")
    rows = numbered(
        40, age=lambda i: "" if i == 3 else str(20 + i), day=lambda i: f"2024-03-{1 + i % 28:02d}", sex=lambda i: "FM"[i % 2],
        note=lambda i: " ".join(["red", "dry", "sweet", "oak", "long", "fruit"][(i + k) % 6] for k in range(3)), label=lambda i: "ab"[i % 2],
    )  # fmt: skip
    write_rows(Path("t.csv"), ["age", "day", "sex", "note", "label"], rows)
    result = ok("pool", "add", "t.csv", "--text-column", "note")
    assert "RuntimeWarning" not in result.output
    text = " ".join(result.stdout.split())
    assert "Features: numbers (1): age (2 features); dates (1): day (5 features); categories (1): sex (2 features); text (1): note (" in text


def test_read_as_lists_kinds_in_order_and_counts_the_rest():
    from activebayes_cli.pool import read_as

    columns = {f"f{i}": {"kind": "numeric", "features": 1} for i in range(10)} | {"c": {"kind": "categorical", "features": 3}}
    assert read_as(columns) == "numbers (10): f0, f1, f2, f3, f4, f5, f6, f7, ... (2 more); categories (1): c (3 features); 13 in all"
    assert read_as({"c": {"kind": "categorical", "features": 1}}) == "categories (1): c (1 feature); 1 in all"


def test_not_features_says_why_each_column_is_left_out(db):
    """Row names (when another column is the key), --ignore, no values, a saved index, left out of
    --features: each named with its reason."""
    ok("init", "--name", "t")
    rows = [[str(i), str(i), f"{i * 0.37:.2f}", str(i % 5), "", f"n{i}", "ab"[i % 2]] for i in range(30)]
    Path("t.csv").write_text("\n".join(",".join(r) for r in [["", "Unnamed: 0", "x", "y", "empty", "note", "label"], *rows]) + "\n")
    summary = json.loads(ok("--json", "pool", "add", "t.csv", "--ignore", "note").stdout)
    assert summary["key_column"] == "row_names"  # the row names are the keys
    assert summary["not_features"] == {"Unnamed: 0": "a saved index", "empty": "no values", "note": "--ignore"}
    assert summary["ignored"] == ["Unnamed: 0", "empty", "note"]
    ok("init", "--name", "u")
    said = " ".join(ok("--project", "u", "pool", "add", "t.csv", "--features", "x", "--key-column", "Unnamed: 0").stdout.split())
    assert "Not features: row_names (row names), y (not in --features), empty (not in --features), note (not in --features)" in said


def test_merged_spellings_rule():
    from activebayes.data.label_spellings import merged_spellings

    assert merged_spellings(["Yes", "yes ", "Yes", "no", "", "YES"]) == {"yes": "Yes", "YES": "Yes"}
    assert merged_spellings(["b", "B", "a"]) == {"b": "B"}  # a tie: the first in sorted order ('B' < 'b')
    assert merged_spellings(["YES", "no"], classes=["Yes", "no"]) == {"YES": "Yes"}  # the project's spelling
    assert merged_spellings(["n o", "No", "no", "no"]) == {"n o": "no", "No": "no"}
    assert merged_spellings(["a", "b"]) == {}
    assert merged_spellings(["1", "1.0", "0.0", "0", "0", "10", "1.5", "01"]) == {"0.0": "0", "1.0": "1"}  # a float column's whole numbers


def test_classes_one_and_one_point_zero_are_pointed_out_and_merged_on_request(db):
    """Labels 0, 1 from one source and 0.0, 1.0 from another (pandas writes an integer column with a
    gap as floats): once four classes without a word; now a note, and --merge-label-spellings
    reads them as two."""
    Path("t.csv").write_text("id,x,label\n" + "".join(f"k{i},{i},{('0', '1', '0.0', '1.0')[i % 4]}\n" for i in range(20)))
    ok("init", "--name", "t")
    said = " ".join(ok("--json", "pool", "add", "t.csv").stderr.split())
    assert "the classes '0', '0.0' differ only in a trailing .0; if they are one class" in said
    assert "the classes '1', '1.0' differ only in a trailing .0" in said
    ok("init", "--name", "m")
    summary = json.loads(ok("--json", "--project", "m", "pool", "add", "t.csv", "--merge-label-spellings").stdout)
    assert summary["classes"] == ["0", "1"]


def test_label_spellings_merged_on_request_at_every_load(db):
    """--merge-label-spellings reads 'yes ', 'YES' and 'Yes' as one class, recorded and applied at
    every later load; without it they are classes of their own with a note naming the flag. An
    answer spelled another way later is refused with the class's spelling."""
    labels = ["Yes", "yes ", "YES", "no", "No", "Yes"]
    write_rows(Path("t.csv"), ["id", "x", "label"], numbered(30, id=lambda i: f"k{i}", x=lambda i: f"{i * 0.37:.2f}", label=lambda i: labels[i % 6]))
    ok("init", "--name", "plain")
    said = " ".join(ok("--project", "plain", "pool", "add", "t.csv").stdout.split())
    assert "classes read from the labels: No, no, YES, Yes, yes" in said and "--merge-label-spellings" in said
    ok("init", "--name", "t")
    summary = json.loads(ok("--json", "--project", "t", "pool", "add", "t.csv", "--labels-are-known", "--merge-label-spellings").stdout)
    assert summary["classes"] == ["No", "Yes"]  # 'No' and 'no' 5 times each: the first in sorted order; 'Yes' 10 times
    assert "labels spelled another way read as one class: 'no' as 'No', 'YES' as 'Yes', 'yes' as 'Yes'" in summary["notes"]
    from activebayes.data import load_project_data
    from activebayes.store import PoolStore

    with PoolStore(db, create=False) as store:
        data = load_project_data(store, "t")
        assert store.project("t").settings["features"]["label_spellings"] == {"no": "No", "YES": "Yes", "yes": "Yes"}
    assert sorted(set(data.y.tolist())) == ["No", "Yes"]
    Path("a.csv").write_text("key,label\nk1,YES\n")
    before = db_dump(db)
    assert_mistake(run("--project", "t", "label", "--from", "a.csv", "--relabel"), "'YES' is not one of the classes", "write it 'Yes'")
    assert db_dump(db) == before


def test_export_times_carry_their_utc_offset_on_both_backends(db):
    """An exported label's time reads the same from SQLite (naive datetimes) as from PostgreSQL:
    ISO 8601 with +00:00, so a spreadsheet or pandas reads it as UTC, not local time."""
    from datetime import datetime, timezone

    ok("init", "--name", "t")
    write_rows(Path("t.csv"), ["id", "x", "label"], numbered(30, id=lambda i: f"k{i}", x=lambda i: f"{i * 0.37:.2f}", label=lambda i: "ab"[i % 2]))
    ok("pool", "add", "t.csv")
    Path("a.csv").write_text("key,label\nk1,a\n")
    ok("label", "--from", "a.csv")
    exported = json.loads(ok("export", "-", "--format", "json").stdout)["items"]
    (time,) = [r["time"] for r in exported if r["key"] == "k1"]
    moment = datetime.fromisoformat(time)
    assert time.endswith("+00:00") and moment.utcoffset().total_seconds() == 0
    assert abs((datetime.now(timezone.utc) - moment).total_seconds()) < 3600  # UTC, not a local clock read as UTC


def test_as_utc_reads_naive_times_as_utc():
    from datetime import datetime, timedelta, timezone

    from activebayes.store.models import as_utc, utc_text

    naive = datetime(2026, 1, 2, 3, 4, 5)
    assert utc_text(naive) == "2026-01-02T03:04:05+00:00"
    assert as_utc(datetime(2026, 1, 2, 4, 4, 5, tzinfo=timezone(timedelta(hours=1)))) == as_utc(naive)
    assert utc_text(None) is None


def test_numbers_with_one_unit_are_read_as_numbers_at_every_load(db):
    """'59 yrs' and '32.1 kg/m2' (a plain number among them too) are numbers, recorded so and read
    so at every load; two units in one column ('1st', '2nd') stay categories."""
    ok("init", "--name", "t")
    rows = numbered(60, age=lambda i: f"{20 + i} yrs", bmi=lambda i: str(20 + i / 10) if i == 5 else f"{20 + i / 10:.1f} kg/m2",
                    rank=lambda i: f"{1 + i % 3}{('st', 'nd', 'rd')[i % 3]}", label=lambda i: "ab"[i % 2])  # fmt: skip
    write_rows(Path("t.csv"), ["age", "bmi", "rank", "label"], rows)
    summary = json.loads(ok("--json", "pool", "add", "t.csv").stdout)
    assert summary["columns"] == {"age": {"kind": "numeric", "features": 1}, "bmi": {"kind": "numeric", "features": 1},
                                  "rank": {"kind": "categorical", "features": 3}}  # fmt: skip
    assert "column 'bmi' holds numbers with the unit 'kg/m2' ('20.0 kg/m2'): read as numbers" in summary["notes"]
    from activebayes.data import load_project_data
    from activebayes.store import PoolStore

    with PoolStore(db, create=False) as store:
        spec = store.project("t").settings["features"]
        data = load_project_data(store, "t")
    age, bmi = spec["columns"][:2]
    assert (age["written"], bmi["written"]) == ("unit:yrs", "unit:kg/m2")
    raw = np.asarray([[20 + i, 20 + i / 10] for i in range(60)])
    expected = (raw - raw.mean(axis=0)) / raw.std(axis=0)
    assert np.asarray(data.x)[:, :2] == pytest.approx(expected, abs=1e-5)


def test_a_regression_target_with_a_unit_is_read_as_numbers(db):
    ok("init", "--name", "t", "--task", "regression")
    write_rows(Path("t.csv"), ["x", "y"], numbered(30, x=lambda i: f"{i * 0.37:.2f}", y=lambda i: f"{100 + 3 * i} mg"))
    summary = json.loads(ok("--json", "pool", "add", "t.csv", "--label-column", "y").stdout)
    assert "the labels in 'y' are written with the unit 'mg': read as numbers" in summary["notes"]
    from activebayes.data import load_project_data
    from activebayes.store import PoolStore

    with PoolStore(db, create=False) as store:
        assert [float(v) for v in load_project_data(store, "t").y[:3]] == [100.0, 103.0, 106.0]


def test_common_unit_and_measured_numbers():
    from activebayes.data.parsed_columns import common_unit, measured_numbers, number_writing, written_numbers

    assert common_unit(["59 yrs", "7yrs", "-1.5 yrs"]) == "yrs"
    assert common_unit(["37 °C", "38.5 °C"]) == "°C"
    assert common_unit(["70 kg", "150 lb"]) is None and common_unit(["70 kg", "seventy"]) is None and common_unit([]) is None
    assert measured_numbers(["70 kg", "71", "72 lb", "x"], "kg").tolist()[:2] == [70.0, 71.0]
    assert np.isnan(measured_numbers(["72 lb", "x"], "kg")).all()
    assert number_writing(["151 mg", "98 mg", ""], ",") == "unit:mg" and number_writing(["$1,200", "3"], ",") == "units"
    assert number_writing(["151", "98", "12o"], ",") is None  # a typo among numbers, not a unit
    assert written_numbers(["151 mg", "", "oops"], "unit:mg") == ["151", "", "oops"]


@pytest.mark.parametrize("cell", ['"{:,.2f} €"', '"{:.1f}"'])
def test_decimal_commas_in_a_comma_separated_file_are_refused_with_the_way_to_save_it(db, cell):
    """Google Sheets in a comma-decimal locale exports "1 000,00 €" and "3,5" quoted in a file
    separated by commas: refused, as such a regression target is, with the ways to save it (not
    'looks like an identifier'); "1,234" alone may be thousands and is read so, as before."""
    ok("init", "--name", "t")
    french = [cell.format(1000 + 13.7 * i).replace(",", " ").replace(".", ",") for i in range(40)]
    write_rows(Path("t.csv"), ["prix", "x", "label"], [[p, str(i % 7), "ab"[i % 2]] for i, p in enumerate(french)])
    before = db_dump(db)
    assert_mistake(run("pool", "add", "t.csv"), "column 'prix' is written with decimal commas", "separated by ';' or tabs", "with a point")
    assert db_dump(db) == before
    write_rows(Path("u.csv"), ["n", "x", "label"], [[f'"{1000 + 7 * i:,}"', str(i % 7), "ab"[i % 2]] for i in range(40)])
    assert json.loads(ok("--json", "pool", "add", "u.csv").stdout)["columns"]["n"] == {"kind": "numeric", "features": 1}


def test_surely_decimal_comma():
    from activebayes.data.parsed_columns import surely_decimal_comma

    assert surely_decimal_comma("3,5") and surely_decimal_comma("12,50 €") and surely_decimal_comma("1 234,50")
    assert surely_decimal_comma("1.234,567")  # dots between groups: the comma is the decimal mark
    assert not surely_decimal_comma("1,234") and not surely_decimal_comma("35") and not surely_decimal_comma("$1,578.50")
