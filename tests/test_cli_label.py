"""`activebayes label`: answers from a file (what a spreadsheet writes is read as meant; test
items and changed labels refused unless asked for, the whole file before any write) and typed at
the prompt (each answer committed as given, `u` takes the last one back). Every mistake leaves
the database exactly as it was, on SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from activebayes.errors import StoreError
from activebayes.store import PoolStore
from activebayes_cli.main import app
from cli_checks import assert_mistake, db_dump
from test_cli import write_pool_csv


def run(*args: str, input: str | None = None):
    return CliRunner().invoke(app, list(args), input=input, catch_exceptions=False)


def open_round(db: str, project: str, keys: list[str], predictions: list[dict | None] | None = None) -> int:
    """A new round of `project` waiting in "queried" for answers to `keys` (with the round's
    `predictions` for them, or none); its number."""
    with PoolStore(db) as store:
        states = store.label_states(project, keys)
        rnd = store.start_round(project, posterior="mc-dropout", acquisition="random", seed=0)
        store.advance_round(project, rnd.number, "fitted")
        store.record_queries(project, rnd.number, [states[k]["item_id"] for k in keys], [0.0] * len(keys), timings={},
                             predictions=predictions)  # fmt: skip
        store.advance_round(project, rnd.number, "queried")
        return rnd.number


@dataclass
class Blobs:
    db: str
    pool: list[str]  # pool keys, not queried
    test: dict[str, str]  # test key -> its label
    queries: list[str]  # round 1's open queries

    def label(self, *args: str, input: str | None = None):
        return run("--db", self.db, "label", "--who", "ann", *args, input=input)

    def label_json(self, *args: str) -> dict:
        """The --json summary of a successful `label ARGS`."""
        result = run("--db", self.db, "--json", "label", "--who", "ann", *args)
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    def labels(self, split: str = "pool") -> dict[str, str]:
        with PoolStore(self.db) as store:
            _, keys, values = store.labels("blobs", split=split)
            return dict(zip(keys, values))

    def rounds_of(self) -> dict[str, int | None]:
        """key -> the round number its latest observation is recorded for."""
        with PoolStore(self.db) as store:
            numbers = {r.id: r.number for r in store.rounds("blobs")}
            return {o["key"]: numbers.get(o["round_id"]) for o in store.observations("blobs")}


@pytest.fixture
def blobs(tmp_path, monkeypatch, db_url) -> Blobs:
    """Project 'blobs' (a, b, c): 24 pool items, 6 labelled test items, round 1 asking 5."""
    monkeypatch.chdir(tmp_path)
    for name in ("ACTIVEBAYES_DB", "ACTIVEBAYES_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    write_pool_csv(Path("pool.csv"), n=30)
    assert run("--db", db_url, "init", "--name", "blobs", "--classes", "a,b,c").exit_code == 0
    added = run("--db", db_url, "pool", "add", "pool.csv", "--key-column", "id", "--test-fraction", "0.2")
    assert added.exit_code == 0, added.output
    with PoolStore(db_url) as store:
        states = store.label_states("blobs", sorted(store.item_keys("blobs")))
    pool = [k for k, s in states.items() if s["split"] == "pool"]
    test = {k: s["label"] for k, s in states.items() if s["split"] == "test"}
    open_round(db_url, "blobs", pool[:5])
    return Blobs(db_url, pool[5:], test, pool[:5])


def other(label: str) -> str:
    return {"a": "b", "b": "c", "c": "a"}[label]


def write(name: str, text: str, *, encoding: str = "utf-8") -> str:
    Path(name).write_bytes(text.encode(encoding))
    return name


# ---- answers to the round, and to other pool items ------------------------------------------------
def test_round_answers_and_other_pool_items_are_told_apart(blobs):
    q, p = blobs.queries, blobs.pool
    write("answers.csv", f"key,label\n{q[0]},a\n{q[1]},b\n{p[0]},c\n{q[2]},c\n{p[1]},a\n")
    result = blobs.label("--from", "answers.csv")
    assert result.exit_code == 0, result.output
    assert "Recorded 5 answers: 3 to round 1's queries, 2 other pool items." in result.stdout
    assert "2 queries of round 1 still open" in result.stdout
    assert blobs.labels() == {q[0]: "a", q[1]: "b", q[2]: "c", p[0]: "c", p[1]: "a"}
    # only the answers to its queries belong to round 1; the others were not asked by any round
    assert blobs.rounds_of() == {q[0]: 1, q[1]: 1, q[2]: 1, p[0]: None, p[1]: None, **{k: None for k in blobs.test}}

    # the same file again is harmless: nothing recorded, nothing counted as a duplicate
    before = db_dump(blobs.db)
    assert blobs.label_json("--from", "answers.csv") == {
        "project": "blobs", "round": 1, "recorded": 0, "round_answers": 0, "other_pool": 0, "test": 0, "evaluation": 0,
        "relabelled": 0, "unchanged": 5, "skipped": 0, "remaining": 2,
    }  # fmt: skip
    assert db_dump(blobs.db) == before
    text = blobs.label("--from", "answers.csv").stdout
    assert text.startswith("5 rows repeated an item's current label: nothing to record for the whole file.")


def test_json_summary_and_unanswered_rows(blobs):
    q, p = blobs.queries, blobs.pool
    write("round-1.csv", f"key,label\n{q[0]},b\n{q[1]},\n{q[2]},a\n{p[3]},c\n")
    assert blobs.label_json("--from", "round-1.csv") == {
        "project": "blobs", "round": 1, "recorded": 3, "round_answers": 2, "other_pool": 1, "test": 0, "evaluation": 0,
        "relabelled": 0, "unchanged": 0, "skipped": 1, "remaining": 3,
    }  # fmt: skip


# ---- test items and changed labels: refused unless asked for, the whole file ----------------------
def test_a_test_split_item_is_refused_and_nothing_is_written(blobs):
    key, truth = next(iter(blobs.test.items()))
    q = blobs.queries
    write("answers.csv", f"key,label\n{q[0]},a\n{q[1]},b\n{key},{other(truth)}\n")
    before = db_dump(blobs.db)
    assert_mistake(blobs.label("--from", "answers.csv"), "test-split item", key, "(line 4)", "--test --relabel")
    assert_mistake(blobs.label("--from", "answers.csv", "--test"), "replace the current labels", key, "--relabel")
    assert db_dump(blobs.db) == before  # not even the two good rows before it

    # the test item's own label again is harmless (e.g. a re-imported export)
    write("same.csv", f"key,label\n{key},{truth}\n")
    assert blobs.label("--from", "same.csv").exit_code == 0
    assert db_dump(blobs.db) == before

    result = blobs.label("--from", "answers.csv", "--test", "--relabel")
    assert result.exit_code == 0, result.output
    assert "Recorded 3 answers: 2 to round 1's queries, 1 test item.\n1 of them replaced an earlier label" in result.stdout
    assert blobs.labels("test")[key] == other(truth)
    assert blobs.rounds_of()[key] is None  # a test label is no answer to round 1


def test_a_changed_label_is_refused_unless_relabel(blobs):
    q = blobs.queries
    write("first.csv", f"key,label\n{q[0]},a\n{q[1]},b\n")
    assert blobs.label("--from", "first.csv").exit_code == 0
    write("second.csv", f"id;answer\n{q[2]};c\n{q[1]};b\n{q[0]};c\n")
    before = db_dump(blobs.db)
    assert_mistake(blobs.label("--from", "second.csv"), "replace the current labels of 1 item", f"{q[0]} 'a' -> 'c' (line 4)", "--relabel")
    assert db_dump(blobs.db) == before

    result = blobs.label("--from", "second.csv", "--relabel")
    assert result.exit_code == 0, result.output
    assert "Recorded 2 answers: 2 to round 1's queries.\n1 of them replaced an earlier label" in result.stdout
    assert "1 row repeated an item's current label: nothing to record for them." in result.stdout
    assert blobs.labels() == {q[0]: "c", q[1]: "b", q[2]: "c"}


def test_an_answer_typed_at_the_prompt_is_not_replaced_by_a_file(blobs):
    q = blobs.queries
    typed = blobs.label(input="b\nq\n")
    assert typed.exit_code == 0, typed.output
    write("answers.csv", f"{q[0]},a\n{q[1]},a\n")
    before = db_dump(blobs.db)
    assert_mistake(blobs.label("--from", "answers.csv"), f"{q[0]} 'b' -> 'a' (line 1)", "--relabel")
    assert db_dump(blobs.db) == before


def test_a_refusal_names_a_few_keys_then_how_many_more(blobs):
    rows = [f"{k},{other(v)}" for k, v in blobs.test.items()]
    write("test.csv", "key,label\n" + "\n".join(rows) + "\n")
    before = db_dump(blobs.db)
    result = blobs.label("--from", "test.csv")
    assert_mistake(result, "6 test-split items", "and 1 more")
    named = [k for k in blobs.test if k in result.stderr]
    assert named == list(blobs.test)[:5]
    assert db_dump(blobs.db) == before


# ---- what a spreadsheet writes ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "form",
    ["bom", "semicolon", "tab", "utf16-tab", "id-answer", "extra-columns", "crlf", "no-header", "round-file", "export"],
)
def test_spreadsheet_forms_are_read_as_meant(blobs, form):
    q = blobs.queries
    rows = [(q[0], "a"), (q[1], "c")]
    if form == "bom":  # Excel's "CSV UTF-8"
        data, encoding = "key,label\n" + "".join(f"{k},{v}\n" for k, v in rows), "utf-8-sig"
    elif form == "semicolon":  # Excel where the decimal mark is a comma
        data, encoding = "Key;Label\n" + "".join(f"{k};{v}\n" for k, v in rows), "utf-8"
    elif form == "tab":
        data, encoding = "label\tkey\n" + "".join(f"{v}\t{k}\n" for k, v in rows), "utf-8"
    elif form == "utf16-tab":  # Excel's "Unicode Text"
        data, encoding = "key\tlabel\r\n" + "".join(f"{k}\t{v}\r\n" for k, v in rows), "utf-16"
    elif form == "id-answer":
        data, encoding = "id,answer\n" + "".join(f"{k},{v}\n" for k, v in rows), "utf-8"
    elif form == "extra-columns":
        data, encoding = "note,key,score,label\n" + "".join(f'"hm, maybe",{k},0.5,{v}\n' for k, v in rows), "utf-8"
    elif form == "crlf":
        data, encoding = "key,label\r\n" + "".join(f"{k},{v}\r\n" for k, v in rows), "utf-8"
    elif form == "no-header":
        data, encoding = "".join(f"{k},{v}\n" for k, v in rows), "utf-8"
    elif form == "round-file":  # what `activebayes round` writes: key, label, score, rank, features
        data = "key,label,score,rank,f0,f1,f2,f3\n" + "".join(f"{k},{v},0.1,{i + 1},1,2,3,4\n" for i, (k, v) in enumerate(rows))
        encoding = "utf-8"
    else:  # an `activebayes export` file: columns key,row,split,label,who,source,round,time
        data = "key,row,split,label,who,source,round,time\n" + "".join(f"{k},3,pool,{v},ann,file,1,\n" for k, v in rows)
        encoding = "utf-8"
    Path("answers.csv").write_bytes(data.encode(encoding))
    result = blobs.label("--from", "answers.csv")
    assert result.exit_code == 0, result.output
    assert blobs.labels() == dict(rows)


def test_integer_keys_and_classes_written_as_decimals(tmp_path, monkeypatch, db_url):
    """A spreadsheet turns key 26 into 26.0 and class 1 into 1.0: both are taken as meant."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    np.save("x.npy", rng.normal(size=(40, 3)).astype(np.float32))
    assert run("--db", db_url, "init", "--name", "num", "--classes", "3").exit_code == 0
    assert run("--db", db_url, "pool", "add", "x.npy").exit_code == 0  # keys are the row numbers
    open_round(db_url, "num", ["26", "7"])
    write("answers.csv", "key,label\n26.0,1.0\n7,2.00\n3.0,0\n")
    result = run("--db", db_url, "label", "--from", "answers.csv")
    assert result.exit_code == 0, result.output
    assert "Recorded 3 answers: 2 to round 1's queries, 1 other pool item." in result.stdout
    with PoolStore(db_url) as store:
        _, keys, values = store.labels("num")
    assert dict(zip(keys, values)) == {"26": "1", "7": "2", "3": "0"}
    before = db_dump(db_url)
    write("bad.csv", "key,label\n26.5,1\n")
    assert_mistake(run("--db", db_url, "label", "--from", "bad.csv"), "key '26.5' is not an item", "line 2")
    write("bad.csv", "key,label\n26,1.5\n")
    assert_mistake(run("--db", db_url, "label", "--from", "bad.csv"), "label '1.5' is not one of the classes", "line 2")
    assert db_dump(db_url) == before


