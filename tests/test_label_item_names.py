"""What `activebayes label` tells a labeller of an image folder keyed by its files' paths (`pool add
FOLDER --truth`: `dark/dark0.png` spells the class) names each item as the labeller was shown
it, never by its key: the prompt's notes on another session's answers, a round replaced
meanwhile and an undo refused say "query R" as the prompt does; `label --from`'s refusals (a
changed label, one given meanwhile, two labels for one item, a regression answer that is no
number) and its note on answers far outside the others name the opaque id the file gave.
On SQLite and PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from activebayes.data.label_studio import task_id
from activebayes.store import PoolStore
from cli_checks import InterleavedInput, assert_mistake, db_dump, ok, run
from test_cli_label import open_round
from test_label_studio_keys import annotated, path_keyed_folder, recorded, write_json
from test_round_file_keys import digest, write_rows


def ids_of(root: Path, keys: list[str]) -> list[str]:
    """The opaque ids round 1's file and tasks give `keys`, its queries in rank order."""
    return [task_id(1, rank, digest(root, key)) for rank, key in enumerate(keys)]


def no_key_in(text: str, keys) -> None:
    """None of the pool's keys (the paths, which spell the classes) in `text`."""
    for key in keys:
        assert key not in text, (key, text)
    assert ".png" not in text, text


def bob_labels(db: str, key: str, label: str) -> None:
    """Another session's answer, recorded outside the prompt's transaction."""
    with PoolStore(db) as store:
        store.record_observations("shapes", [(key, label)], who="bob", source="cli")


def discard_round_1(db: str) -> None:
    """Another session's `round --restart-round` (or `round` closing it): round 1 waits no more."""
    with PoolStore(db) as store:
        store.advance_round("shapes", 1, "failed", failure_reason="discarded")


def prompt_says(typed, keys, *notes: str) -> None:
    """`label` at the prompt, answered `typed`, succeeds and prints each of `notes`, never a key."""
    result = run("label", "--who", "ann", input=typed)
    assert result.exit_code == 0, result.output
    for note in notes:
        assert note in result.stdout, (note, result.stdout)
    no_key_in(result.output, keys)


# ---- the terminal prompt ----------------------------------------------------------------------------
def test_the_prompt_names_another_session_s_different_label_by_query(cli_db, tmp_path, interleaved_input):
    keys, truth = path_keyed_folder(cli_db, tmp_path)
    typed = InterleavedInput("light\n", lambda: bob_labels(cli_db, keys[0], "dark"))  # while query 1 is on screen
    prompt_says(typed, truth, "not saved: another session labelled query 1 'dark' meanwhile; that label stays")
    assert recorded(cli_db) == {keys[0]: "dark"}


def test_the_prompt_names_a_repeated_answer_and_its_refused_undo_by_query(cli_db, tmp_path, interleaved_input):
    keys, truth = path_keyed_folder(cli_db, tmp_path)
    prompt_says(InterleavedInput("light\nu\n", lambda: bob_labels(cli_db, keys[0], "light")), truth,
                "query 1 was labelled the same by another session meanwhile: recorded once",
                "cannot undo: the label of query 1 was given by another session")  # fmt: skip
    assert recorded(cli_db) == {keys[0]: "light"}


def test_the_prompt_says_the_new_round_asks_it_too_without_its_key(cli_db, tmp_path, interleaved_input):
    keys, truth = path_keyed_folder(cli_db, tmp_path)

    def replaced() -> None:  # another session's `round --restart-round`: round 2 asks query 1's item too
        discard_round_1(cli_db)
        open_round(cli_db, "shapes", [keys[0], keys[1]])

    prompt_says(InterleavedInput("light\n", replaced), truth, "round 1 no longer waits for answers: recorded for round 2, which asks it too")
    assert recorded(cli_db) == {keys[0]: "light"}


def test_an_undo_refused_as_the_round_closed_names_the_query(cli_db, tmp_path, monkeypatch):
    from activebayes_cli._prompt_turns import PromptTurns

    keys, truth = path_keyed_folder(cli_db, tmp_path)
    real, shown = PromptTurns.take, []

    def then_discarded(self, key):  # query 2 is on screen; then another session discards round 1
        taken = real(self, key)
        shown.append(key)
        if len(shown) == 2:
            discard_round_1(cli_db)
        return taken

    monkeypatch.setattr(PromptTurns, "take", then_discarded)
    prompt_says("light\nu\n", truth, "cannot undo: the answer for query 1 belongs to round 1, which is 'failed' now, no longer "
                "waiting for answers; correct it with `activebayes label --from FILE --relabel`")  # fmt: skip
    assert recorded(cli_db) == {keys[0]: "light"}


# ---- label --from: the file's ids -------------------------------------------------------------------
def test_a_changed_label_is_refused_naming_the_file_s_id(cli_db, tmp_path):
    keys, truth = path_keyed_folder(cli_db, tmp_path)
    ids = ids_of(tmp_path, keys)
    ok("label", "--from", write_rows("first.csv", [["query", "label"], [ids[0], "light"], [ids[1], "dark"]]))
    before = db_dump(cli_db)
    changed = write_rows("changed.csv", [["query", "label"], [ids[0], "dark"], [ids[1], "dark"]])
    result = run("label", "--from", changed)
    assert_mistake(result, f"would replace the current labels of 1 item: {ids[0]} 'light' -> 'dark' (line 2)", "--relabel")
    no_key_in(result.output, truth)
    # a Label Studio export of the same tasks: named by their ids too, counted by task
    ok("export", "--format", "label-studio", "--out", "tasks.json")
    tasks = annotated(json.loads(Path("tasks.json").read_text()), ["dark", "dark", None, None])
    result = run("label", "--from", write_json("export.json", tasks))
    assert_mistake(result, f"{ids[0]} 'light' -> 'dark' (task 1)")
    no_key_in(result.output, truth)
    assert db_dump(cli_db) == before
    assert json.loads(ok("--json", "label", "--from", changed, "--relabel").stdout)["relabelled"] == 1
    assert recorded(cli_db) == {keys[0]: "dark", keys[1]: "dark"}


