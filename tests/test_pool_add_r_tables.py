"""Tables as R's data sets come (Rdatasets' csv files, R's write.csv, panel data): their row
names, repeated subject ids, spreadsheets' short dates, a label written twice, codes among
numbers. Each case a small hand-written csv file; a refusal is one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cli_checks import assert_mistake, db_dump, ok, run


@pytest.fixture
def db(cli_db):
    return cli_db


def added(*args: str) -> dict:
    """`pool add ARGS --json`'s summary (it must succeed)."""
    return json.loads(ok("--json", "pool", "add", *args).stdout)


def write(path: str, lines: list[str]) -> Path:
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return Path(path)


@pytest.mark.parametrize("names", [[str(i) for i in range(1, 25)], [f"city {chr(65 + i)}" for i in range(24)]])
def test_rdatasets_rownames_column_keys_the_items_and_is_no_feature(db, names):
    """Rdatasets' csv files start with a column `rownames` (R's row names: 1, 2, ... or names):
    the item keys, never a feature (R's numbers were a feature; names were refused as an identifier)."""
    ok("init", "--name", "t")
    write("t.csv", ["rownames,x,y", *(f"{n},{i % 5},{'ab'[i % 2]}" for i, n in enumerate(names))])
    summary = added("t.csv", "--label-column", "y")
    assert summary["key_column"] == "rownames"
    assert list(summary["columns"]) == ["x"]


def test_a_repeated_id_column_keys_rows_by_number_and_is_left_out(db):
    """Panel data: `id` names a subject measured on several rows. Guessed as the key, it is not
    unique: the rows are keyed by their number, the id left out with a note, no refusal."""
    ok("init", "--name", "t")
    write("t.csv", ["id,x,y", *(f"{i // 3 + 1},{i % 7},{'ab'[i % 2]}" for i in range(30))])
    summary = added("t.csv", "--label-column", "y")
    assert summary["key_column"] is None and summary["pool_items"] + summary["test_items"] == 30
    assert list(summary["columns"]) == ["x"] and summary["not_features"] == {"id": "not unique, so no key"}
    assert any("'id' repeats its values ('1' on lines 2 and 3)" in note for note in summary["notes"])
    ok("--project", "t", "round", "--oracle", "truth", "--k", "4", "--seed", "0")


def test_a_repeated_id_beside_r_row_names_leaves_the_row_names_as_keys(db):
    ok("init", "--name", "t")
    write("t.csv", ["rownames,id,x,y", *(f"{i + 1},{i // 3},{i % 7},{'ab'[i % 2]}" for i in range(30))])
    summary = added("t.csv", "--label-column", "y")
    assert summary["key_column"] == "rownames" and list(summary["columns"]) == ["x"]


def test_a_repeated_id_named_in_features_stays_a_feature(db):
    ok("init", "--name", "t")
    write("t.csv", ["id,x,y", *(f"{i // 3 + 1},{i % 7},{'ab'[i % 2]}" for i in range(30))])
    summary = added("t.csv", "--label-column", "y", "--features", "id,x")
    assert summary["key_column"] is None and list(summary["columns"]) == ["id", "x"]


def test_a_repeated_key_column_given_is_refused_with_the_way_out(db):
    ok("init", "--name", "t")
    write("t.csv", ["id,x,y", *(f"{i // 3 + 1},{i % 7},{'ab'[i % 2]}" for i in range(30))])
    before = db_dump(db)
    assert_mistake(run("pool", "add", "t.csv", "--label-column", "y", "--key-column", "id"), "'1'", "line 3", "--key-column", "leave")
    assert db_dump(db) == before


def test_r_write_csv_table_with_na_and_logicals_is_read_and_run(db):
    """R's write.csv: a quoted "" over the row names, quoted text, NA for gaps, TRUE/FALSE."""
    ok("init", "--name", "t")
    rows = [f'"{i + 1}",{"NA" if i == 4 else i % 9},"{"TRUE" if i % 3 else "FALSE"}","{"yes" if i % 2 else "no"}"' for i in range(30)]
    write("t.csv", ['"","dose","smoker","cured"', *rows])
    summary = added("t.csv", "--label-column", "cured", "--test-fraction", "0.3", "--seed", "0")
    assert summary["classes"] == ["no", "yes"] and summary["missing"] == {"dose": 1}
    assert summary["columns"]["smoker"]["kind"] == "categorical"
    ok("--project", "t", "round", "--oracle", "truth", "--k", "5", "--seed", "0")


def test_short_dates_with_two_digit_years_are_dates(db):
    """Spreadsheets' US short dates (8/6/20 18:57): dates of 2020, not 400 categories."""
    ok("init", "--name", "t")
    rows = [f"{1 + i % 12}/{1 + (7 * i) % 28}/{20 + i % 3} {i % 24}:{i % 60:02d},{i % 5},{'ab'[i % 2]}" for i in range(80)]
    write("t.csv", ["when,x,y", *rows])
    summary = added("t.csv", "--label-column", "y")
    assert summary["columns"]["when"] == {"kind": "date", "features": 7}


