"""How `activebayes.data.tabular` reads a table (`plan_table`, `fit_table_spec`): an id column is
the key, never a feature (a numbered customer_id too, or left out with a note when another key
is); a column of free text is refused in one line (identifier-like and many-level ones:
test_awkward_columns.py);
row names, titles above the header and Excel's sep= line are found; the scikit-learn pipeline is
fitted on the pool rows only, recorded as JSON and applied by pure numpy equal to its own transform."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from activebayes.data.csv_table import read_csv_table
from activebayes.data.table_gaps import missing_mask
from activebayes.data.table_spec import apply_table_spec, build_pipeline, fit_table_spec
from activebayes.data.key_columns import key_column_of, names_an_identifier
from activebayes.data.tabular import TableOptions, plan_table
from activebayes.errors import DataError
from table_files import people, plan, row_named, write_csv


def test_key_column_rule():
    assert key_column_of(["a", "ID", "b"]) == "ID"  # any case
    assert key_column_of(["id", "Key"]) == "Key"  # key before id
    assert key_column_of(["a", "b"]) is None  # the row number
    assert key_column_of(["id", "b"], "b") == "b"  # --key-column wins
    assert key_column_of(["id", "b"], ignore=["id"]) is None  # an ignored column is no key


def test_missing_tokens():
    cells = ["", "NA", "n/a", "NaN", "null", "?", "nan", "0", "none", "-"]
    assert missing_mask(cells).tolist() == [True] * 7 + [False] * 3
    assert missing_mask(cells, ["-"]).tolist()[-1] is True


def test_plan_reads_kinds_and_refuses_free_text(tmp_path):
    f = people(tmp_path / "p.csv")
    with pytest.raises(DataError, match=r"column 'note' looks like free text, not a category \(60 different values in 60 rows, 6 words in the median one\); pass --text-column note.*--ignore note"):
        plan(f, categorical="auto", missing="impute")
    p = plan(f, categorical="auto", missing="impute", ignore=("note",))
    assert p.key_column == "id" and [(c.name, c.kind) for c in p.columns] == [("age", "numeric"), ("height", "numeric"), ("colour", "categorical")]
    assert p.missing_counts() == {"age": 9, "colour": 5}
    assert p.rows_with_gaps().tolist() == sorted({*range(0, 60, 7), *range(5, 60, 11)})
    text = plan(f, categorical="auto", missing="impute", text_columns=("note",))
    assert [c.kind for c in text.columns] == ["numeric", "numeric", "categorical", "text"]
    chosen = plan(f, categorical="auto", missing="impute", features=("height", "colour"))
    assert [c.name for c in chosen.columns] == ["height", "colour"]
    with pytest.raises(DataError, match=r"column 'age' has no value \(''\); fill it in, or pass --missing impute"):
        plan(f, categorical="auto", missing="error", ignore=("note",))
    with pytest.raises(DataError, match=r"ignore 'weight' is not a column"):
        plan(f, categorical="auto", ignore=("weight",))
    with pytest.raises(DataError, match=r"features names 'label'"):
        plan(f, features=("age", "label"))


def test_many_levels_encoded_on_the_frequent_ones_unless_forced(tmp_path):
    rows = [[f"{i}.5", f"city{i % 60}", "ab"[i % 2]] for i in range(600)]  # 60 levels > max(50, 5 % of 600 = 30), 10 rows each
    f = write_csv(tmp_path / "c.csv", ["x", "city", "label"], rows)
    auto = plan(f, categorical="auto").columns[1]
    assert (auto.levels[:3], len(auto.levels), auto.other) == (["city0", "city1", "city2"], 50, 10)  # the first 50 of a 10-row tie
    assert any(n.startswith("column 'city' has 60 categories, more than max(50, 5 % of 600 rows) = 50: one-hot encoded on the 50")
               for n in plan(f, categorical="auto").notes)  # fmt: skip
    forced = plan(f, categorical="force").columns[1]
    assert (len(forced.levels), forced.other) == (60, 0)
    few = write_csv(tmp_path / "few.csv", ["x", "name", "label"], [[str(i), f"n{i}", "a"] for i in range(15)])
    assert plan(few, categorical="auto").columns[1].kind == "categorical"  # under 20 values: never an identifier


def test_text_column_holding_some_numbers_is_categorical(tmp_path):
    """A drive column of f, r and 4 (4 stands for four-wheel): the numbers are under half the values,
    so they are categories as spelled, and a note says so. A numeric column with a stray word is
    refused (a typo or a gap marker), and so is a mostly-text column whose numbers would make over
    50 levels unless forced."""
    drive = ["f", "4", "r", "f", "4", "f", "r", "f", "4", "f"]  # 3 of 10 numbers
    f = write_csv(tmp_path / "d.csv", ["x", "drv", "label"], [[f"{i}.5", drive[i % 10], "ab"[i % 2]] for i in range(40)])
    p = plan(f, categorical="auto")
    assert [(c.name, c.kind) for c in p.columns] == [("x", "numeric"), ("drv", "categorical")]
    assert p.columns[1].levels == ["4", "f", "r"]
    assert any("'drv' mixes text and numbers (12 of 40 values are numbers)" in n for n in p.notes)
    spec = fit_table_spec(p, np.arange(40))
    x, names = apply_table_spec(p.table, spec)
    assert names == ["x", "drv=4", "drv=f", "drv=r"]
    assert x[:4, 1:].tolist() == [[0, 1, 0], [1, 0, 0], [0, 0, 1], [0, 1, 0]]
    assert x[:, 1:].sum(axis=1).tolist() == [1] * 40
    with pytest.raises(DataError, match=r"'drv' is not a number \('f'\)"):
        plan(f, categorical="error")

    typo = write_csv(tmp_path / "t.csv", ["x", "label"], [["12.5o" if i == 3 else f"{i}.5", "ab"[i % 2]] for i in range(40)])
    with pytest.raises(DataError, match=r"line 5: column 'x' is not a number \('12.5o'\) but line 2 holds the number '0.5' "
                                         r"\(39 of its 40 values are numbers; .*--na-values"):
        plan(typo, categorical="auto")
    many = write_csv(tmp_path / "m.csv", ["code", "label"], [[str(i) if i % 3 == 0 else "other", "ab"[i % 2]] for i in range(180)])
    with pytest.raises(DataError, match=r"column 'code' is not a number \('other'\) but line 2 holds the number '0' \(60 of its 180"):
        plan(many, categorical="auto")
    assert len(plan(many, categorical="force").columns[0].levels) == 61
    # car lines (openintro's epa2012): 60 names, two of them numbers ('500', '911'); the numbers
    # make 2 levels, not over 50, so the column is categorical, its 60 levels encoded as any text
    # column's (on more than max(50, 5 % of rows) levels: the 50 most frequent, the others pooled)
    names = [f"model {i % 58}" if i % 60 < 58 else ("500", "911")[i % 60 - 58] for i in range(600)]
    cars = write_csv(tmp_path / "cars.csv", ["carline", "label"], [[c, "ab"[i % 2]] for i, c in enumerate(names)])
    p = plan(cars, categorical="auto")
    assert [(c.name, c.kind) for c in p.columns] == [("carline", "categorical")]
    assert {"500", "911"} <= set(p.columns[0].levels) and len(p.columns[0].levels) + p.columns[0].other == 60
    assert any("'carline' mixes text and numbers (20 of 600 values are numbers)" in n for n in p.notes)


def test_empty_nameless_columns_are_left_out_and_a_nameless_value_is_refused(tmp_path):
    """A spreadsheet's export with separators at the ends of its lines ("1,2,x,,"): the two
    nameless empty columns are no features, with a note; a nameless column holding a value is
    refused in one line naming its position."""
    trailing = tmp_path / "t.csv"
    trailing.write_text("a,b,label,,\n" + "".join(f"{i},{i % 3},{'xy'[i % 2]},,\n" for i in range(25)))
    p = plan(trailing)
    assert [c.name for c in p.columns] == ["a", "b"]
    assert "left out 2 empty column(s) without a name (separators at the start or end of the lines)" in p.notes
    valued = tmp_path / "v.csv"
    valued.write_text("a,,label\n1,5,x\n2,,y\n")
    with pytest.raises(DataError, match=r"'.*v.csv': column 2 has values but no name in the header; name it"):
        read_csv_table(valued)


def test_a_titanic_like_table_is_keyed_by_its_passenger_id(tmp_path):
    """Kaggle's Titanic, shortened: PassengerId (1..120, the first column named like an id) keys
    the items, with the note an id key gets; a second numbered id, BookingKey, is left out with a
    note naming the ways in; Name and Ticket (identifier-like text) and the 60-level Cabin (2 rows
    a level) are left out too, each with a note; the rest are features."""
    rows = [[str(i + 1), "01"[i % 3 == 0], str(1 + i % 3), f"Person, Mr. {i}", ["male", "female"][i % 2], f"{i % 70}",
             f"T{1000 + 7 * i}", f"{7.25 + i % 13:.2f}", f"C{i % 60}", str(5000 + i)] for i in range(120)]  # fmt: skip
    header = ["PassengerId", "Survived", "Pclass", "Name", "Sex", "Age", "Ticket", "Fare", "Cabin", "BookingKey"]
    f = write_csv(tmp_path / "train.csv", header, rows)
    planned = plan_table(read_csv_table(f), TableOptions(label_column="Survived", categorical="auto"))
    assert planned.key_column == "PassengerId"
    assert "using the column 'PassengerId' as item keys (--key-column)" in planned.notes
    assert [(c.name, c.kind) for c in planned.columns] == [("Pclass", "numeric"), ("Sex", "categorical"), ("Age", "numeric"), ("Fare", "numeric")]
    assert planned.left_out == {"Name": "looks like an identifier: 120 different values in 120 rows",
                                "Ticket": "looks like an identifier: 120 different values in 120 rows",
                                "Cabin": "60 categories, each on under 5 rows",
                                "BookingKey": "looks like an identifier: 120 different whole numbers in 120 rows"}  # fmt: skip
    assert ("column 'BookingKey' looks like an identifier (120 different whole numbers in 120 rows): left out of the features; pass "
            "--key-column BookingKey if it names the items, or name it in --features to use it as a number") in planned.notes  # fmt: skip
    other = plan_table(read_csv_table(f), TableOptions(label_column="Survived", categorical="auto", key_column="BookingKey"))
    assert other.key_column == "BookingKey" and other.left_out["PassengerId"] == "looks like an identifier: 120 different whole numbers in 120 rows"
    assert not any("as item keys" in n for n in other.notes)


def test_every_column_that_is_no_feature_is_named_in_one_line(tmp_path):
    """Two columns of codes written in digits (a zip code, a phone number, with leading zeros) are
    refused together, each with its reason, and one command line leaves them out."""
    rows = [[f"0{2100 + i}", f"0{7700900000 + 13 * i}", f"{i % 70}", "ab"[i % 2]] for i in range(40)]
    f = write_csv(tmp_path / "p.csv", ["zip", "phone", "Age", "label"], rows)
    with pytest.raises(DataError) as refused:
        plan(f, categorical="auto")
    line = str(refused.value)
    assert "\n" not in line and line.startswith(f"{str(f)!r}: 2 columns are not features as they stand: ")
    assert "'zip' holds codes written in digits, not quantities ('02100': a leading zero); 'phone' holds codes" in line
    assert "leave them out with --ignore zip --ignore phone, take one as --key-column, or name it in --features to use it as a number" in line
    assert [c.name for c in plan(f, categorical="auto", ignore=("zip", "phone")).columns] == ["Age"]
    import pickle

    assert str(pickle.loads(pickle.dumps(refused.value))) == line  # crosses a process as a DataError


def test_names_an_identifier_by_its_last_word():
    assert all(map(names_an_identifier, ["customer_id", "CustomerID", "userId", "order-key", "ID", "row uuid", "GUID"]))
    assert not any(map(names_an_identifier, ["paid", "valid", "idle", "keystrokes", "id_number", "x1", ""]))


def test_a_numeric_identifier_is_the_key_unless_another_is_given_or_features_names_it(tmp_path):
    """customer_id 10000-10039 (distinct whole numbers): the key when none is given; ignored, no
    key and the rest features; named in features, a number; with another key given, left out
    with a note. A store_id with 4 values, distinct whole numbers under another name (count),
    and an id column with fractions (batch_id) stay features and are no key."""
    rows = [[str(10000 + i), f"{(i * 0.37) % 1:.3f}", str(i % 4), str(7 * i), f"{i}.5", "ab"[i % 2]] for i in range(40)]
    f = write_csv(tmp_path / "t.csv", ["customer_id", "x", "store_id", "count", "batch_id", "label"], rows)
    planned = plan(f)
    assert planned.key_column == "customer_id" and "using the column 'customer_id' as item keys (--key-column)" in planned.notes
    every = [("x", "numeric"), ("store_id", "numeric"), ("count", "numeric"), ("batch_id", "numeric")]
    assert [(c.name, c.kind) for c in planned.columns] == every and planned.left_out == {}
    ignored = plan(f, ignore=("customer_id",))
    assert ignored.key_column is None and [(c.name, c.kind) for c in ignored.columns] == every
    named = plan(f, features=("customer_id", "x"))
    assert named.key_column is None and [(c.name, c.kind) for c in named.columns] == [("customer_id", "numeric"), ("x", "numeric")]
    assert plan(f, features=("x",)).key_column == "customer_id"  # --features not naming it: still the key
    other = plan(f, key_column="count")
    assert other.key_column == "count" and other.left_out == {"customer_id": "looks like an identifier: 40 different whole numbers in 40 rows"}


def test_an_id_column_with_a_repeat_or_a_gap_is_left_out_not_the_key(tmp_path):
    """customer_id with one value on two rows, or one empty cell, names no item: the rows are
    keyed by their number and the column, still identifier-like (39 of 40 distinct), left out;
    a distinct order_id after it is the key; a text ticket_id is a key too."""
    def table(name: str, cell, *extra: tuple[str, object]) -> Path:
        header = ["customer_id", *(e for e, _ in extra), "x", "label"]
        rows = [[cell(i), *(f(i) for _, f in extra), f"{(i * 0.37) % 1:.3f}", "ab"[i % 2]] for i in range(40)]
        return write_csv(tmp_path / f"{name}.csv", header, rows)

    repeat = table("repeat", lambda i: str(10000 + (i if i != 5 else 4)))
    gap = table("gap", lambda i: "" if i == 5 else str(10000 + i))
    for f, present in ((repeat, 40), (gap, 39)):
        planned = plan(f, missing="impute")
        assert planned.key_column is None and [c.name for c in planned.columns] == ["x"]
        assert planned.left_out == {"customer_id": f"looks like an identifier: 39 different whole numbers in {present} rows"}
        assert not any("as item keys" in n for n in planned.notes)
    ordered = plan(table("order", lambda i: str(10000 + (i if i != 5 else 4)), ("order_id", lambda i: str(900 + 3 * i))))
    assert ordered.key_column == "order_id" and list(ordered.left_out) == ["customer_id"]
    ticketed = plan(table("ticket", lambda i: str(i % 7), ("ticket_id", lambda i: f"T-{i:03d}")))
    assert ticketed.key_column == "ticket_id" and [c.name for c in ticketed.columns] == ["customer_id", "x"]


def test_row_number_column_is_noted(tmp_path):
    """A column counting the rows under a name that says nothing of identifiers (t, a series'
    time index) is kept, with a note; one named as a row number (row) is left out
    (`key_columns.numeric_identifier`)."""
    f = write_csv(tmp_path / "r.csv", ["t", "x", "label"], [[str(i), f"{i * 0.37 % 1:.3f}", "ab"[i % 2]] for i in range(30)])
    planned = plan(f)
    assert any("'t' counts the rows" in n and "--ignore t" in n for n in planned.notes) and [c.name for c in planned.columns] == ["t", "x"]


@pytest.mark.parametrize("name", ["Unnamed: 0", "X", "...1", "index", "level_0"])
def test_a_saved_index_is_left_out(tmp_path, name):
    """pandas' Unnamed: 0 (R's X, readr's ...1, reset_index's index) is the row numbers of a file
    read and saved again, shuffled or not: left out with a note, kept when features names it."""
    order = np.random.default_rng(0).permutation(30)
    f = write_csv(tmp_path / "r.csv", [name, "x", "label"], [[str(i), f"{i * 0.37 % 1:.3f}", "ab"[i % 2]] for i in order])
    planned = plan(f)
    assert [c.name for c in planned.columns] == ["x"]
    assert any(f"{name!r} holds row numbers" in n and "left out" in n for n in planned.notes)
    assert [c.name for c in plan(f, features=(name, "x")).columns] == [name, "x"]
    g = write_csv(tmp_path / "s.csv", [name, "x", "label"], [[str(i % 3), f"{i * 0.37 % 1:.3f}", "ab"[i % 2]] for i in range(30)])
    assert [c.name for c in plan(g).columns] == [name, "x"]  # three levels: a quantity, not row numbers


def test_spec_equals_the_fitted_pipeline_and_learns_on_the_pool_rows_only(tmp_path):
    f = people(tmp_path / "p.csv", n=80)
    p = plan(f, categorical="auto", missing="impute", text_columns=("note",))
    pool_rows = np.setdiff1d(np.arange(80), np.arange(0, 80, 4))  # a quarter held out, row 0 (a gap) among them
    spec = fit_table_spec(p, pool_rows, text_folder=tmp_path / "cache")
    assert json.loads(json.dumps(spec)) == spec  # plain data, no pickle
    x, names = apply_table_spec(p.table, spec)

    from activebayes.data.table_spec import _object_matrix

    matrix = _object_matrix(p)
    reference = build_pipeline(p).fit(matrix[pool_rows]).transform(matrix)
    assert x.shape == reference.shape == (80, len(names))
    np.testing.assert_allclose(x, reference, atol=1e-5)

    age, height, colour, note = spec["columns"]
    ages = np.asarray([float(v) for v in p.table.column("age")[1:] if v not in ("", "NA", "?", "null", "NaN")])
    pool_ages = [p.columns[0].numbers[r] for r in pool_rows if not p.columns[0].missing[r]]
    assert age["fill"] == pytest.approx(np.median(pool_ages)) and age["indicator"] and age["fill"] != pytest.approx(np.median(ages))
    assert names[:3] == ["age", "age (missing)", "height"] and not height["indicator"]
    assert colour["categories"] == ["blue", "green", "red"] and colour["indicator"]
    assert names[3:7] == ["colour=blue", "colour=green", "colour=red", "colour (missing)"]
    assert note["kind"] == "text" and names[7] == "note[0]" and len(names) == 7 + note["dims"]
    gap_rows = np.flatnonzero(p.columns[0].missing)
    assert (x[gap_rows, 1] == 1).all() and x[:, 1].sum() == len(gap_rows)  # the indicator
    z_fill = (age["fill"] - age["mean"]) / age["scale"]
    assert x[gap_rows, 0] == pytest.approx(np.full(len(gap_rows), z_fill), rel=1e-5)  # imputed, then scaled


def test_a_changed_text_model_is_refused(tmp_path):
    f = people(tmp_path / "p.csv")
    p = plan(f, categorical="auto", missing="impute", text_columns=("note",))
    spec = fit_table_spec(p, np.arange(60), text_folder=tmp_path / "cache")
    model = Path(spec["columns"][-1]["file"])
    assert model.parent == tmp_path / "cache" and model.name.endswith(".text-model.npz")
    model.write_bytes(model.read_bytes() + b"\0")
    with pytest.raises(DataError, match=r"text model .* of column 'note' is missing or changed since `pool add`"):
        apply_table_spec(p.table, spec)


def test_a_version_one_spec_still_loads(tmp_path):
    """Projects recorded before gaps and kinds (spec version 1) load as they did."""
    from activebayes.data import load_dataset

    f = write_csv(tmp_path / "v1.csv", ["key", "x", "colour", "label"], [["k0", "1", "red", "a"], ["k1", "3", "blue", "b"]])
    spec = {"version": 1, "categorical": {"colour": ["blue", "red"]}, "standardize": True, "mean": [2.0, 0.0, 0.0], "scale": [1.0, 1.0, 1.0]}
    data = load_dataset(f, label_column="label", key_column="key", features=spec)
    assert data.x.tolist() == [[-1, 0, 1], [1, 1, 0]] and data.keys == ["k0", "k1"]


# ---- row names, as R's write.csv and pandas' to_csv write them ------------------------------------
@pytest.mark.parametrize("first", [[f"Car {i}" for i in range(30)], [str(i) for i in range(30)], [str(7 * i + 3) for i in range(30)]])
def test_a_nameless_first_column_is_the_row_names_and_the_keys(tmp_path, first):
    """R's write.csv (names), pandas' to_csv (its index 0..N-1, or a shuffled one): the column is
    called row_names, is the key, never a feature, and a note says so."""
    table = read_csv_table(row_named(tmp_path / "r.csv", first))
    assert table.header == ["row_names", "x", "label"] and table.row_names
    p = plan_table(table, TableOptions(label_column="label"))
    assert p.key_column == "row_names" and [c.name for c in p.columns] == ["x"]
    assert "the first column has no name: row names, as R's write.csv and pandas' to_csv write them, called 'row_names'; they are the item keys" in p.notes
    assert table.column("row_names") == first


def test_row_names_beside_a_key_are_left_out_and_an_empty_first_column_is_no_row_names(tmp_path):
    table = read_csv_table(row_named(tmp_path / "r.csv", [str(i) for i in range(30)], extra=("id",)))
    p = plan_table(table, TableOptions(label_column="label"))
    assert p.key_column == "id" and [c.name for c in p.columns] == ["x"]
    assert any(n.endswith("called 'row_names'; left out") for n in p.notes)
    p = plan_table(table, TableOptions(label_column="label", features=("row_names", "x")))
    assert [c.name for c in p.columns] == ["row_names", "x"] and any(n.endswith("a feature, as --features asks") for n in p.notes)
    empty = read_csv_table(row_named(tmp_path / "e.csv", [""] * 30))  # a sheet that starts at column B
    assert empty.header == ["", "x", "label"] and not empty.row_names
    p = plan_table(empty, TableOptions(label_column="label"))
    assert p.key_column is None and "left out 1 empty column(s) without a name (separators at the start or end of the lines)" in p.notes
    named = read_csv_table(row_named(tmp_path / "n.csv", [f"r{i}" for i in range(30)], header_first="row_names"))
    assert named.header == ["row_names", "x", "label"] and not named.row_names  # a column of that name is just a column


def refused(path, text: str, message: str) -> None:
    """`text` written to `path` is refused by read_csv_table with a DataError matching `message`."""
    path.write_text(text)
    with pytest.raises(DataError, match=message):
        read_csv_table(path)


def test_a_header_one_name_short_is_refused_with_both_readings(tmp_path):
    """R's write.table leaves the row names out of the header; so does a header that lost a name.
    Which one it is cannot be told, so the first record's line says both ways out."""
    path = tmp_path / "t.csv"
    refused(path, "x,label\nCar 1,0.5,a\nCar 2,0.7,b\n",
            r"line 2: expected 2 fields, got 3 \(separator ','\); quote a value that holds the separator "
            r"\(or, if the first field is a row name, name it at the start of the header\)$")  # fmt: skip
    refused(path, "x,label\nCar 1,a\nCar 2,0.7,b\n", r"line 3: expected 2 fields, got 3 \(separator ','\); quote a value that holds the separator$")