def test_a_label_given_while_the_file_was_checked_is_named_by_the_file_s_id(cli_db, tmp_path, monkeypatch):
    keys, truth = path_keyed_folder(cli_db, tmp_path)
    ids = ids_of(tmp_path, keys)
    real, steps = PoolStore.label_states, [lambda: bob_labels(cli_db, keys[1], "light")]

    def checked_then_labelled(self, *args, **kwargs):  # the file is checked; then another session labels query 2
        states = real(self, *args, **kwargs)
        if steps:
            steps.pop()()
        return states

    monkeypatch.setattr(PoolStore, "label_states", checked_then_labelled)
    result = run("label", "--from", write_rows("answers.csv", [["query", "label"], [ids[0], "light"], [ids[1], "dark"]]))
    assert_mistake(result, "given by another session while the file was checked", f"{ids[1]} 'light' -> 'dark' (line 3)",
                   "nothing was recorded")  # fmt: skip
    no_key_in(result.output, truth)
    assert recorded(cli_db) == {keys[1]: "light"}


def test_two_labels_for_one_id_are_refused_naming_the_id(cli_db, tmp_path):
    keys, truth = path_keyed_folder(cli_db, tmp_path)
    ids = ids_of(tmp_path, keys)
    before = db_dump(cli_db)
    result = run("label", "--from", write_rows("twice.csv", [["query", "label"], [ids[0], "light"], [ids[0], "dark"]]))
    assert_mistake(result, "line 3", f"the item of query {ids[0]!r} has label 'dark' but line 2 gave 'light'")
    no_key_in(result.output, truth)
    assert db_dump(cli_db) == before


# ---- label --from: a regression project's numbers ---------------------------------------------------
def path_keyed_numbers(db: str, root: Path) -> tuple[list[str], list[str]]:
    """Project 'sizes' (regression) over `root/images/{small,large}/*.png` (six of each), its
    numbers in a --truth csv keyed by the paths; round 1 waits for answers to the first of each
    folder, the other ten items are labelled. Returns (round 1's keys in rank order, every key)."""
    from PIL import Image

    rng = np.random.default_rng(0)
    keys = []
    for folder in ("small", "large"):
        (root / "images" / folder).mkdir(parents=True, exist_ok=True)
        for i in range(6):
            Image.fromarray(rng.integers(0, 255, size=(12, 12)).astype(np.uint8)).save(root / "images" / folder / f"{folder}{i}.png")
            keys.append(f"{folder}/{folder}{i}.png")
    (root / "truth.csv").write_text("key,label\n" + "".join(f"{k},{i}\n" for i, k in enumerate(keys)))
    ok("init", "--name", "sizes", "--task", "regression")
    ok("pool", "add", str(root / "images"), "--truth", str(root / "truth.csv"))
    asked = [keys[0], keys[6]]
    with PoolStore(db) as store:
        assert set(store.item_keys("sizes")) == set(keys)  # the keys are the paths
        store.record_observations("sizes", [(k, str(float(i))) for i, k in enumerate(keys) if k not in asked], who="bob", source="cli")
    open_round(db, "sizes", asked)
    return asked, keys


def test_a_regression_answer_that_is_no_number_is_named_by_the_file_s_id(cli_db, tmp_path):
    asked, keys = path_keyed_numbers(cli_db, tmp_path)
    ids = ids_of(tmp_path, asked)
    before = db_dump(cli_db)
    result = run("label", "--from", write_rows("typo.csv", [["query", "label"], [ids[0], "abc"]]))
    assert_mistake(result, f"line 2: label 'abc' of {ids[0]!r} is not a finite number")
    no_key_in(result.output, keys)
    assert db_dump(cli_db) == before


def test_an_answer_far_outside_the_others_is_named_by_the_file_s_id(cli_db, tmp_path):
    asked, keys = path_keyed_numbers(cli_db, tmp_path)
    ids = ids_of(tmp_path, asked)
    result = ok("label", "--from", write_rows("far.csv", [["query", "label"], [ids[0], "1000000"], [ids[1], "6"]]))
    assert f"note: 1 answer far outside the other labels (1 to 11): {ids[0]} 1e+06" in " ".join(result.stdout.split())
    no_key_in(result.output, keys)


def test_label_from_json_names_the_far_answers_by_the_file_s_id(cli_db, tmp_path):
    asked, keys = path_keyed_numbers(cli_db, tmp_path)
    ids = ids_of(tmp_path, asked)
    result = ok("--json", "label", "--from", write_rows("far.csv", [["query", "label"], [ids[0], "1000000"], [ids[1], "6"]]))
    summary = json.loads(result.stdout)
    assert summary["far_outside"] == {"answers": {ids[0]: 1e6}, "others": [1.0, 11.0]}
    no_key_in(result.output, keys)
