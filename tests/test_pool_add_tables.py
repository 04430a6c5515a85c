"""`pool add` on tables as users bring them: columns chosen and left out, gaps imputed (with
indicators), dropped or refused, labels read from a partly labelled table, free text as a pool
of its own, and each refusal one line that leaves the database as it was."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from cli_checks import assert_mistake, db_dump, ok, run
from table_files import people, row_named, write_csv


@pytest.fixture
def db(cli_db):
    ok("init", "--name", "t")
    return cli_db


def summary_of(*args: str, project: str = "t") -> dict:
    return json.loads(ok("--json", "--project", project, "pool", "add", *args).stdout)


def test_pool_add_with_only_the_label_column(db):
    """An id column and gaps: the id is the key, the gaps imputed; the feature count is a person's."""
    people(Path("p.csv"))
    Path("q.csv").write_text(Path("p.csv").read_text())
    before = db_dump(db)
    refused = run("pool", "add", "p.csv", "--label-column", "label", "--test-fraction", "0.3")
    assert_mistake(refused, "'note' looks like free text", "--text-column note", "--ignore note")
    assert db_dump(db) == before
    added = ok("--json", "pool", "add", "p.csv", "--label-column", "label", "--test-fraction", "0.3", "--ignore", "note")
    summary = json.loads(added.stdout)
    # age, its gap indicator, height, colour's three levels, its gap indicator
    assert summary["features"] == [7] and summary["key_column"] == "id" and summary["ignored"] == ["note"]
    assert summary["missing"] == {"age": 9, "colour": 5} and summary["missing_mode"] == "impute"
    assert summary["pool_items"] + summary["test_items"] == 60
    assert "using the column 'id' as item keys" in added.stderr
    from activebayes.store import PoolStore

    with PoolStore(db, create=False) as store:
        keys = store.item_keys("t")
    assert keys == {f"P-{i:04d}" for i in range(60)}
    ok("round", "--oracle", "truth", "--k", "5", "--device", "cpu")
    ok("round", "--k", "3", "--device", "cpu", "--samples", "2", "--epochs", "2")
    with Path("t-round-2.csv").open(newline="") as fh:
        header, *lines = list(csv.reader(fh))
    assert header[4:] == ["age", "height", "colour"]  # the file's columns, raw, after key, label, score, rank
    with Path("p.csv").open(newline="") as fh:
        by_key = {r["id"]: r for r in csv.DictReader(fh)}
    for line in lines:
        row = by_key[line[0]]
        shown = ["" if row["age"] in ("", "NA", "?", "null", "NaN") else row["age"], row["height"], "" if row["colour"] == "N/A" else row["colour"]]
        assert line[4:] == shown  # a missing value is empty


def test_pool_add_keys_the_items_by_a_numeric_identifier(db):
    """`pool add` of a table whose customer_id counts from 10,000: the items are keyed by it
    (SQLite, then PostgreSQL); named in --features it is a number and the rows are keyed by
    their number."""
    write_csv(Path("c.csv"), ["customer_id", "x", "label"], [[str(10000 + i), f"{(i * 0.37) % 1:.3f}", "ab"[i % 2]] for i in range(30)])
    summary = summary_of("c.csv", "--label-column", "label")
    assert summary["key_column"] == "customer_id" and summary["features"] == [1]
    from activebayes.store import PoolStore

    with PoolStore(db, create=False) as store:
        assert store.item_keys("t") == {str(10000 + i) for i in range(30)}
    ok("init", "--name", "n")
    named = summary_of("c.csv", "--label-column", "label", "--features", "customer_id,x", project="n")
    assert named["key_column"] is None and named["features"] == [2]