def test_a_title_above_the_header_is_named(tmp_path):
    """A report's title on the first line (alone, or in the first cell with empty ones after it,
    as a spreadsheet saves it): one line saying so, not a ragged record or a nameless column."""
    path = tmp_path / "t.csv"
    refused(path, "Sales report 2024\n\nid,x,y,label\nk1,1,2,a\nk2,3,4,b\n",
            r"line 1: 'Sales report 2024' is the only name on the first line, and line 3 has 4 fields, "
            r"so it looks like a title above the header; delete the lines above the column names")  # fmt: skip
    refused(path, "Sales report 2024,,,\nid,x,y,label\nk1,1,2,a\nk2,3,4,b\n",
            r"line 1: 'Sales report 2024' is the only name on the first line, and the lines below have "
            r"values under the other 3, so it looks like a title above the header")  # fmt: skip
    path.write_text("score\n1\n2\n")  # one column is a table
    assert read_csv_table(path).header == ["score"]


@pytest.mark.parametrize("sep", [";", ",", "\t"])
def test_excels_sep_line_names_the_separator(tmp_path, sep):
    """Excel's `sep=;` first line (which Excel reads to split the file and never shows) names the
    separator and is not the header; the rows are read back by their byte offsets (UTF-8) or by
    reading the file through (UTF-16) as before."""
    from activebayes.data.csv_table import csv_header, read_records

    point = "." if sep == "," else ","
    rows = [sep.join(cells) for cells in (["id", "x y", "label"], ["k1", f"1{point}5", "a"], [], ["k2", f"2{point}5", "b"])]
    text = f"sep={sep}\r\n" + "\r\n".join(rows) + "\r\n"
    for encoding in ("utf-8-sig", "utf-16"):
        path = tmp_path / "s.csv"
        path.write_bytes(text.encode(encoding))
        table = read_csv_table(path)
        assert (table.header, table.delimiter, table.lines.tolist()) == (["id", "x y", "label"], sep, [3, 5])
        assert table.column("x y") == [f"1{point}5", f"2{point}5"] and csv_header(path) == table.header
        assert read_records(path, table.offsets, [1], delimiter=sep, encoding=table.encoding)[0][0] == "k2"
        assert read_records(path, None, None, delimiter=sep)[0][0] == "k1"
    path.write_text("sep=\nid,label\nk1,a\n")  # no separator named: an ordinary (one-name) first line
    with pytest.raises(DataError, match="looks like a title above the header"):
        read_csv_table(path)