# ---- mistakes in the file: one line, the file's own line numbers, nothing written ----------------
@pytest.mark.parametrize(
    "content, words",
    [
        ("id,lable\n{q0},a\n", ["line 1", "header 'id,lable' has no label column", "label, answer or class"]),
        ("foo,bar\n{q0},a\n", ["line 1", "header 'foo,bar' is not recognised", "key, id or item"]),
        ("note,label\n{q0},a\n", ["header 'note,label' has no key column"]),
        ("key,label\n{q0},a,extra\n", ["line 2", "expected 2 fields like the header"]),
        ("key,label\n{q0},a\n\n{q1},zebra\n", ["line 4", "label 'zebra' is not one of the classes a, b, c"]),
        ('key,label,note\n{q0},a,x\n{q1},b,"two\nlines"\n{q2},zebra,x\n', ["line 5", "zebra"]),  # a quoted line break
        ("\ufeffkey,label\n{q0},a\n{q1},zebra\n", ["line 3", "zebra"]),  # a BOM moves nothing
        ("{q0},zebra\n", ["line 1", "zebra"]),
        ("key,label\nnot-an-item,a\n", ["line 2", "key 'not-an-item' is not an item"]),
        ("key,label\n{q0},a\n{q1},b\n{q0},b\n", ["line 4", "has label 'b' but line 2 gave 'a'"]),
        ("key,label\n,a\n", ["line 2", "expected a key"]),
        ("key,label\n", ["holds no answers"]),
        ("key,label\n{q0},\n", ["holds no answers"]),
    ],
)
def test_file_mistakes_leave_the_database_unchanged(blobs, content, words):
    q = blobs.queries
    write("answers.csv", content.format(q0=q[0], q1=q[1], q2=q[2]))
    before = db_dump(blobs.db)
    assert_mistake(blobs.label("--from", "answers.csv"), *words)
    assert db_dump(blobs.db) == before


