"""The interactive `activebayes label` prompt in a pseudo-terminal, and the demo end to end."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from activebayes.store import PoolStore
from activebayes_cli.main import app
from test_cli import write_pool_csv

pexpect = pytest.importorskip("pexpect")

SCRIPT = Path(sys.executable).with_name("activebayes")


def run(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def test_label_prompt_in_a_terminal(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    db = f"sqlite:///{tmp_path / 'p.db'}"
    write_pool_csv(tmp_path / "pool.csv", n=30)
    assert run("--db", db, "init", "--name", "blobs", "--classes", "a,b,c").exit_code == 0
    assert run("--db", db, "pool", "add", "pool.csv", "--key-column", "id").exit_code == 0
    first = run("--db", db, "--json", "round", "--k", "3", "--epochs", "2", "--device", "cpu")
    assert first.exit_code == 0, first.output
    keys = [q["key"] for q in json.loads(first.stdout)["queries"]]

    env = {k: v for k, v in os.environ.items() if not k.startswith("ACTIVEBAYES_")}
    env.update(ACTIVEBAYES_DB=db, COLUMNS="100", TERM="dumb")
    command = str(SCRIPT) if SCRIPT.exists() else sys.executable
    args = ["label", "--who", "tester"] if SCRIPT.exists() else ["-m", "activebayes_cli.main", "label", "--who", "tester"]
    child = pexpect.spawn(command, args, cwd=str(tmp_path), env=env, encoding="utf-8", timeout=120)
    try:
        child.expect(f"item 1/3: {keys[0]}")
        child.expect(r"label \[a, b, c\] \(s = skip, q = save and quit\): ")
        child.sendline("zebra")  # not a class: asked again
        child.expect("not a label")
        child.expect("q = save and quit\\): ")
        child.sendline("b")
        child.expect(f"item 2/3: {keys[1]}")
        child.expect("q = save and quit\\): ")
        child.sendline("s")
        child.expect(f"item 3/3: {keys[2]}")
        child.expect("q = save and quit\\): ")
        child.sendline("q")
        child.expect("Recorded 1 answer")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0, child.before

    with PoolStore(db) as store:
        _, labelled_keys, values = store.labels("blobs")
        assert list(zip(labelled_keys, values)) == [(keys[0], "b")]
        (obs,) = store.observations("blobs")
        assert (obs["who"], obs["source"]) == ("tester", "prompt")
        (rnd,) = store.rounds("blobs")
        assert obs["round_id"] == rnd.id and rnd.status == "queried"
        assert [q.value for q in store.queries("blobs", 1)] == ["b", None, None]


def test_demo_fast_end_to_end(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ACTIVEBAYES_DB", raising=False)
    result = run("--json", "--quiet", "demo", "--fast", "--out", "demo-out", "--device", "cpu")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    curves = summary["curves"]
    assert summary["studies"] == 1
    assert set(curves) == {"MC dropout + BALD", "MC dropout + random"}
    for points in curves.values():
        assert [p["labels"] for p in points] == [20, 30, 40]
        assert all(0.0 <= p["accuracy"] <= 1.0 for p in points)
    # both strategies start from the same random labels, so their first fits agree exactly
    assert curves["MC dropout + BALD"][0] == curves["MC dropout + random"][0]
    assert Path(summary["plot"]).read_bytes()[:4] == b"\x89PNG"
    with PoolStore(summary["database"]) as store:
        assert sorted(store.projects()) == ["digits-bald-1", "digits-random-1"]
        rounds = store.rounds("digits-bald-1")
        assert [r.status for r in rounds] == ["done"] * 4 and rounds[1].acquisition == "bald"
        assert len(store.labels("digits-bald-1")[0]) == 50
        assert [(r.labelled_count, r.metrics["accuracy"]) for r in rounds[1:]] == [
            (p["labels"], p["accuracy"]) for p in curves["MC dropout + BALD"]
        ]
    span = summary["memory_span"]
    assert span["trials"] > 0 and 0.0 < span["sd"] < 2.0 and 1.0 < span["mean"] < 15.0
    assert not (tmp_path / "activebayes.db").exists()  # the demo never touches the default database