def test_label_gaps_and_non_numeric_targets_are_refused_with_their_line(cli_db):
    """A project whose classes come from the labels: an empty label cell is refused (it would have
    become a class ''), naming its line, and nothing is written; a regression target that is empty
    or not a number likewise; --ignore label stops the column named label being taken as labels."""
    rows = [[f"k{i}", f"{(i * 0.37) % 1:.3f}", "" if i == 7 else "ab"[i % 2]] for i in range(30)]
    write_csv(Path("c.csv"), ["key", "x", "label"], rows)
    ok("init", "--name", "c", "--task", "classification")
    before = db_dump(cli_db)
    assert_mistake(run("--project", "c", "pool", "add", "c.csv"), "row 7 has an empty label (line 9)", "fill it in")  # one row
    assert db_dump(cli_db) == before
    ok("init", "--name", "r", "--task", "regression")
    for bad, words in (("", "empty label"), ("n/a", "no label but the gap marker 'n/a'"), ("none", "no label but the gap marker 'none'"), ("unknown", "label 'unknown' (line 6), not a finite number"), ("inf", "not a finite number")):
        write_csv(Path("r.csv"), ["key", "x", "y"], [[f"k{i}", str(i), bad if i == 4 else f"{i * 1.5}"] for i in range(30)])
        before = db_dump(cli_db)
        assert_mistake(run("--project", "r", "pool", "add", "r.csv", "--label-column", "y"), "row 4", "(line 6)", words)
        assert db_dump(cli_db) == before
    ok("init", "--name", "d", "--task", "classification", "--classes", "a,b")
    summary = summary_of("c.csv", "--ignore", "label", project="d")
    assert summary["truth"] == "none" and summary["pool_items"] == 30 and summary["features"] == [1]


def test_a_partly_labelled_table_imports_its_labels_and_pools_the_rest(db):
    """A sheet with labels on every third row: refused without --labels-are-known (naming the
    first empty label and the count, nothing written); with it, the labels are answers, the
    empty rows the pool, the test split is drawn from the labelled rows, a round asks among the
    unlabelled only, and --oracle truth says there is no held-back truth. Regression alike."""
    rows = [[f"k{i}", f"{(i * 0.37) % 1:.3f}", "ab"[i % 2] if i % 3 == 0 else ""] for i in range(30)]
    write_csv(Path("part.csv"), ["key", "x", "label"], rows)
    before = db_dump(db)
    assert_mistake(run("pool", "add", "part.csv"), "row 1 has an empty label (line 3) (20 rows in all)", "--labels-are-known")
    assert db_dump(db) == before
    added = ok("--json", "pool", "add", "part.csv", "--labels-are-known", "--test-fraction", "0.2")
    summary = json.loads(added.stdout)
    assert summary["truth"] == "known" and summary["test_items"] == 2 and summary["classes"] == ["a", "b"]
    said = " ".join(added.stderr.split())
    assert "20 rows without a label are the pool to label; 10 labels imported" in said
    assert "the test split (2 rows) is drawn from the 10 rows labelled already, not from the whole table" in said
    status = json.loads(ok("--json", "status").stdout)
    assert (status["labelled"], status["unlabelled"]) == (8, 20)
    from activebayes.store import PoolStore

    with PoolStore(db, create=False) as store:
        _, pool_keys, pool_labels = store.labels("t", split="pool")
        _, test_keys, test_labels = store.labels("t", split="test")
        _, _, all_test_keys = store.items("t", split="test")
    labelled = {f"k{i}": "ab"[i % 2] for i in range(0, 30, 3)}
    assert len(all_test_keys) == 2 and set(all_test_keys) == set(test_keys)  # the test split: labelled rows only
    assert dict(zip(pool_keys + test_keys, pool_labels + test_labels)) == labelled
    assert_mistake(run("round", "--oracle", "truth", "--k", "3", "--device", "cpu"), "imported its labels as answers", "none is held back")
    ok("round", "--k", "3", "--device", "cpu", "--epochs", "2")
    with Path("t-round-1.csv").open(newline="") as fh:
        asked = [r[0] for r in list(csv.reader(fh))[1:]]
    assert len(asked) == 3 and not set(asked) & set(labelled)
    ok("init", "--name", "r", "--task", "regression")
    write_csv(Path("r.csv"), ["key", "x", "y"], [[f"k{i}", str(i), f"{1.5 * i}" if i % 2 else ""] for i in range(20)])
    assert json.loads(ok("--json", "--project", "r", "pool", "add", "r.csv", "--label-column", "y", "--labels-are-known").stdout)["truth"] == "known"
    assert (lambda s: (s["labelled"], s["unlabelled"]))(json.loads(ok("--json", "--project", "r", "status").stdout)) == (10, 10)


