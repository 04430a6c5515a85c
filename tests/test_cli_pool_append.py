"""`activebayes pool add MORE.csv --append`: a new batch of rows of the same table joins the
project's pool; every existing item keeps its key, row, labels, rounds and features (the
encoding is frozen), and a later round, label and export take old and new rows alike. Each
refusal is one line, exit 2, with the database and the cache folder unchanged; a failure inside
the recording transaction leaves the old project whole. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cli_checks import assert_mistake, db_dump, ok, run

ROUND = ("round", "--oracle", "truth", "--k", "3", "--epochs", "1", "--samples", "2", "--device", "cpu", "--seed", "0")


def write_rows(path: Path, start: int, stop: int, *, key: bool = True, sep: str = ",", labels: dict[int, str] | None = None,
               colours: tuple[str, ...] = ("red", "blue")) -> Path:  # fmt: skip
    """Rows start..stop-1 of one table: id (k<i>), x, colour, label (a for red, b for blue,
    unless `labels` says otherwise for a row)."""
    head = (["id"] if key else []) + ["x", "colour", "label"]
    lines = [sep.join(head)]
    for i in range(start, stop):
        colour = colours[i % len(colours)]
        label = (labels or {}).get(i, "a" if colour == "red" else "b")
        lines.append(sep.join(([f"k{i}"] if key else []) + [f"{(i * 37 % 11) / 10:.2f}", colour, label]))
    path.write_text("\n".join(lines) + "\n")
    return path


def cache_files() -> list[str]:
    folder = Path("activebayes-cache")
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def status() -> dict:
    return json.loads(ok("--json", "status").stdout)


def project_data():
    """Project t's data, as every load makes it."""
    import os

    from activebayes.data.project import load_project_data
    from activebayes.store import PoolStore

    with PoolStore(os.environ["ACTIVEBAYES_DB"]) as store:
        return load_project_data(store, "t")


def features_of(key_rows: list[str]) -> np.ndarray:
    """The project's features of the items keyed `key_rows`."""
    data = project_data()
    at = {k: i for i, k in enumerate(data.keys)}
    return np.asarray(data.x[[at[k] for k in key_rows]])


def test_appended_rows_join_the_pool_and_the_old_ones_keep_everything(cli_db):
    write_rows(Path("t.csv"), 0, 30)
    ok("init", "--name", "t")
    ok("pool", "add", "t.csv")
    ok(*ROUND)
    Path("answers.csv").write_text("key,label\nk1,b\n")
    ok("label", "--from", "answers.csv")
    before = db_dump(cli_db)
    old_features = features_of([f"k{i}" for i in range(30)])
    write_rows(Path("more.csv"), 30, 45)
    said = " ".join(ok("pool", "add", "more.csv", "--append").stdout.split())
    assert "Appended 15 pool items from more.csv to project t; now 45 pool items" in said and "Next: activebayes round" in said
    after = db_dump(cli_db)
    changed = set(before) - set(after)  # items, labels, rounds, queries, scores: every row as it was; the project's row alone changed
    assert changed and all(line.startswith(('INSERT INTO "projects"', "projects: ")) for line in changed), changed
    np.testing.assert_array_equal(features_of([f"k{i}" for i in range(30)]), old_features)  # frozen encoding
    np.testing.assert_array_equal(features_of(["k30", "k33"]), features_of(["k8", "k11"]))  # same cells, same features
    shown = status()
    assert shown["pool_items"] == 45 and shown["labelled"] == 4 and len(shown["rounds"]) == 1
    assert [(a["rows"], a["pool_items"], Path(a["file"]).name) for a in shown["appended"]] == [(15, 15, "more.csv")]
    assert "t.csv + 1 appended (more.csv; 15 rows)" in " ".join(ok("status").stdout.split())
    data = project_data()
    assert [list(data.raw[i]) for i in (29, 30, 44)] == [["0.60", "blue"], ["1.00", "red"], ["0.00", "red"]]  # rows shown as written
    ok(*ROUND)  # the round reads the combined table: no "data file changed"
    Path("answers2.csv").write_text("key,label\nk40,a\n")
    ok("label", "--from", "answers2.csv")
    ok("export", "out.csv")
    exported = Path("out.csv").read_text()
    assert "k1,1,pool,b" in exported and "k40,40,pool,a" in exported
    assert status()["labelled"] == 8