@pytest.mark.parametrize("block_elements", [1 << 23, 200])
def test_numeric_columns_fitted_in_blocks_equal_one_fit_per_column(tmp_path, monkeypatch, block_elements):
    """A wide table's numeric columns are fitted a block at a time (column-major): fill, mean and
    scale equal, bit for bit, those of each column's own pipeline fitted alone."""
    from sklearn.base import clone

    from activebayes.data import table_spec

    monkeypatch.setattr(table_spec, "_BLOCK_ELEMENTS", block_elements)  # 200: five columns of 40 pool rows a block
    rng = np.random.default_rng(3)
    values = rng.normal(size=(120, 9)) * rng.uniform(0.01, 1e4, 9) + rng.uniform(-1e5, 1e5, 9)
    rows = [[("" if rng.random() < 0.1 else repr(float(v))) for v in row] + ["ab"[i % 2]] for i, row in enumerate(values)]
    p = plan(write_csv(tmp_path / "w.csv", [f"x{j}" for j in range(9)] + ["label"], rows), missing="impute")
    pool = np.arange(0, 120, 3)[:80] if block_elements == 200 else np.arange(120)
    spec = fit_table_spec(p, pool)
    for (part, transformer, where), entry in zip([t for t in build_pipeline(p).transformers if "(missing)" not in t[0]], spec["columns"]):
        alone = clone(transformer).fit(p.columns[where[0]].numbers[pool][:, None])
        assert (entry["fill"], entry["mean"], entry["scale"]) == (alone[0].statistics_[0], alone[1].mean_[0], alone[1].scale_[0]), part


