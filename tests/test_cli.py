"""The `activebayes` command line: help and version, init, projects, pool add, the global
options, and every user mistake there (one line on stderr, exit code 2, database unchanged).
A campaign of rounds and labels: `test_cli_campaign.py`. Tiny data, tiny epochs."""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from activebayes_cli.main import app
from cli_checks import assert_mistake


CLASSES = ("a", "b", "c")


# ---- helpers ------------------------------------------------------------------------------------
def run(*args: str, input: str | None = None):
    """Invoke the CLI in-process; exceptions that escape the error handler stay visible."""
    return CliRunner().invoke(app, list(args), input=input, catch_exceptions=False)


def dump(db: Path) -> list[str]:
    """Every row of every table (read-only), to compare a database before and after a command."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return list(conn.iterdump())


def write_pool_csv(path: Path, n: int = 60, seed: int = 0) -> Path:
    """Three well-separated Gaussian blobs in 4 dimensions; columns id, f0..f3, label."""
    rng = np.random.default_rng(seed)
    centres = np.array([[3, 0, 0, 0], [0, 3, 0, 0], [0, 0, 3, 0]], dtype=float)
    labels = np.arange(n) % 3
    x = centres[labels] + rng.normal(scale=0.5, size=(n, 4))
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "f0", "f1", "f2", "f3", "label"])
        for i in range(n):
            writer.writerow([f"item-{i:03d}", *[f"{v:.5f}" for v in x[i]], CLASSES[labels[i]]])
    return path


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A clean working directory with no ACTIVEBAYES_* variables; returns the default db path."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ACTIVEBAYES_DB", raising=False)
    monkeypatch.delenv("ACTIVEBAYES_PROJECT", raising=False)
    return tmp_path / "activebayes.db"


@pytest.fixture
def project(env):
    result = run("init", "--name", "blobs", "--task", "classification", "--classes", ",".join(CLASSES))
    assert result.exit_code == 0, result.output
    return env


# ---- global options and error handling -----------------------------------------------------------
def test_version_and_help(env):
    assert run("--version").stdout.startswith("activebayes ")
    result = run("--help")
    assert result.exit_code == 0
    for command in ("init", "pool", "round", "label", "status", "export", "report", "demo"):
        assert command in result.stdout
    if importlib.util.find_spec("activebayes_cli.design") is not None:  # cli/design.py, registered when present
        assert run("design", "--help").exit_code == 0


def test_a_bug_keeps_its_traceback(project, monkeypatch):
    """Only user mistakes become one line and exit 2; any other exception propagates."""
    from activebayes.store import PoolStore

    def broken(self, name):
        raise RuntimeError("a bug")

    monkeypatch.setattr(PoolStore, "rounds", broken)
    with pytest.raises(RuntimeError, match="a bug"):
        run("status")


def test_status_without_database_creates_nothing(env):
    # "no activebayes database at": an empty file or PostgreSQL schema is refused the same way
    # (tests/test_cli_global.py)
    assert_mistake(run("status"), "no activebayes database at", "activebayes init")
    assert not env.exists()
    other = env.parent / "sub" / "x.db"
    assert_mistake(run("--db", f"sqlite:///{other}", "status"), "no activebayes database at")
    assert not other.parent.exists()


def test_unreachable_database_url_is_one_line(env):
    result = run("--db", "postgresql+psycopg://nobody@127.0.0.1:1/none", "status")
    assert_mistake(result, "database")


def test_malformed_database_url(env):
    assert_mistake(run("--db", "not a url://", "status"), "--db")


def test_unknown_option_is_one_line(env):
    assert_mistake(run("status", "--bogus"), "--bogus")


# ---- init ----------------------------------------------------------------------------------------
def test_init_creates_project(env):
    result = run("--json", "init", "--name", "digits", "--classes", "10")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["project"] == "digits" and data["classes"] == [str(i) for i in range(10)]
    assert env.exists()
    status = json.loads(run("--json", "status").stdout)
    assert status["project"] == "digits" and status["pool_items"] == 0 and status["rounds"] == []
    assert "pool add" in status["next"]


@pytest.mark.parametrize(
    "args, words",
    [
        (["--classes", "1"], ["--classes", "at least 2"]),
        (["--classes", "a,,b"], ["--classes"]),
        (["--classes", "a,a,b"], ["given more than once"]),
        (["--task", "regression", "--classes", "3"], ["--classes"]),
    ],
)
def test_init_mistakes_write_nothing(env, args, words):
    assert_mistake(run("init", "--name", "p", *args), *words)
    assert not env.exists()


def test_init_duplicate_name_leaves_database_unchanged(project):
    before = dump(project)
    assert_mistake(run("init", "--name", "blobs", "--classes", "3"), "project 'blobs' already exists", "choose another --name",
                   "`activebayes status`", "`activebayes delete blobs`")  # fmt: skip
    assert dump(project) == before


def test_project_resolution(project):
    assert run("init", "--name", "second", "--classes", "2").exit_code == 0
    before = dump(project)
    assert_mistake(run("status"), "2 projects", "--project")
    assert_mistake(run("--project", "nope", "status"), "nope", "blobs", "second")
    assert dump(project) == before
    assert json.loads(run("--json", "--project", "second", "status").stdout)["project"] == "second"


def test_project_from_environment(project, monkeypatch):
    monkeypatch.setenv("ACTIVEBAYES_PROJECT", "nope")
    assert_mistake(run("status"), "nope")
    monkeypatch.setenv("ACTIVEBAYES_PROJECT", "blobs")
    assert run("status").exit_code == 0


# ---- export --------------------------------------------------------------------------------------
def test_export_unknown_suffix_and_missing_folder(project):
    before = dump(project)
    assert_mistake(run("export", "labels.xlsx"), "unknown file type", ".csv or .json")
    assert_mistake(run("export", "missing/labels.csv"), "does not exist")
    assert dump(project) == before
    assert not Path("labels.xlsx").exists()


def test_export_never_overwrites_a_file_without_force(pooled):
    """An existing file (people's labels, say) is refused in one line with exit code 2 and kept as
    it was, unless --force; a folder is refused always; - (stdout) never is."""
    mine = "key,label\nmine,a\n"
    Path("labels.csv").write_text(mine)
    before = dump(pooled)
    assert_mistake(run("export", "labels.csv"), "the export file labels.csv already exists", "move it away", "pass --force to overwrite it")
    assert_mistake(run("export", "--out", "labels.csv", "--format", "csv"), "labels.csv already exists")
    assert Path("labels.csv").read_text() == mine and dump(pooled) == before
    Path("labels.json").mkdir()
    assert_mistake(run("export", "labels.json", "--force"), "labels.json is a folder")
    assert run("export", "labels.csv", "--force").exit_code == 0
    assert Path("labels.csv").read_text().startswith("key,row,split,label") and dump(pooled) == before
    assert run("export", "-", "--force").stdout.startswith("key,row,split,label")


# ---- pool add ------------------------------------------------------------------------------------
@pytest.fixture
def pooled(project):
    """The project with a 60-row pool: 45 pool items (truth held back) and 15 labelled test items."""
    write_pool_csv(project.parent / "pool.csv")
    result = run("pool", "add", "pool.csv", "--key-column", "id", "--label-column", "label", "--test-fraction", "0.25")
    assert result.exit_code == 0, result.output
    return project


TINY = ("--epochs", "2", "--samples", "4", "--device", "cpu")


def test_pool_add_registers_items_and_test_split(pooled):
    status = json.loads(run("--json", "status").stdout)
    assert status["pool_items"] == 45 and status["test_items"] == 15
    assert status["labelled"] == 0 and status["unlabelled"] == 45
    assert status["data_path"].endswith("pool.csv")
    exported = json.loads(Path("all.json").read_text()) if run("export", "all.json").exit_code == 0 else None
    items = exported["items"]
    assert len(items) == 15 and {i["split"] for i in items} == {"test"}  # only the test split is labelled
    assert all(i["source"] == "import" and i["who"] == "import" for i in items)


def test_pool_add_labels_are_known(project):
    write_pool_csv(Path("pool.csv"), n=30)
    result = run("--json", "pool", "add", "pool.csv", "--key-column", "id", "--labels-are-known")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["truth"] == "known"
    status = json.loads(run("--json", "status").stdout)
    assert status["labelled"] == 30 and status["unlabelled"] == 0
    assert "export" in status["next"]


@pytest.mark.parametrize(
    "setup, args, words",
    [
        (None, ["missing.csv"], ["no file at", "missing.csv"]),
        ("bad_number", ["bad.csv", "--key-column", "id"], ["not a number"]),
        ("bad_label", ["bad.csv", "--key-column", "id"], ["label", "not one of the classes"]),
        ("ragged", ["bad.csv", "--key-column", "id"], ["expected 6 fields"]),
        (None, ["pool.csv", "--label-column", "nope"], ["nope", "not a column"]),
        (None, ["pool.csv", "--test-fraction", "1.5"], ["--test-fraction"]),
    ],
)
def test_pool_add_mistakes_leave_database_unchanged(project, setup, args, words):
    write_pool_csv(Path("pool.csv"))
    lines = Path("pool.csv").read_text().splitlines()
    if setup == "bad_number":
        lines[3] = lines[3].replace(lines[3].split(",")[2], "abc")
    elif setup == "bad_label":
        lines[5] = lines[5].rsplit(",", 1)[0] + ",zebra"
    elif setup == "ragged":
        lines[4] = lines[4] + ",extra"
    Path("bad.csv").write_text("\n".join(lines) + "\n")
    before = dump(project)
    assert_mistake(run("pool", "add", *args), *words)
    assert dump(project) == before


def test_pool_add_twice_is_refused(pooled):
    before = dump(pooled)
    assert_mistake(run("pool", "add", "pool.csv"), "already has a pool", "init")
    assert dump(pooled) == before


def test_quiet_and_json_keep_stdout_clean(project):
    write_pool_csv(Path("pool.csv"), n=30)
    Path("pool2.csv").write_text(Path("pool.csv").read_text().replace("id,", "key,", 1))
    result = run("--json", "pool", "add", "pool2.csv")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)  # stdout is exactly one JSON document
    assert data["pool_items"] == 30 and data["truth"] == "held-back"
    assert "using the column 'key'" in result.stderr  # notes go to stderr under --json
    quiet = run("--quiet", "--json", "status")
    assert quiet.stderr == "" and json.loads(quiet.stdout)["pool_items"] == 30


def test_demo_mistakes_fail_before_any_work(env):
    Path("afile").write_text("x")
    assert_mistake(run("demo", "--fast", "--device", "tpu"), "device")
    assert_mistake(run("demo", "--fast", "--out", "afile"), "--out", "is a file")
    assert not env.exists()


def test_demo_ends_with_the_way_to_ones_own_data(env, monkeypatch):
    """The demo's last line names the commands that start a project on the user's own table (its
    study itself is `test_demo_fast_end_to_end`'s: here a stand-in result)."""
    from activebayes_cli import demo

    def study(st, config, folder, seed, device):
        curve = [{"labels": 10, "mean": 0.5, "sd": 0.0, "n": 1}]
        return {"curves": {"default": curve, "random": curve}, "standing": "level", "plot": "p.png", "database": "s.db",
                "results": "r.json", "arms": {}, "default_vs_random": {}, "settings": {"seeds": [0]}}  # fmt: skip

    monkeypatch.setattr(demo, "_active_learning", study)
    monkeypatch.delenv("COLUMNS", raising=False)  # a width asked for would wrap it (`_output.unwrapped_when_piped`)
    lines = run("demo", "--fast", "--out", "demo-out").stdout.strip().splitlines()
    assert lines[-1].startswith("Next, on your own table: activebayes init --name NAME, then activebayes pool add "), (
        {k: v for k, v in os.environ.items() if k in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE", "TERM")}, lines)  # one line: piped, unwrapped
    typed = run("--db", "mine.db", "demo", "--fast", "--out", "demo-out").stdout
    assert "activebayes --db sqlite:///mine.db init --name NAME" in " ".join(typed.split())


def test_pool_add_with_separate_truth_file(project):
    write_pool_csv(Path("pool.csv"), n=30)
    rows = Path("pool.csv").read_text().splitlines()
    Path("x.csv").write_text("\n".join(",".join(r.split(",")[:-1]) for r in rows) + "\n")
    Path("truth.csv").write_text("key,label\n" + "\n".join(f"{r.split(',')[0]},{r.split(',')[-1]}" for r in rows[1:]) + "\n")
    Path("short.csv").write_text("\n".join(Path("truth.csv").read_text().splitlines()[:-1]) + "\n")
    before = dump(project)
    assert_mistake(run("pool", "add", "x.csv", "--key-column", "id", "--truth", "short.csv"), "--truth", "no label for 1")
    assert_mistake(run("pool", "add", "pool.csv", "--key-column", "id", "--truth", "truth.csv"), "already holds labels")
    assert dump(project) == before
    result = run("--json", "pool", "add", "x.csv", "--key-column", "id", "--truth", "truth.csv", "--test-fraction", "0.2")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["truth"] == "held-back"
    data = json.loads(run("--json", "round", *TINY, "--k", "4", "--oracle", "truth").stdout)
    truth = dict(line.split(",") for line in Path("truth.csv").read_text().splitlines()[1:])
    assert [q["label"] for q in data["queries"]] == [truth[q["key"]] for q in data["queries"]]
    Path("truth.csv").write_text(Path("truth.csv").read_text().replace(",a", ",b"))
    before = dump(project)
    assert_mistake(run("round", *TINY, "--oracle", "truth"), "truth file", "changed")
    assert dump(project) == before