def test_twice_in_a_row_and_the_previous_files_go(cli_db):
    write_rows(Path("t.csv"), 0, 20)
    ok("init", "--name", "t")
    ok("pool", "add", "t.csv")
    ok(*ROUND)
    write_rows(Path("b.csv"), 20, 30)
    ok("pool", "add", "b.csv", "--append")
    first = [n for n in cache_files() if "-appended-" in n]
    write_rows(Path("c.csv"), 30, 35)
    ok("pool", "add", "c.csv", "--append")
    now = cache_files()
    assert len(first) == 1 and first[0] not in now and len([n for n in now if "-appended-" in n]) == 1
    assert len([n for n in now if n.endswith(".features.npy")]) == 1  # the old caches were removed
    shown = status()
    assert shown["pool_items"] == 35 and [a["rows"] for a in shown["appended"]] == [10, 5]
    ok(*ROUND)
    assert len(status()["rounds"]) == 2
    assert "Deleted project t" in ok("delete", "t", "--yes").stdout
    assert cache_files() == []  # the combined file goes with the project; the user's files stay
    assert Path("t.csv").exists() and Path("b.csv").exists()


@pytest.mark.parametrize("case", ["keys", "columns", "order", "nameless", "category", "separator", "label", "option", "no pool"])
def test_a_batch_that_is_not_the_same_table_is_refused_and_nothing_written(cli_db, case):
    write_rows(Path("t.csv"), 0, 20)
    if case == "nameless":  # a sheet saved with two empty columns at the right: ',,' ends every line
        Path("t.csv").write_text("".join(line + ",,\n" for line in Path("t.csv").read_text().splitlines()))
    ok("init", "--name", "t")
    if case != "no pool":
        ok("pool", "add", "t.csv")
    args = ["pool", "add", "more.csv", "--append"]
    if case == "keys":
        write_rows(Path("more.csv"), 15, 25)
        words = ["'more.csv' line 2", "the key 'k15' of column 'id' is already a row of project 't' (5 of its 10 keys are)"]
    elif case == "columns":
        Path("more.csv").write_text("id,x,label\nk50,1,a\n")
        words = ["the columns of more.csv differ", "it lacks 'colour'"]
    elif case == "order":
        Path("more.csv").write_text("id,colour,x,label\nk50,red,1,a\n")
        words = ["its columns are in another order", "id, x, colour, label"]
    elif case == "nameless":
        write_rows(Path("more.csv"), 50, 53)
        words = ["it lacks 2 of the project's empty columns without a name, separators at the ends of its lines", "id, x, colour, label, '', ''"]
    elif case == "category":
        write_rows(Path("more.csv"), 50, 53, colours=("green",))
        words = ["column 'colour' has the category 'green'", "known: blue, red"]
    elif case == "separator":
        write_rows(Path("more.csv"), 50, 53, sep=";")
        words = ["more.csv is separated by", "save it with"]
    elif case == "label":
        write_rows(Path("more.csv"), 50, 53, labels={51: "c"})
        words = ["'c'", "more.csv"]
    elif case == "option":
        write_rows(Path("more.csv"), 50, 53)
        args += ["--ignore", "x"]
        words = ["--append: --ignore cannot be given"]
    else:
        write_rows(Path("more.csv"), 50, 53)
        words = ["--append: project 't' has no pool yet", "`activebayes pool add more.csv` (without --append)"]
    before, files = db_dump(cli_db), cache_files()
    assert_mistake(run(*args), *words)
    assert db_dump(cli_db) == before and cache_files() == files


class Killed(Exception):
    """The process dying inside the recording transaction."""