def test_excel_error_values_are_gaps_with_a_note(tmp_path):
    """A spreadsheet saves a failed formula as #DIV/0!, #N/A, ...: those cells are gaps (any case),
    counted, with a note naming the first; a dash, as people write "no value", is a gap too, with a
    note of its own; a word that marks no gap is refused unless --na-values says so."""
    rows = [[f"k{i}", ("#DIV/0!", "#n/a", "#VALUE!")[i % 3] if i % 5 == 1 else f"{i / 10}", "ab"[i % 2]] for i in range(25)]
    p = plan(write_csv(tmp_path / "x.csv", ["id", "ratio", "label"], rows), missing="impute")
    assert p.columns[0].kind == "numeric" and p.columns[0].missing.sum() == 5 and p.missing_counts() == {"ratio": 5}
    assert "column 'ratio' holds Excel's error values ('#n/a' on line 3; 5 cells in all): read as gaps" in p.notes
    rows[3][1] = "-"
    dashed = plan(write_csv(tmp_path / "d.csv", ["id", "ratio", "label"], rows), missing="impute")
    assert dashed.columns[0].missing.sum() == 6 and "column 'ratio' holds gap markers ('-' on line 5; 1 cells in all): read as gaps" in dashed.notes
    rows[3][1] = "unknown"
    with pytest.raises(DataError, match=r"line 5: column 'ratio' is not a number \('unknown'\)"):
        plan(write_csv(tmp_path / "u.csv", ["id", "ratio", "label"], rows), missing="impute")
    assert plan(tmp_path / "u.csv", missing="impute", na_values=("unknown",)).columns[0].missing.sum() == 6