def test_other_label_mistakes_leave_the_database_unchanged(blobs):
    Path("latin1.csv").write_bytes(f"key,label\n{blobs.queries[0]},a\n".encode() + b"# caf\x81\n")  # no Western text
    write("ok.csv", f"key,label\n{blobs.queries[0]},a\n")
    before = db_dump(blobs.db)
    assert_mistake(blobs.label("--from", "latin1.csv"), "neither UTF-8 nor Windows-1252", "line 3", "CSV UTF-8")
    assert_mistake(blobs.label("--from", "missing.csv"), "no file at")
    assert_mistake(blobs.label("--test"), "--test", "--from FILE")
    assert_mistake(blobs.label("--relabel"), "--relabel", "--from FILE")
    assert_mistake(blobs.label("--round", "7", "--from", "ok.csv"), "no round 7")
    assert db_dump(blobs.db) == before


def test_answers_to_a_discarded_round_say_no_queries_wait(blobs):
    """`label --round 1 --from` after round 1 was discarded (`round --restart-round`): the answers
    are pool labels, and the summary does not call the discarded round's queries open."""
    from activebayes.store import RoundStatus

    with PoolStore(blobs.db) as store:
        store.advance_round("blobs", 1, RoundStatus.failed, failure_reason="discarded by `activebayes round --restart-round`")
    Path("late.csv").write_text(f"key,label\n{blobs.queries[0]},a\n")
    result = blobs.label("--round", "1", "--from", "late.csv")
    assert result.exit_code == 0, result.output
    assert "still open" not in result.stdout and "Next: activebayes" in result.stdout and " round" in result.stdout
    assert blobs.labels()[blobs.queries[0]] == "a"


