"""The interactive `activebayes label` prompt in a pseudo-terminal (SQLite and PostgreSQL), and
the demo end to end.

Each answer is committed as it is typed, so the database is read WHILE the prompt still waits:
what a person typed is there before they quit, press Ctrl-C or lose the terminal.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from activebayes.store import PoolStore
from activebayes_cli.main import app
from cli_checks import db_dump, lease_rows, without_leases
from test_cli import write_pool_csv
from test_cli_label import open_round

pexpect = pytest.importorskip("pexpect")

SCRIPT = Path(sys.executable).with_name("activebayes")


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path, monkeypatch):
    """Every test works in its own folder: a PostgreSQL project's feature cache goes to the
    working directory, which must not be the checkout."""
    monkeypatch.chdir(tmp_path)
PROMPT = r"\(s skip, u undo, q quit, \? help\): "


def run(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def first_round(db: str, project: str, k: int) -> list[str]:
    """Round 1 of `project`, waiting in "queried" for the answers to its first k pool items."""
    with PoolStore(db) as store:
        pool = [key for key, s in store.label_states(project, sorted(store.item_keys(project))).items() if s["split"] == "pool"]
    open_round(db, project, pool[:k])
    return pool[:k]


def blobs(tmp_path: Path, db: str, n: int = 30, k: int = 5) -> list[str]:
    """Project 'blobs' (classes a, b, c) with a csv pool and a round waiting for k answers."""
    write_pool_csv(tmp_path / "pool.csv", n=n)
    assert run("--db", db, "init", "--name", "blobs", "--classes", "a,b,c").exit_code == 0
    assert run("--db", db, "pool", "add", str(tmp_path / "pool.csv"), "--key-column", "id").exit_code == 0
    return first_round(db, "blobs", k)


def spawn(tmp_path: Path, db: str, *args: str, columns: str | None = "100", size: tuple[int, int] = (24, 100),
          command: tuple[str, ...] = ("label", "--who", "tester")):  # fmt: skip
    """`activebayes COMMAND ARGS` (by default `activebayes label --who tester ARGS`) in a
    pseudo-terminal of `size` (rows, columns); $COLUMNS unset when `columns` is None, so the
    terminal's own width counts."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACTIVEBAYES_") and k not in ("COLUMNS", "LINES")}
    env.update(ACTIVEBAYES_DB=db, TERM="dumb")
    if columns is not None:
        env["COLUMNS"] = columns
    program = str(SCRIPT) if SCRIPT.exists() else sys.executable
    argv = [*command, *args]
    argv = argv if SCRIPT.exists() else ["-m", "activebayes_cli.main", *argv]
    # as typed in a terminal: Ctrl-C interrupts even where the test runner was started with
    # SIGINT ignored (a shell's background job inherits that, and so would the child)
    return pexpect.spawn(program, argv, cwd=str(tmp_path), env=env, encoding="utf-8", timeout=120, dimensions=size,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip


def labels(db: str) -> dict[str, str]:
    with PoolStore(db) as store:
        _, keys, values = store.labels("blobs")
        return dict(zip(keys, values))


def answer_first_items(child, keys: list[str], answers: str) -> None:
    """Type `answers` (one letter each) to the round's first items, asked in the order of `keys`,
    and wait at the prompt for the next item."""
    for i, answer in enumerate(answers):
        child.expect(f"item {i + 1}/{len(keys)}: {keys[i]}")
        child.expect(PROMPT)
        child.sendline(answer)
    child.expect(f"item {len(answers) + 1}/{len(keys)}: {keys[len(answers)]}")
    child.expect(PROMPT)


def test_label_prompt_in_a_terminal(tmp_path, db_url):
    keys = blobs(tmp_path, db_url, k=3)
    child = spawn(tmp_path, db_url)
    try:
        child.expect(f"item 1/3: {keys[0]}")
        child.expect(r"label \[1 a, 2 b, 3 c\] " + PROMPT)
        child.sendline("zebra")  # not a class: asked again
        child.expect("'zebra' is not a label")
        child.expect(PROMPT)
        child.sendline("?")  # the keys
        for text in ("one of: a, b, c, or its number (1 for a)", "skip this item", "undo the last answer", "stop here", "Ctrl-C"):
            child.expect_exact(text)
        child.expect(PROMPT)
        child.sendline("u")  # nothing to undo yet
        child.expect("nothing to undo")
        child.expect(PROMPT)
        child.sendline("2")  # b, by its number
        child.expect(f"item 2/3: {keys[1]}")
        child.expect(PROMPT)
        child.sendline("s")
        child.expect(f"item 3/3: {keys[2]}")
        child.expect(PROMPT)
        child.sendline("q")
        child.expect("Recorded 1 answer for round 1, skipped 1")  # item 3 was left by `q`, not skipped
        child.expect("2 queries of round 1 still open")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0, child.before

    with PoolStore(db_url) as store:
        assert labels(db_url) == {keys[0]: "b"}
        (obs,) = [o for o in store.observations("blobs") if o["source"] != "import"]
        assert (obs["key"], obs["who"], obs["source"]) == (keys[0], "tester", "prompt")
        (rnd,) = store.rounds("blobs")
        assert obs["round_id"] == rnd.id and rnd.status == "queried"
        assert [q.value for q in store.queries("blobs", 1)] == ["b", None, None]


def test_ctrl_c_after_three_answers_keeps_three_and_u_removes_one(tmp_path, db_url):
    """Each answer is in the database as soon as it is typed; `u` deletes the last one (the item
    is asked again); Ctrl-C says how many were saved, exits 130, and loses none of them."""
    keys = blobs(tmp_path, db_url, k=5)
    child = spawn(tmp_path, db_url)
    try:
        answer_first_items(child, keys, "abc")
        assert labels(db_url) == {keys[0]: "a", keys[1]: "b", keys[2]: "c"}  # committed while the prompt waits

        child.sendline("u")
        child.expect(f"undone: {keys[2]} was 'c'")
        child.expect(f"item 3/5: {keys[2]}")  # asked again
        child.expect(PROMPT)
        assert labels(db_url) == {keys[0]: "a", keys[1]: "b"}
        child.sendline("a")
        child.expect(f"item 4/5: {keys[3]}")
        child.expect(PROMPT)
        at_the_prompt = without_leases(db_dump(db_url))  # the prompt holds a lease on the item it shows

        child.sendcontrol("c")
        child.expect("3 answers saved for round 1; 2 queries still open")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 130, (child.exitstatus, child.signalstatus, child.before)
    assert "Traceback" not in child.before
    after = db_dump(db_url)
    assert without_leases(after) == at_the_prompt and lease_rows(after) == []  # the interrupt lost nothing; its lease ended
    assert labels(db_url) == {keys[0]: "a", keys[1]: "b", keys[2]: "a"}
    with PoolStore(db_url) as store:
        answered = [o for o in store.observations("blobs") if o["source"] == "prompt"]
        assert [o["key"] for o in answered] == keys[:3]  # the undone 'c' left no row behind
        assert [q.value for q in store.queries("blobs", 1)] == ["a", "b", "a", None, None]
        assert store.rounds("blobs")[0].status == "queried"

    # the next session asks only what is still open
    child = spawn(tmp_path, db_url)
    try:
        child.expect(f"item 1/2: {keys[3]}")
        child.expect(PROMPT)
        child.sendline("u")  # this session has no answer to undo: the earlier ones stay
        child.expect("nothing to undo")
        child.expect(PROMPT)
        child.sendline("q")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0 and len(labels(db_url)) == 3


def test_killed_terminal_loses_no_typed_answer(tmp_path, db_url):
    keys = blobs(tmp_path, db_url, k=4)
    child = spawn(tmp_path, db_url)
    try:
        answer_first_items(child, keys, "ba")
        child.kill(signal.SIGKILL)
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert labels(db_url) == {keys[0]: "b", keys[1]: "a"}


def wide_pool(path: Path, columns: int, n: int = 20) -> list[str]:
    names = [f"feature_{j}" for j in range(columns)]
    rng = np.random.default_rng(0)
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", *names])
        for i in range(n):
            writer.writerow([f"r{i}", *[f"{v:.3f}" for v in rng.normal(size=columns)]])
    return names


@pytest.mark.parametrize(
    "columns, size, layout",
    [
        (8, (24, 160), "table"),  # 8 named columns fit 160 characters
        (8, (24, 60), "lines"),  # ... but not 60: one `name: value` line each
        (30, (40, 160), "lines"),  # 30 columns never fit: before, every cell was drawn as "…"
        (3000, (24, 120), "cut"),  # 3,000 columns: packed, cut to the screen, `a` shows the rest
    ],
)
def test_prompt_uses_column_names_and_the_terminals_width(tmp_path, columns, size, layout):
    db = f"sqlite:///{tmp_path / 'w.db'}"
    names = wide_pool(tmp_path / "wide.csv", columns)
    assert run("--db", db, "init", "--name", "blobs", "--classes", "3").exit_code == 0
    assert run("--db", db, "pool", "add", str(tmp_path / "wide.csv"), "--key-column", "id").exit_code == 0
    first_round(db, "blobs", 2)
    child = spawn(tmp_path, db, columns=None, size=size)  # no $COLUMNS: the terminal's own width
    try:
        child.expect(PROMPT)
        shown = child.before
        if layout == "cut":
            child.sendline("a")
            child.expect(PROMPT)
            every = child.before
        child.sendline("q")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert "x0" not in shown
    if layout == "cut":
        item = shown.replace("\r", "")[shown.replace("\r", "").index("item 1/"):]
        assert len(item.splitlines()) <= size[0] - 6 and "more columns: type a to show every one" in item
        assert all(f"{name}:" in every for name in names)
        return
    assert "…" not in shown
    if layout == "table":
        header = next(line for line in shown.splitlines() if "feature_0" in line)
        assert all(name in header for name in names)  # every name in one header row
        assert max(len(line) for line in shown.splitlines()) <= size[1]
    else:
        for name in names:
            assert f"\n{name}:" in shown.replace("\r", "")


def test_demo_fast_end_to_end(tmp_path, monkeypatch):
    """The demo runs the CLI's defaults (named as they are) against random: one project per arm
    and seed in one study.db, the pool imported as `pool add` does, paired splits and round seeds.
    Which arm wins is a training outcome and is not asserted."""
    from activebayes_cli._model import DEFAULT_COVER_CLASSES, default_acquisition, default_first
    from activebayes_cli.demo import DEMO_FILES

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ACTIVEBAYES_DB", raising=False)
    result = run("--json", "--quiet", "demo", "--fast", "--out", "demo-out", "--device", "cpu")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    curves = summary["curves"]
    from activebayes_cli._demo_runs import demo_arms

    acquisition, first, default = default_acquisition("classification"), default_first(), demo_arms()[0].label
    assert default.startswith(f"default ({acquisition}, ")  # and says how its early batches are chosen:
    assert ("typical items while ≤ 2 labels a class" in default) == (first == "auto") and ("uniform while" in default) == DEFAULT_COVER_CLASSES
    assert summary["studies"] == 1 and summary["seeds"] == [0]
    assert list(curves) == [default, "random"]
    assert summary["arms"][default] == {"key": "default", "acquisition": acquisition, "first": first, "cover_classes": DEFAULT_COVER_CLASSES}
    assert summary["arms"]["random"] == {"key": "random", "acquisition": "random", "first": "random", "cover_classes": False}
    for points in curves.values():
        assert [p["labels"] for p in points] == [10, 20, 30, 40]
        assert all(0.0 <= p["accuracy"] <= 1.0 for p in points)
    gaps = [d["accuracy"] - r["accuracy"] for d, r in zip(curves[default], curves["random"])]
    diff = summary["default_vs_random"]
    assert (diff["first_labels"], diff["last_labels"]) == (10, 40)
    assert diff["mean"] == pytest.approx(np.mean(gaps)) and diff["last"] == pytest.approx(gaps[-1])
    assert summary["standing"].startswith("the default is ") and "over 10–40 labels" in summary["standing"]
    assert Path(summary["plot"]).read_bytes()[:4] == b"\x89PNG"
    results = json.loads(Path(summary["results"]).read_text())
    assert results["settings"]["seeds"] == [0] and results["settings"]["posterior"] == "mc-dropout"
    assert [p["mean"] for p in results["curves"]["random"]] == [p["accuracy"] for p in curves["random"]]
    with PoolStore(summary["database"]) as store:  # what `pool add` + `round --oracle truth --k 10` leave
        assert sorted(store.projects()) == ["default-s0", "random-s0"]
        splits = []
        for project, arm in (("default-s0", acquisition), ("random-s0", "random")):
            rounds = store.rounds(project)  # the cold start (no fit), then fits on 10, ..., 40 labels
            assert all(r.status == "done" and r.acquisition == arm for r in rounds)
            assert [r.labelled_count for r in rounds] == [0, 10, 20, 30, 40]
            assert rounds[0].acquisition_settings["first"] == (first if project == "default-s0" else "random")
            assert rounds[1].posterior == "mc-dropout" and rounds[1].posterior_settings["model"] == "mlp"
            assert len(store.labels(project)[0]) == 50  # the last round's queries are answered too
            label = default if project == "default-s0" else "random"
            assert [(r.labelled_count, r.metrics["accuracy"]) for r in rounds[1:]] == [
                (p["labels"], p["accuracy"]) for p in curves[label]
            ]
            states = store.label_states(project, sorted(store.item_keys(project)))
            splits.append({key for key, state in states.items() if state["split"] == "test"})
            assert store.project(project).settings["test_fraction"] == 0.3
        assert splits[0] == splits[1] and len(splits[0]) == pytest.approx(0.3 * 1797, abs=1)  # paired: one split
        assert [r.seed for r in store.rounds("default-s0")] == [r.seed for r in store.rounds("random-s0")]
    assert set(os.listdir(tmp_path / "demo-out")) <= set(DEMO_FILES)  # a rerun's cleanup covers all of it
    span = summary["memory_span"]
    assert span["trials"] > 0 and 0.0 < span["sd"] < 2.0 and 1.0 < span["mean"] < 15.0
    assert not (tmp_path / "activebayes.db").exists()  # the demo never touches the default database
    assert not (tmp_path / "activebayes-cache").exists()


def test_demo_folder_is_cleared_of_an_earlier_demo(tmp_path):
    from activebayes_cli.demo import DEMO_FILES, prepare_folder

    for name in DEMO_FILES:
        (tmp_path / name).write_text("old")
    (tmp_path / "mine.txt").write_text("kept")
    assert prepare_folder(tmp_path) == tmp_path
    assert os.listdir(tmp_path) == ["mine.txt"]


def test_demo_standing_says_plainly_where_the_default_is():
    from activebayes_cli._demo_runs import compare, standing

    def curve(*means):
        return [{"labels": 10 * (i + 1), "mean": m, "sd": 0.0, "n": 3} for i, m in enumerate(means)]

    above = compare(curve(0.6, 0.8), curve(0.5, 0.79))
    assert above == pytest.approx({"first_labels": 10, "last_labels": 20, "mean": 0.055, "last": 0.01})
    assert standing(above, 3) == ("the default is 0.055 above random on average over 10–20 labels "
                                  "(0.010 above at 20; test accuracy, mean of 3 seeds)")  # fmt: skip
    below = standing(compare(curve(0.5, 0.7), curve(0.6, 0.8)), 1)
    assert below.startswith("the default is 0.100 below random on average") and below.endswith(": random did better on these digits")
    assert "level with random" in standing(compare(curve(0.5), curve(0.5)), 1)
    assert compare(curve(0.5), []) is None