def test_two_digit_years():
    from activebayes.data.parsed_columns import full_year, written_days

    assert [full_year(y) for y in ("20", "29", "30", "99", "2031")] == [2020, 2029, 1930, 1999, 2031]
    days = written_days(["8/6/20", "12/25/99", "1.2.10", "1-2-10"], "mdy")
    assert days[:2].astype("datetime64[D]").tolist() == [np.datetime64("2020-08-06").item(), np.datetime64("1999-12-25").item()]
    assert np.isnan(days[2:]).all()  # a version number, a dashed code: no date with two digits


def test_codes_among_numbers_are_refused_naming_ignore(db):
    """A family column of numbers and one '136A' (Galton's): refused, the line naming --ignore."""
    ok("init", "--name", "t", "--task", "regression")
    write("t.csv", ["family,x,h", *(f"{'136A' if i == 20 else i // 2},{i % 5},{60 + i % 9}" for i in range(30))])
    assert_mistake(run("pool", "add", "t.csv", "--label-column", "h"), "'family'", "'136A'", "--ignore family")


def test_a_column_pairing_one_to_one_with_the_labels_gets_a_note(db):
    """A state and its state code: the code is the label written another way."""
    ok("init", "--name", "t")
    write("t.csv", ["state,code,x", *(f"{('Ohio', 'Iowa')[i % 2]},{(39, 19)[i % 2]},{i % 7}" for i in range(20))])
    notes = added("t.csv", "--label-column", "state")["notes"]
    assert any("'code' pairs one to one with the labels in 'state'" in n and "--ignore code" in n for n in notes)
    assert not any("'x' pairs" in n for n in notes)


def test_pairs_one_to_one():
    from activebayes.data.label_leaks import pairs_one_to_one

    labels = np.array(["a", "b", "a", "b"])
    assert pairs_one_to_one(np.array([3, 5, 3, 5]), labels)
    assert not pairs_one_to_one(np.array([3, 5, 3, 3]), labels)  # 3 goes with both
    assert not pairs_one_to_one(np.array([1.5, 2.5, 3.5, 4.5]), labels)  # distinct values pair with anything: no sign
    assert not pairs_one_to_one(np.array([1, 1, 1, 1]), np.array(["a"] * 4))  # one class


def test_a_column_the_label_is_computed_from_gets_a_note(db):
    """Stat2Data's ThreeCars2017: a car type of three values and the label Accord, 1 for the type Accord."""
    ok("init", "--name", "t")
    types = ("Accord", "Maxima", "Mazda6")
    write("cars.csv", ["CarType,Price,Accord", *(f"{types[i % 3]},{10 + i * 0.37:.2f},{int(i % 3 == 0)}" for i in range(90))])
    notes = added("cars.csv", "--label-column", "Accord")["notes"]
    assert any(n.startswith("column 'CarType' determines the labels in 'Accord' (each of its values goes with one class") and "--ignore CarType" in n
               for n in notes)  # fmt: skip
    assert not any("'Price'" in n for n in notes)


def test_determines():
    from activebayes.data.label_leaks import chance_of_purity, determines

    types, accord = np.repeat([0, 1, 2], 30), np.where(np.repeat([0, 1, 2], 30) == 0, "1", "0")
    assert determines(types, accord)
    assert chance_of_purity(np.array([30, 30, 30]), np.array([30, 60])) == pytest.approx(((1 / 3) ** 30 + (2 / 3) ** 30) ** 3)
    assert chance_of_purity(np.array([2, 2, 2]), np.array([2, 4])) == pytest.approx((5 / 9) ** 3)
    assert not determines(np.array([0, 0, 1, 1, 2, 2]), np.array(["1", "1", "0", "0", "0", "0"]))  # 3 values on 2 rows: chance, 1 time in 6
    rare = np.array(["b", "b"] + ["a"] * 38)  # 95 % one class: twenty values on 2 rows each go with one class 14 % of the time
    assert not determines(np.repeat(np.arange(20), 2), rare)
    assert not determines(np.array([0, 0, 1, 1, 2, 2] * 5), np.array(["a", "b"] * 15))  # each value with both classes
    assert not determines(np.array([0, 0, 1, 1] * 10), np.array(["a", "a", "b", "b"] * 10))  # one to one: the other rule's
    earnings = np.array([0.0] * 300 + [1000.0 + i for i in range(30)])  # 0 on 300 rows, all 'u'; 30 amounts on one row each
    assert not determines(earnings, np.array(["u"] * 300 + ["u", "e"] * 15))  # a value on one row goes with any class: no sign