# ---- the prompt without a terminal (stdin), on both backends ---------------------------------------
def test_prompt_commits_each_answer_and_u_takes_one_back(blobs):
    q = blobs.queries
    result = blobs.label(input="a\nc\nu\nb\ns\nq\n")
    assert result.exit_code == 0, result.output
    assert f"undone: {q[1]} was 'c'" in result.stdout
    assert "Recorded 2 answers for round 1, skipped 1." in result.stdout  # the two after `q` were not shown
    assert blobs.labels() == {q[0]: "a", q[1]: "b"}
    with PoolStore(blobs.db) as store:
        prompt = [o for o in store.observations("blobs") if o["source"] == "prompt"]
    assert [(o["key"], o["value"], o["who"]) for o in prompt] == [(q[0], "a", "ann"), (q[1], "b", "ann")]

    Path("out.csv").unlink(missing_ok=True)
    assert run("--db", blobs.db, "export", "out.csv").exit_code == 0
    exported = {r["key"]: r for r in csv.DictReader(Path("out.csv").open()) if r["split"] == "pool"}
    assert {k: (r["label"], r["round"]) for k, r in exported.items()} == {q[0]: ("a", "1"), q[1]: ("b", "1")}


def _predicted_round(blobs) -> list[str]:
    """Round 1 answered and closed, round 2 waiting over two pool items, the first with the
    prediction b (0.7), the second without one; those two keys."""
    p = blobs.pool
    write("answers.csv", "key,label\n" + "".join(f"{k},a\n" for k in blobs.queries))
    assert blobs.label("--from", "answers.csv").exit_code == 0
    with PoolStore(blobs.db) as store:  # round 1 answered and closed, as the next `round` would
        store.advance_round("blobs", 1, "answered")
        store.advance_round("blobs", 1, "done")
    open_round(blobs.db, "blobs", p[:2], predictions=[{"label": "b", "probability": 0.7}, None])
    return p[:2]