def test_a_failure_inside_the_transaction_leaves_the_old_project(cli_db, monkeypatch):
    from activebayes.data import feature_cache
    from activebayes.store import item_access

    write_rows(Path("t.csv"), 0, 20)
    ok("init", "--name", "t")
    ok("pool", "add", "t.csv")
    ok(*ROUND)
    write_rows(Path("more.csv"), 20, 30)
    before = db_dump(cli_db)
    insert = item_access.insert_items

    def insert_then_die(*args, **kwargs):
        insert(*args, **kwargs)
        raise Killed  # killed after the items were sent, before the commit

    with monkeypatch.context() as patch, pytest.raises(Killed):
        patch.setattr(item_access, "insert_items", insert_then_die)
        patch.setattr(feature_cache, "remove_feature_cache", lambda record: None)  # as a kill: the new files stay behind
        run("pool", "add", "more.csv", "--append")
    assert db_dump(cli_db) == before
    assert len([n for n in cache_files() if n.endswith(".features.npy")]) == 2  # an orphan, referenced by nothing
    ok(*ROUND)  # the old project: its data file and cache unchanged
    assert status()["pool_items"] == 20
    ok("pool", "add", "more.csv", "--append")  # the orphan is no obstacle
    assert status()["pool_items"] == 30
    ok(*ROUND)


def test_line_endings_a_missing_last_newline_and_a_byte_order_mark(cli_db):
    Path("t.csv").write_bytes(b"id,x,colour,label\r\n" + b"\r\n".join(b"k%d,%d,%s,%s" % (i, i, *((b"red", b"a") if i % 2 else (b"blue", b"b")))
                                                                   for i in range(20)))  # fmt: skip
    ok("init", "--name", "t")
    ok("pool", "add", "t.csv")
    Path("more.csv").write_bytes(b"\xef\xbb\xbfid,x,colour,label\n\nk20,5,red,a\nk21,6,blue,b\n")
    ok("pool", "add", "more.csv", "--append")
    data = project_data()
    assert data.keys[-3:] == ["k19", "k20", "k21"] and [list(data.raw[i]) for i in (19, 20, 21)] == [["19", "red"], ["5", "red"], ["6", "blue"]]
    np.testing.assert_array_equal(data.x[20], data.x[5])
    ok(*ROUND)


def test_known_labels_row_numbers_and_a_test_share(cli_db):
    write_rows(Path("t.csv"), 0, 20, key=False, labels={i: "" for i in range(20) if i % 4 < 2})
    ok("init", "--name", "t")
    ok("pool", "add", "t.csv", "--labels-are-known")
    assert status()["labelled"] == 10
    write_rows(Path("more.csv"), 0, 10, key=False, labels={i: "" for i in range(5)})
    summary = json.loads(ok("--json", "pool", "add", "more.csv", "--append", "--test-fraction", "0.2", "--seed", "1").stdout)
    assert (summary["pool_items"], summary["test_items"], summary["labels"]) == (9, 1, 5)  # 1 of the 5 labelled rows is a test item
    shown = status()
    assert (shown["pool_items"], shown["test_items"], shown["labelled"]) == (29, 1, 14)
    ok("export", "out.csv")
    keys = {line.split(",")[0] for line in Path("out.csv").read_text().splitlines()[1:]}
    assert {"25", "26", "27", "28", "29"} <= keys  # rows keyed by their number in the combined table, after the first 20
    ok("round", "--k", "2", "--epochs", "1", "--samples", "2", "--device", "cpu")


def test_under_missing_drop_new_rows_with_a_gap_are_left_out(cli_db):
    write_rows(Path("t.csv"), 0, 20)
    ok("init", "--name", "t")
    ok("pool", "add", "t.csv", "--missing", "drop")
    Path("more.csv").write_text("id,x,colour,label\nk20,0.5,red,a\nk21,,blue,b\nk22,NA,red,a\nk23,0.1,blue,b\n")
    said = " ".join(ok("pool", "add", "more.csv", "--append").stdout.split())
    assert "Appended 2 pool items" in said and "2 rows with a missing value left out" in said
    assert status()["pool_items"] == 22
    ok(*ROUND)


