"""The files a labeller fills in for an image folder keyed by its files' paths (`pool add FOLDER
--truth`, or a folder converted before `img-NNNN` keys): `round`'s round file and queries table and
`evaluate --budget`'s file name each item by an opaque id in a `query` column, never by its key
(`dark/dark0.png` spells the class), and point at copies of the images named after that id;
`label --from` maps the ids back, refuses an edited one (one line, exit 2, nothing written), and
still reads files that carry the keys. `round --json` keeps the keys. On SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

from activebayes.data.label_studio import task_id
from activebayes.store import PoolStore
from cli_checks import assert_mistake, db_dump, ok, run, same_picture
from test_label_studio_keys import CLASSES, path_keyed_pool, recorded

TINY = ("--epochs", "1", "--samples", "2", "--device", "cpu", "--first", "random")


def rows_of(path: str) -> list[list[str]]:
    with Path(path).open(newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def write_rows(path: str, rows: list[list[str]]) -> str:
    with Path(path).open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    return path


def round_keys(db: str, number: int = 1) -> list[str]:
    """Round `number`'s query keys in rank order, as the store holds them."""
    with PoolStore(db) as store:
        return [q.key for q in sorted(store.queries("shapes", number), key=lambda q: q.rank)]


def digest(root: Path, key: str) -> str:
    return hashlib.sha256((root / "images" / key).read_bytes()).hexdigest()


def test_round_file_and_table_name_neither_the_paths_nor_the_classes(cli_db, tmp_path):
    truth = path_keyed_pool(cli_db, tmp_path)
    shown = ok("round", "--k", "4", *TINY)
    keys = round_keys(cli_db)
    text = Path("shapes-round-1.csv").read_text(encoding="utf-8")
    printed = " ".join((shown.stdout + shown.stderr).split())
    for word in (*truth, *CLASSES, str(tmp_path / "images")):  # no key, no class folder, not the pool's folder
        assert word not in text and word not in printed, word
    header, *rows = rows_of("shapes-round-1.csv")
    assert header == ["query", "label", "score", "rank", "image"] and len(rows) == 4
    for rank, (row, key) in enumerate(zip(rows, keys)):
        query = task_id(1, rank, digest(tmp_path, key))
        assert row[0] == query and row[3] == str(rank + 1) and row[1] == ""
        assert row[4] == f"shapes-round-1-images/{rank + 1:03d}-{query}.png"
        assert same_picture(Path(row[4]), tmp_path / "images" / key)  # a copy of that query's own picture
        assert query in printed  # the queries table names it as the file does
    assert "query" in printed.split("┃")[2]  # the table's second column heads the ids


def test_ids_map_back_and_files_with_keys_still_import(cli_db, tmp_path):
    truth = path_keyed_pool(cli_db, tmp_path)
    data = json.loads(ok("--json", "round", "--k", "4", *TINY).stdout)
    keys = [q["key"] for q in data["queries"]]  # machine output: the keys, as before
    assert keys == round_keys(cli_db) and set(keys) <= set(truth) and data["images"] == "shapes-round-1-images"
    header, *rows = rows_of("shapes-round-1.csv")
    rows[0][1], rows[1][1] = truth[keys[0]], truth[keys[1]]
    summary = json.loads(ok("--json", "label", "--from", write_rows("shapes-round-1.csv", [header, *rows])).stdout)
    assert summary["round_answers"] == 2 and summary["skipped"] == 2 and summary["remaining"] == 2
    assert recorded(cli_db) == {keys[0]: truth[keys[0]], keys[1]: truth[keys[1]]}
    # a round file written before the ids, naming the keys and the original files: read as it always was
    old = [["key", "label", "score", "rank", "image"],
           *[[k, truth[k], "0", str(r + 1), str(tmp_path / "images" / k)] for r, k in enumerate(keys) if r >= 2]]  # fmt: skip
    assert json.loads(ok("--json", "label", "--from", write_rows("old.csv", old)).stdout)["round_answers"] == 2
    assert recorded(cli_db) == {k: truth[k] for k in keys}


def test_an_edited_id_is_refused_and_nothing_is_written(cli_db, tmp_path):
    truth = path_keyed_pool(cli_db, tmp_path)
    ok("round", "--k", "4", *TINY)
    keys = round_keys(cli_db)
    header, *rows = rows_of("shapes-round-1.csv")
    for row, key in zip(rows, keys):
        row[1] = truth[key]
    before = db_dump(cli_db)

    def edited(line: int, query: str) -> str:
        changed = [list(r) for r in rows]
        changed[line - 2][0] = query
        return write_rows(f"edited-{line}.csv", [header, *changed])

    swapped = rows[0][0].replace("-q1-", "-q2-")  # another query of the round, with the first one's check
    assert_mistake(run("label", "--from", edited(2, swapped)), "line 2", repr(swapped), "names no query of this project")
    assert_mistake(run("label", "--from", edited(3, "r9-q1-0123456789")), "line 3", "'r9-q1-0123456789'", "names no query")
    assert_mistake(run("label", "--from", edited(4, "e-q1-0123456789")), "line 4", "'e-q1-0123456789'")  # no evaluation set
    assert_mistake(run("label", "--from", edited(5, rows[3][0][:-1])), "line 5", "is not an item of this project")
    assert db_dump(cli_db) == before
    # the file as written, filled in: every answer recorded for round 1
    summary = json.loads(ok("--json", "label", "--from", write_rows("filled.csv", [header, *rows])).stdout)
    assert summary["round_answers"] == 4 and recorded(cli_db) == {k: truth[k] for k in keys}


def test_the_evaluation_file_names_its_draws_by_id(cli_db, tmp_path):
    truth = path_keyed_pool(cli_db, tmp_path)
    for _ in range(2):  # round 2 fits on round 1's answers: a model to evaluate
        ok("round", "--k", "2", "--oracle", "truth", *TINY)
    shown = ok("--json", "evaluate", "--budget", "2", "--seed", "0", "--device", "cpu")
    keys = json.loads(shown.stdout)["keys"]  # machine output: the keys
    assert set(keys) <= set(truth)
    text = Path("shapes-eval.csv").read_text(encoding="utf-8")
    for word in (*truth, *CLASSES, str(tmp_path / "images")):
        assert word not in text and word not in shown.stderr, word
    header, *rows = rows_of("shapes-eval.csv")
    assert header == ["query", "label", "score", "rank", "image"]
    for rank, (row, key) in enumerate(zip(rows, keys)):
        query = task_id(None, rank, digest(tmp_path, key))
        assert row[0] == query == f"e-q{rank + 1}-{digest(tmp_path, key)[:10]}"
        assert row[4] == f"shapes-eval-images/{rank + 1:03d}-{query}.png"
        assert Path(row[4]).read_bytes() == (tmp_path / "images" / key).read_bytes()
    before = db_dump(cli_db)
    beyond = rows[0][0].replace("e-q1-", "e-q3-")  # the set holds two draws
    assert_mistake(run("label", "--from", write_rows("beyond.csv", [header, [beyond, truth[keys[0]]] + rows[0][2:]])),
                   "line 2", repr(beyond), "evaluation set")  # fmt: skip
    assert db_dump(cli_db) == before
    for row, key in zip(rows, keys):
        row[1] = truth[key]
    summary = json.loads(ok("--json", "label", "--from", write_rows("shapes-eval.csv", [header, *rows])).stdout)
    assert summary["evaluation"] == 2 and summary["recorded"] == 2
    with PoolStore(cli_db) as store:
        _, labelled, values = store.labels("shapes", split="eval")
    assert dict(zip(labelled, values)) == {k: truth[k] for k in keys}
