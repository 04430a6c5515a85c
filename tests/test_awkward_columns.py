"""An ordinary table with one awkward text column imports (`activebayes.data.frequent_levels`):
an identifier-like column is left out with a note naming the ways in, a many-level one is
one-hot encoded on its frequent levels with the rare ones sharing an "other" feature, frozen at
import so that an appended row's new level falls in "other"; what is really bad input is still
refused in one line, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from activebayes.data.csv_table import read_csv_table
from activebayes.data.frequent_levels import frequent_levels, level_limit, looks_like_identifier
from activebayes.data.table_spec import _object_matrix, apply_table_spec, build_pipeline, fit_table_spec
from activebayes.data.tabular import TableOptions, plan_table
from cli_checks import assert_mistake, db_dump, ok, one_hot_rows, run

FREQUENT = {"Main St": 30, "Oak Ave": 25, "Elm Rd": 10}  # and 55 streets on one row each


def street_table(path: Path, *, gap: bool = False) -> Path:
    """120 rows: id k0..k119, name (all different), street (58 levels: 3 frequent, 55 on one row;
    with `gap` row 3's is NA), x, label a/b."""
    streets = [s for s, n in FREQUENT.items() for _ in range(n)] + [f"Lane {i}" for i in range(55)]
    rows = [f"k{i},Person {i},{'NA' if gap and i == 3 else street},{i % 9}.5,{'ab'[i % 2]}" for i, street in enumerate(streets)]
    path.write_text("id,name,street,x,label\n" + "\n".join(rows) + "\n")
    return path


def flat(text: str) -> str:
    """`text` with its line breaks (a console's wrapping) and runs of spaces as one space."""
    return " ".join(text.split())


def test_the_frequent_levels_rule():
    levels, counts = ["a", "b", "c", "d", "e"], [9, 5, 4, 9, 7]
    assert frequent_levels(levels, counts, 10) == ["a", "b", "d", "e"]  # c is on under 5 rows
    assert frequent_levels(levels, counts, 3) == ["a", "d", "e"]  # the 3 most frequent, in the levels' order
    assert frequent_levels(levels, counts, 1) == ["a"]  # a tie goes to the level first in order
    assert frequent_levels(levels, [1, 2, 3, 4, 1], 3) == []
    assert (level_limit(104), level_limit(1337), level_limit(3313)) == (50, 66, 165)
    assert looks_like_identifier(83, 83) and looks_like_identifier(18, 20)
    assert not looks_like_identifier(19, 19) and not looks_like_identifier(80, 100)


def test_a_many_level_column_is_encoded_on_its_frequent_levels_as_the_pipeline_does(tmp_path):
    p = plan_table(read_csv_table(street_table(tmp_path / "s.csv", gap=True)), TableOptions(label_column="label", categorical="auto", missing="impute"))
    assert p.key_column == "id" and [c.name for c in p.columns] == ["street", "x"]
    assert p.left_out == {"name": "looks like an identifier: 120 different values in 120 rows"}
    street = p.columns[0]
    assert (street.levels, street.other) == (["Elm Rd", "Main St", "Oak Ave"], 55)
    assert ("column 'street' has 58 categories, more than max(50, 5 % of 120 rows) = 50: one-hot encoded on the 3 on at least 5 rows "
            "(at most 50), the other 55 (55 rows) sharing one '(other)' feature; --categorical force encodes all 58, --text-column street "
            "reads it as prose, --ignore street leaves it out") in p.notes  # fmt: skip
    pool_rows = np.arange(0, 120, 2)
    spec = fit_table_spec(p, pool_rows)
    assert spec["columns"][0]["categories"] == ["Elm Rd", "Main St", "Oak Ave"] and spec["columns"][0]["other"] == 55
    assert json.loads(json.dumps(spec)) == spec
    x, names = apply_table_spec(p.table, spec)
    assert names == ["street=Elm Rd", "street=Main St", "street=Oak Ave", "street=(other)", "street (missing)", "x"]
    matrix = _object_matrix(p)
    np.testing.assert_allclose(x, build_pipeline(p).fit(matrix[pool_rows]).transform(matrix), atol=1e-5)
    assert x[[0, 3, 40, 119], :5].tolist() == [[0, 1, 0, 0, 0], [0, 1, 0, 0, 1], [0, 0, 1, 0, 0], [0, 0, 0, 1, 0]]  # row 3: a gap, filled
    forced = plan_table(p.table, TableOptions(label_column="label", categorical="force", missing="impute"))
    assert [(c.name, len(c.levels), c.other) for c in forced.columns[:2]] == [("name", 120, 0), ("street", 58, 0)]


def test_a_many_level_column_without_a_frequent_level_is_left_out(tmp_path):
    f = tmp_path / "r.csv"
    f.write_text("code,x,label\n" + "".join(f"c{i // 2},{i % 7},{'ab'[i % 2]}\n" for i in range(120)))  # 60 levels, 2 rows each
    p = plan_table(read_csv_table(f), TableOptions(label_column="label", categorical="auto"))
    assert [c.name for c in p.columns] == ["x"] and p.left_out == {"code": "60 categories, each on under 5 rows"}
    assert any(n.startswith("column 'code' has 60 categories, more than max(50, 5 % of 120 rows) = 50, none on 5 rows or more: left out")
               for n in p.notes)  # fmt: skip


def test_pool_add_says_what_it_did_and_the_ways_to_change_it(cli_db):
    street_table(Path("t.csv"))
    ok("init", "--name", "t")
    added = ok("pool", "add", "t.csv")
    out = notes = flat(added.stdout + added.stderr)  # the notes go to stderr, or to stdout with the summary
    assert ("Features: numbers (1): x; categories (1): street (4 features: its 3 frequent categories and '(other)' for 55 more; "
            "--categorical force encodes all); 5 in all.") in out
    assert "Not features: name (looks like an identifier: 120 different values in 120 rows)." in out
    assert "pass --key-column name if it names the items, --text-column name if it is prose, or --categorical force" in notes
    assert "one-hot encoded on the 3 on at least 5 rows" in notes
    ok("init", "--name", "j")
    summary = json.loads(ok("--json", "--project", "j", "pool", "add", "t.csv").stdout)
    assert summary["columns"]["street"] == {"kind": "categorical", "features": 4, "categories": 3, "other": 55}
    assert summary["not_features"] == {"name": "looks like an identifier: 120 different values in 120 rows"}
    assert summary["features"] == [5]


def test_an_appended_new_level_goes_to_other_in_a_pooled_column(cli_db):
    street_table(Path("t.csv"))
    ok("init", "--name", "t")
    ok("pool", "add", "t.csv")
    Path("more.csv").write_text("id,name,street,x,label\nk200,Someone,Brand New Rd,1.5,a\nk201,Another,Oak Ave,1.5,b\nk202,Third,Lane 7,1.5,a\n")
    ok("pool", "add", "more.csv", "--append")
    x = one_hot_rows("t", "street", ["Elm Rd", "Main St", "Oak Ave", "(other)"], ["k200", "k201", "k202"])
    assert x == [[0, 0, 0, 1], [0, 0, 1, 0], [0, 0, 0, 1]]


def test_really_bad_input_is_still_refused_and_nothing_written(cli_db):
    ok("init", "--name", "t")
    Path("stray.csv").write_text("x,label\n" + "".join(f"{'12.5o' if i == 3 else i},{'ab'[i % 2]}\n" for i in range(40)))
    Path("dup.csv").write_text("code,x,label\n" + "".join(f"c{i % 30},{i},{'ab'[i % 2]}\n" for i in range(40)))
    before = db_dump(cli_db)
    assert_mistake(run("pool", "add", "stray.csv"), "line 5: column 'x' is not a number ('12.5o') but line 2 holds the number '0'", "--na-values")
    assert_mistake(run("pool", "add", "dup.csv", "--key-column", "code"), "the key 'c0' of column 'code' is also on line 2", "unique")
    assert db_dump(cli_db) == before


@pytest.mark.parametrize("name", ["customer_id", "OrderKey"])
def test_a_numbered_identifier_is_the_key_and_a_second_one_left_out(cli_db, name):
    """A numbered id column (10000, 10001, ...) keys the items; a second one, ref_id, is named
    under `Not features:` (and in --json's not_features) with the ways in."""
    ok("init", "--name", "t")
    Path("c.csv").write_text(f"{name},ref_id,x,label\n" + "".join(f"{10000 + i},{70 + 3 * i},{i % 5},{'ab'[i % 2]}\n" for i in range(40)))
    added = ok("pool", "add", "c.csv")
    out = flat(added.stdout + added.stderr)
    assert f"using the column {name!r} as item keys (--key-column)" in out and f"Keys: column {name!r}." in out
    assert "Not features: ref_id (looks like an identifier: 40 different whole numbers in 40 rows)." in out
    assert "pass --key-column ref_id if it names the items, or name it in --features to use it as a number" in out
    ok("init", "--name", "j")
    summary = json.loads(ok("--json", "--project", "j", "pool", "add", "c.csv").stdout)
    assert summary["key_column"] == name and summary["features"] == [1]
    assert summary["not_features"] == {"ref_id": "looks like an identifier: 40 different whole numbers in 40 rows"}


def test_a_table_whose_only_column_is_an_identifier_is_refused_with_the_reason(cli_db):
    ok("init", "--name", "t")
    Path("n.csv").write_text("name,label\n" + "".join(f"Person {i},{'ab'[i % 2]}\n" for i in range(30)))
    before = db_dump(cli_db)
    assert_mistake(run("pool", "add", "n.csv"), "no feature columns besides the label/key columns (left out: 'name' looks like an identifier: "
                   "30 different values in 30 rows)", "--features")  # fmt: skip
    assert db_dump(cli_db) == before
    assert json.loads(ok("--json", "pool", "add", "n.csv", "--categorical", "force").stdout)["features"] == [30]