def test_review_mends_row_names_formula_errors_and_recorded_specs(tmp_path):
    """A column that is called row_names stays a column (only a nameless first column is row
    names); an empty row name is refused with the way out; a spec fitted when #N/A was a category
    (recorded na_values without the formula errors) is applied as it was fitted."""
    named = read_csv_table(write_csv(tmp_path / "n.csv", ["a", "row_names", "label"], [[str(i), str(i % 7), "ab"[i % 2]] for i in range(30)]))
    assert not named.row_names and [c.name for c in plan_table(named, TableOptions(label_column="label")).columns] == ["a", "row_names"]
    assert key_column_of(["row_names", "x"]) is None and key_column_of(["row_names", "x"], row_names=True) == "row_names"
    from activebayes.data.loaders import dataset_from_table

    gap = read_csv_table(row_named(tmp_path / "g.csv", ["" if i == 4 else f"Car {i}" for i in range(30)]))
    spec = fit_table_spec(plan_table(gap, TableOptions(label_column="label")), np.arange(30))
    with pytest.raises(DataError, match=r"line 6: empty key in the key column 'row_names'; give every row a key \(or --ignore row_names"):
        dataset_from_table(gap, spec, "label", "row_names")

    rows = [[f"k{i}", ("a", "#N/A", "b")[i % 3], str(i), "xy"[i % 2]] for i in range(30)]
    table = read_csv_table(write_csv(tmp_path / "c.csv", ["id", "c", "v", "label"], rows))
    spec = fit_table_spec(plan_table(table, TableOptions(label_column="label", missing="impute", categorical="auto")), np.arange(30))
    assert spec["columns"][0]["categories"] == ["a", "b"] and "#N/A" in spec["na_values"]  # a gap now, recorded as one
    old = json.loads(json.dumps(spec))
    old["na_values"] = []
    old["columns"][0].update(categories=["#N/A", "a", "b"], indicator=False)
    x, names = apply_table_spec(table, old)
    assert names[:3] == ["c=#N/A", "c=a", "c=b"] and x[1, :3].tolist() == [1, 0, 0]  # row 1 holds #N/A, a category as before


def test_a_table_of_a_key_and_a_label_alone_says_what_to_add(tmp_path):
    """Nothing to learn from: refused naming the columns it has and the ways in."""
    path = write_csv(tmp_path / "k.csv", ["id", "label"], [[f"k{i}", "ab"[i % 2]] for i in range(10)])
    with pytest.raises(DataError, match=r"no feature columns besides the label/key columns \('id', 'label'\); add the columns that describe "
                                        r"each item, or name a column of prose with --text-column$"):  # fmt: skip
        plan_table(read_csv_table(path), TableOptions(label_column="label"))