def test_prompt_shows_the_round_s_prediction_only_when_asked(blobs):
    p = _predicted_round(blobs)
    result = blobs.label("--show-model-guess", input="c\nq\n")
    assert result.exit_code == 0, result.output
    assert f"item 1/2: {p[0]}\nmodel: b (0.70)\n" in result.stdout and "model:" not in result.stdout.split(f"item 2/2: {p[1]}")[1]
    assert blobs.labels()[p[0]] == "c"  # what the person typed, not the model's guess


def test_prompt_hides_the_round_s_prediction_by_default(blobs):
    p = _predicted_round(blobs)
    result = blobs.label(input="c\nq\n")
    assert result.exit_code == 0, result.output
    assert f"item 1/2: {p[0]}\n" in result.stdout and "model:" not in result.stdout and "0.70" not in result.stdout
    assert blobs.labels()[p[0]] == "c"
    with PoolStore(blobs.db) as store:  # hidden, not lost: the round keeps its prediction
        assert store.queries("blobs", 2)[0].prediction == {"label": "b", "probability": 0.7}


def test_prompt_names_an_image_folder_s_items_as_the_page_does(tmp_path, monkeypatch, db_url):
    """Keys that are the images' paths (`--truth` of paths: dark/dark0.png spells the class) are
    not shown: the prompt says "query R", as the labelling page does; the answer goes to the key."""
    from serve_pages import image_folder_project

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ACTIVEBAYES_PROJECT", raising=False)
    image_folder_project(db_url, tmp_path, truth=True)  # round 1: 3 queries waiting
    with PoolStore(db_url) as store:
        keys = [q.key for q in store.queries("shapes", 1)]
    result = run("--db", db_url, "label", "--who", "ann", input="dark\nq\n")
    assert result.exit_code == 0, result.output
    assert "item 1/3: query 1\n" in result.stdout and ".png" not in result.stdout, result.stdout
    with PoolStore(db_url) as store:
        _, labelled, values = store.labels("shapes")
    assert dict(zip(labelled, values)) == {keys[0]: "dark"}