def test_a_held_back_project_refuses_a_row_without_a_label(cli_db):
    write_rows(Path("t.csv"), 0, 20)
    ok("init", "--name", "t")
    ok("pool", "add", "t.csv")
    write_rows(Path("more.csv"), 20, 23, labels={21: ""})
    before = db_dump(cli_db)
    assert_mistake(run("pool", "add", "more.csv", "--append"), "row 1 has an empty label (line 3)", "holds its labels back")
    assert_mistake(run("pool", "add", "more.csv", "--append", "--labels-are-known"), "--labels-are-known: project 't' holds its labels back")
    assert db_dump(cli_db) == before


def test_a_second_pool_without_append_names_it(cli_db):
    write_rows(Path("t.csv"), 0, 20)
    ok("init", "--name", "t")
    ok("pool", "add", "t.csv")
    write_rows(Path("more.csv"), 20, 23)
    assert_mistake(run("pool", "add", "more.csv"), "already has a pool from", "`activebayes pool add FILE --append`")


def test_only_a_csv_table_takes_rows(cli_db):
    np.save("x.npy", np.arange(40, dtype=np.float32).reshape(20, 2))
    ok("init", "--name", "t", "--classes", "a,b")
    ok("pool", "add", "x.npy")
    write_rows(Path("more.csv"), 0, 3)
    assert_mistake(run("pool", "add", "more.csv", "--append"), "holds a .npy file; only rows of a csv table can be appended")
    Path("imgs").mkdir()
    assert_mistake(run("pool", "add", "imgs", "--append"), "holds a .npy file; a folder of images cannot be appended to it", "new project")


def test_refused_while_a_round_runs(cli_db):
    """A round holds the project's round lock while it reads the data file and records its
    queries; an append then waits its turn: one line, exit 2, nothing written."""
    from activebayes.store import PoolStore

    write_rows(Path("t.csv"), 0, 20)
    ok("init", "--name", "t")
    ok("pool", "add", "t.csv")
    write_rows(Path("more.csv"), 20, 23)
    before, files = db_dump(cli_db), cache_files()
    with PoolStore(cli_db) as store, store.round_lock("t"):
        assert_mistake(run("pool", "add", "more.csv", "--append"), "of project 't' is running", "run this command again")
    assert db_dump(cli_db) == before and cache_files() == files
    ok("pool", "add", "more.csv", "--append")
    assert status()["pool_items"] == 23


def test_plain_ascii_rows_join_a_windows_1252_table(cli_db):
    """A project read as Windows-1252 (Excel's 'CSV' on Windows) takes a batch saved as UTF-8 when
    its records are plain ASCII, as they read the same in both; a batch with 'é' in UTF-8 bytes
    would not, and is refused in one line."""
    head = "id,x,colour,label\n"
    colours = ("gr\u00e9", "vert clair")
    Path("t.csv").write_bytes((head + "".join(f"k{i},{i / 10:.1f},{colours[i % 2]},{'ab'[i % 2]}\n" for i in range(20))).encode("cp1252"))
    ok("init", "--name", "t")
    ok("pool", "add", "t.csv")
    Path("ascii.csv").write_text(head + "k20,2.0,vert clair,b\nk21,2.1,vert clair,b\n", encoding="utf-8")
    ok("pool", "add", "ascii.csv", "--append")
    assert status()["pool_items"] == 22
    Path("accent.csv").write_text(head + "k22,2.2,gr\u00e9,a\n", encoding="utf-8")
    assert_mistake(run("pool", "add", "accent.csv", "--append"), "is written as utf-8, the project's table as cp1252")
    assert features_of(["k1", "k20"]).tolist()[1][1:] == features_of(["k1"]).tolist()[0][1:]  # 'vert clair' encoded alike