def test_a_column_named_like_the_target_is_pointed_out(cli_db):
    """Without --label-column, a column named class is a feature, and the summary says how to
    make it the labels."""
    write_csv(Path("c.csv"), ["a", "class"], [[str(i), "xy"[i % 2]] for i in range(10)])
    ok("init", "--name", "c", "--classes", "x,y")
    added = ok("--project", "c", "pool", "add", "c.csv")
    said = " ".join(added.output.split())
    assert "no labels: the column 'class' is taken as a feature; pass --label-column class if it is what to predict" in said


def test_missing_drop_and_error_and_more_tokens(db):
    people(Path("p.csv"))
    summary = summary_of("p.csv", "--ignore", "note", "--missing", "drop")
    assert summary["features"] == [5] and len(summary["dropped_rows"]) == 13  # row 49 has two gaps
    assert summary["pool_items"] == 47
    ok("init", "--name", "e")
    before = db_dump(db)
    assert_mistake(run("--project", "e", "pool", "add", "p.csv", "--ignore", "note", "--missing", "error"), "line 2", "'age' has no value")
    assert db_dump(db) == before
    write_csv(Path("dash.csv"), ["x", "y", "label"], [[str(i), "unknown" if i == 3 else str(i % 5), "ab"[i % 2]] for i in range(12)])
    assert_mistake(run("--project", "e", "pool", "add", "dash.csv"), "'y' is not a number ('unknown')", "--na-values")
    assert summary_of("dash.csv", "--na-values", "unknown,--", project="e")["missing"] == {"y": 1}


def test_features_and_categorical_force(db):
    people(Path("p.csv"))
    assert summary_of("p.csv", "--features", "height,colour")["features"] == [5]  # height, 3 levels, the gap indicator
    ok("init", "--name", "f")
    forced = summary_of("p.csv", "--categorical", "force", "--features", "note", project="f")
    assert forced["features"] == [60]  # the user insisted: one level per row
    before = db_dump(db)
    ok("init", "--name", "g")
    before = db_dump(db)
    assert_mistake(run("--project", "g", "pool", "add", "p.csv", "--features", "height,weight"), "--features 'weight' is not a column",
                   "the columns are 'id', 'age', 'height', 'colour', 'note', 'label'")  # fmt: skip
    assert_mistake(run("--project", "g", "pool", "add", "p.csv", "--features", "Height"), "'Height' is not a column; did you mean 'height'?")
    assert_mistake(run("--project", "g", "pool", "add", "p.csv", "--ignore", "colur"), "--ignore 'colur' is not a column", "did you mean 'colour'?")
    for option, given in (("--label-column", "lable"), ("--key-column", "ID_"), ("--text-column", "notes")):  # named as typed, not as label_column
        assert_mistake(run("--project", "g", "pool", "add", "p.csv", option, given), f"{option} '{given}' is not a column")
    assert_mistake(run("--project", "g", "pool", "add", "p.csv", "--features", " , "), "--features")
    assert db_dump(db) == before


def test_pool_add_reads_a_drive_column_of_letters_and_a_number(db):
    """mpg's drv (f, r, 4): `pool add` one-hot encodes it with the note, and a round runs on it."""
    drive = ["f", "4", "r", "f", "4"]
    write_csv(Path("d.csv"), ["id", "displ", "drv", "label"], [[f"c{i}", f"{1 + i % 7}.{i % 10}", drive[i % 5], "ab"[i % 2]] for i in range(30)])
    added = ok("--json", "pool", "add", "d.csv", "--label-column", "label")
    assert json.loads(added.stdout)["features"] == [4]  # displ, drv=4, drv=f, drv=r
    assert "'drv' mixes text and numbers (12 of 30 values are numbers); its numbers are read as categories" in " ".join(added.stderr.split())
    ok("round", "--oracle", "truth", "--k", "4", "--device", "cpu")