def test_show_model_guess_is_refused_with_a_file(blobs):
    write("answers.csv", "key,label\n" + "".join(f"{k},a\n" for k in blobs.queries))
    before = db_dump(blobs.db)
    assert_mistake(blobs.label("--from", "answers.csv", "--show-model-guess"), "--show-model-guess", "terminal prompt")
    assert db_dump(blobs.db) == before


def test_prompt_with_nothing_waiting(blobs):
    write("all.csv", "key,label\n" + "".join(f"{k},a\n" for k in blobs.queries))
    assert blobs.label("--from", "all.csv").exit_code == 0
    before = db_dump(blobs.db)
    result = blobs.label(input="")
    assert result.exit_code == 0 and "has all its answers" in result.output
    assert db_dump(blobs.db) == before


# ---- the store underneath: checked appends and taking an answer back ------------------------------
def test_record_labels_refuses_when_a_label_changed_meanwhile(blobs):
    q = blobs.queries
    with PoolStore(blobs.db) as store:
        store.record_observations("blobs", [(q[0], "a")], who="bob", source="cli")  # after ann looked
        before = db_dump(blobs.db)
        ids, conflicts = store.record_labels(
            "blobs", [(q[1], "b", 1), (q[0], "c", 1)], who="ann", source="file", expected={q[0]: None, q[1]: None}
        )
        assert ids == [] and conflicts == {q[0]: (None, "a")}
        assert db_dump(blobs.db) == before
        ids, conflicts = store.record_labels("blobs", [(q[1], "b", 1), (q[2], "c", None)], who="ann", source="file", expected={})
        assert len(ids) == 2 and conflicts == {}
        assert [o["id"] for o in store.observations("blobs")][-2:] == ids


def test_retract_observation_only_while_the_round_waits(blobs):
    q = blobs.queries
    with PoolStore(blobs.db) as store:
        (first,), _ = store.record_labels("blobs", [(q[0], "a", 1)], who="ann", source="prompt", expected={q[0]: None})
        assert store.retract_observation("blobs", first) == q[0]
        assert q[0] not in blobs.labels()
        with pytest.raises(StoreError, match="no such answer"):
            store.retract_observation("blobs", first)
        ids, _ = store.record_labels("blobs", [(k, "b", 1) for k in q], who="ann", source="prompt", expected={})
        store.advance_round("blobs", 1, "answered")  # `activebayes round` closed the round meanwhile
        before = db_dump(blobs.db)
        with pytest.raises(StoreError, match="no longer waiting for answers; correct it with"):
            store.retract_observation("blobs", ids[-1])
        assert db_dump(blobs.db) == before


def test_regression_labels_are_numbers(tmp_path, monkeypatch, db_url):
    monkeypatch.chdir(tmp_path)
    np.save("x.npy", np.zeros((10, 2), dtype=np.float32))
    assert run("--db", db_url, "init", "--name", "r", "--task", "regression").exit_code == 0
    assert run("--db", db_url, "pool", "add", "x.npy").exit_code == 0
    write("answers.csv", "key,label\n3,1.50\n4,2\n")
    assert run("--db", db_url, "label", "--from", "answers.csv").exit_code == 0
    write("again.csv", "key,label\n3,1.5\n")  # the same number written differently: harmless
    before = db_dump(db_url)
    assert "nothing to record for the whole file" in run("--db", db_url, "label", "--from", "again.csv").stdout
    for text in ("key,label\n5,1\n6,abc\n", "key,label\n6,nan\n"):
        write("bad.csv", text)
        assert_mistake(run("--db", db_url, "label", "--from", "bad.csv"), "not a finite number", "line")
    assert db_dump(db_url) == before

    open_round(db_url, "r", ["5", "6"])  # at the prompt a non-number is refused and asked again
    result = run("--db", db_url, "label", input="abc\n0.25\nq\n")
    assert result.exit_code == 0, result.output
    assert "'abc' is not a finite number" in result.stdout and "Recorded 1 answer for round 1" in result.stdout
    with PoolStore(db_url) as store:
        _, keys, values = store.labels("r")
    assert dict(zip(keys, values)) == {"3": "1.5", "4": "2.0", "5": "0.25"}


def sacks_answered(db_url: str, rows: list[str], answers: str, bad: str, *mistake: str) -> None:
    """A regression project "sacks" from `rows` (sacks.csv's lines; the target is weight, the
    first 6 rows unlabelled), its known labels imported; `answers` (answers.csv's lines after
    id,weight) recorded by `label --from`, then `bad` refused with `mistake` and nothing written."""
    write("sacks.csv", "\n".join(rows) + "\n")
    assert run("--db", db_url, "init", "--name", "sacks", "--task", "regression").exit_code == 0
    added = run("--db", db_url, "pool", "add", "sacks.csv", "--key-column", "id", "--label-column", "weight", "--labels-are-known")
    assert added.exit_code == 0, added.output
    write("answers.csv", f"id,weight\n{answers}")
    assert run("--db", db_url, "label", "--from", "answers.csv").exit_code == 0
    before = db_dump(db_url)
    write("bad.csv", f"id,weight\n{bad}")
    assert_mistake(run("--db", db_url, "label", "--from", "bad.csv"), *mistake)
    assert db_dump(db_url) == before


def test_regression_answers_may_carry_the_target_s_unit(tmp_path, monkeypatch, db_url):
    """A target written "3.5 kg": "12.5 kg" from a file and at the prompt is 12.5; "12.5 lb" is
    refused naming kg (the file: exit 2, nothing written; the prompt: asked again)."""
    monkeypatch.chdir(tmp_path)
    rows = ["id,rain_mm,weight"] + [f"p{i:02d},{i * 1.5:.1f},{f'{2 + i % 7}.5 kg' if i >= 6 else ''}" for i in range(30)]
    sacks_answered(db_url, rows, "p00,12.5 kg\np01,7kg\n", "p02,12.5 lb\n",
                   "line 2: label '12.5 lb' of 'p02' is in lb, but this project's numbers are in kg", "converted to kg")  # fmt: skip

    open_round(db_url, "sacks", ["p02", "p03"])
    result = run("--db", db_url, "label", "--who", "ann", input="12.5 lb\n-3 kg\nq\n")
    assert result.exit_code == 0, result.output
    assert "'12.5 lb' is in lb, but this project's numbers are in kg" in result.stdout and "Recorded 1 answer for round 1" in result.stdout
    with PoolStore(db_url) as store:
        labels = store.label_states("sacks", ["p00", "p01", "p02", "p03"])
    assert {k: s["label"] for k, s in labels.items()} == {"p00": "12.5", "p01": "7.0", "p02": "-3.0", "p03": None}


def test_a_decimal_comma_answer_may_carry_the_target_s_unit(tmp_path, monkeypatch, db_url):
    """A pool written with decimal commas (a file delimited by ;) whose target is "3 kg": "12,5 kg"
    is 12.5 as "12,5" is, "12.5 Kg" too (K is no prefix); "12.5 KG" is refused naming kg."""
    monkeypatch.chdir(tmp_path)
    rows = ["id;rain_mm;weight"] + [f"p{i:02d};{i},5;{f'{2 + i % 7} kg' if i >= 6 else ''}" for i in range(30)]
    sacks_answered(db_url, rows, 'p00,"12,5 kg"\np01,12.5 Kg\n', "p02,12.5 KG\n",
                   "label '12.5 KG' of 'p02' is in KG, but this project's numbers are in kg")  # fmt: skip
    with PoolStore(db_url) as store:
        labels = store.label_states("sacks", ["p00", "p01"])
    assert {k: s["label"] for k, s in labels.items()} == {"p00": "12.5", "p01": "12.5"}