def test_text_column_is_a_first_class_pool(db):
    people(Path("p.csv"), n=80)
    summary = summary_of("p.csv", "--text-column", "note", "--test-fraction", "0.25")
    assert summary["text_columns"] == ["note"] and summary["features"][0] > 7
    models = list(Path("activebayes-cache").glob("*.text-model.npz"))
    assert len(models) == 1
    ok("round", "--oracle", "truth", "--k", "6", "--device", "cpu")
    ok("round", "--k", "2", "--device", "cpu", "--samples", "2", "--epochs", "2")
    with Path("t-round-2.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert all("visit" in r["note"] for r in rows)  # the text as text
    ok("export", "tasks.json", "--format", "label-studio")
    tasks = json.loads(Path("tasks.json").read_text())
    assert all("note: " in t["data"]["text"] and "visit" in t["data"]["text"] for t in tasks)
    models[0].write_bytes(models[0].read_bytes()[:-1])
    assert_mistake(run("export", "again.json", "--format", "label-studio"), "text model", "changed")


def test_regression_table_with_id_and_gaps(db):
    ok("init", "--name", "r", "--task", "regression")
    rng = np.random.default_rng(1)
    rows = [[f"h{i}", "" if i % 9 == 0 else f"{rng.normal():.3f}", ("x", "y")[i % 2], f"{rng.normal():.3f}"] for i in range(40)]
    write_csv(Path("r.csv"), ["ID", "f", "kind", "label"], rows)
    summary = summary_of("r.csv", "--test-fraction", "0.25", project="r")
    assert summary["key_column"] == "ID" and summary["features"] == [4] and summary["missing"] == {"f": 5}
    ok("--project", "r", "round", "--oracle", "truth", "--k", "5", "--device", "cpu")
    ok("--project", "r", "round", "--oracle", "truth", "--k", "3", "--device", "cpu")


def test_prompt_shows_raw_cells():
    from activebayes.oracles.prompt import PromptOracle

    oracle = PromptOracle(classes=["a", "b"], feature_names=["age", "colour", "note"])
    text = oracle.render_row(np.asarray(["31.5", "", "a long\nnote"], dtype=object))
    assert "31.5" in text and "a long note" in text and "colour" in text


def test_a_refused_text_pool_leaves_no_model_behind(db):
    people(Path("p.csv"), n=40)
    ok("init", "--name", "c", "--classes", "a,x")  # 'b' is no class of this project
    before = db_dump(db)
    assert_mistake(run("--project", "c", "pool", "add", "p.csv", "--text-column", "note"), "'b'", "not one of the classes")
    with Path("p.csv").open(newline="") as fh:
        rows = [r[:-1] for r in csv.reader(fh)]
    write_csv(Path("q.csv"), rows[0], rows[1:])  # no label column: the labels come from --truth
    Path("truth.csv").write_text("key,label\nP-0000,a\n")  # the fit succeeds, then the truth is short
    assert_mistake(run("--project", "c", "pool", "add", "q.csv", "--text-column", "note", "--truth", "truth.csv"), "--truth", "no label for 39")
    assert db_dump(db) == before
    assert not list(Path(".").glob("**/*.text-model.npz"))


def test_pool_add_keys_items_by_their_row_names(db):
    """pool add of R's write.csv output: the row names are the keys of the items and of the round
    file; repeated row names are one line with the way out, and nothing is written."""
    row_named(Path("cars.csv"), [f"Car {i}" for i in range(30)])
    added = ok("--json", "pool", "add", "cars.csv", "--label-column", "label", "--test-fraction", "0.2")
    assert json.loads(added.stdout)["key_column"] == "row_names" and json.loads(added.stdout)["features"] == [1]
    ok("round", "--oracle", "truth", "--k", "4", "--device", "cpu")
    ok("round", "--k", "3", "--device", "cpu", "--samples", "2", "--epochs", "2")
    with Path("t-round-2.csv").open(newline="") as fh:
        assert all(r["key"].startswith("Car ") for r in csv.DictReader(fh))
    ok("init", "--name", "u")
    row_named(Path("twice.csv"), [f"Car {i % 20}" for i in range(30)])
    before = db_dump(db)
    assert_mistake(run("--project", "u", "pool", "add", "twice.csv", "--label-column", "label"), "'Car 0'", "line 22", "--ignore row_names")
    assert db_dump(db) == before
    summary = summary_of("twice.csv", "--label-column", "label", "--ignore", "row_names", project="u")
    assert summary["key_column"] is None and summary["features"] == [1]


def test_classes_that_differ_only_in_case_are_pointed_out(db):
    write_csv(Path("c.csv"), ["id", "x", "label"], [[f"k{i}", str(i), ("Yes", "yes", "No", "no ", "n o")[i % 5]] for i in range(20)])
    added = ok("--json", "pool", "add", "c.csv", "--label-column", "label")
    said = " ".join(added.stderr.split())
    assert "classes read from the labels: n o, No, no, Yes, yes" in said
    assert "the classes 'n o', 'No', 'no' differ only in case or spacing" in said and "the classes 'Yes', 'yes' differ only in case" in said


def test_formula_errors_in_the_label_column_are_no_labels(db):
    """#N/A in the label column (a failed lookup) is no label, never a class: refused like an empty
    label, naming it; with --labels-are-known those rows are the pool still to label."""
    write_csv(Path("l.csv"), ["key", "x", "label"], [[f"k{i}", str(i), "#N/A" if i % 4 == 1 else "ab"[i % 2]] for i in range(20)])
    before = db_dump(db)
    refused = run("pool", "add", "l.csv")
    assert_mistake(refused, "row 1 has no label but the formula error '#N/A' (line 3) (5 rows in all)", "--labels-are-known")
    assert "is a class" not in refused.stderr  # a failed lookup is never a class
    assert db_dump(db) == before
    added = ok("--json", "pool", "add", "l.csv", "--labels-are-known")
    assert json.loads(added.stdout)["classes"] == ["a", "b"]
    assert (lambda s: (s["labelled"], s["unlabelled"]))(json.loads(ok("--json", "status").stdout)) == (15, 5)


def test_gap_markers_in_the_label_column_are_no_labels(db):
    """N/A, ? and NA in the label column (and a --na-values marker) are gaps, as in the features:
    once read as classes 'N/A' and '?', with --labels-are-known recorded as answers; now refused
    like an empty label, naming the marker, or the pool still to label, with a note. A fixed class
    that a marker spells stays a class."""
    rows = [[f"k{i}", str(i), ("N/A", "?", "NA", "missing")[i % 4] if i % 3 == 1 else "ab"[i % 2]] for i in range(24)]
    write_csv(Path("l.csv"), ["key", "x", "label"], rows)
    before = db_dump(db)
    assert_mistake(run("pool", "add", "l.csv", "--na-values", "missing"), "row 1 has no label but the gap marker '?' (line 3) (8 rows in all)",
                   "--labels-are-known", "if '?' is a class, name it in `activebayes init --classes`")  # fmt: skip
    write_csv(Path("na.csv"), ["key", "x", "label"], [[f"n{i}", str(i), "NA" if i == 1 else "ab"[i % 2]] for i in range(6)])
    assert_mistake(run("pool", "add", "na.csv"), "gap marker 'NA'", "if 'NA' is a class (NA for North America), name it")  # the example only where it fits
    assert db_dump(db) == before
    added = ok("--json", "pool", "add", "l.csv", "--labels-are-known", "--na-values", "missing")
    assert json.loads(added.stdout)["classes"] == ["a", "b"]
    said = " ".join(added.stderr.split())
    assert "the labels '?' (2 rows), 'N/A' (2 rows), 'missing' (2 rows), 'NA' (2 rows) mark gaps, as in the features: read as no label" in said
    assert (lambda s: (s["labelled"], s["unlabelled"]))(json.loads(ok("--json", "status").stdout)) == (16, 8)
    ok("init", "--name", "fixed", "--classes", "a,b,NA")
    ok("--project", "fixed", "pool", "add", "l.csv", "--labels-are-known", "--na-values", "missing")
    status = json.loads(ok("--project", "fixed", "--json", "status").stdout)
    assert (status["labelled"], status["unlabelled"]) == (18, 6)  # 'NA' is the fixed class; '?', 'N/A', 'missing' are gaps
