"""The `activebayes` command line: every command, and every user mistake (one line on stderr,
exit code 2, database unchanged). Tiny data, tiny epochs."""

from __future__ import annotations

import csv
import importlib.util
import io
import json
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
    assert_mistake(run("init", "--name", "blobs", "--classes", "3"), "already exists")
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


# ---- round ---------------------------------------------------------------------------------------
def test_round_before_any_data(project):
    before = dump(project)
    assert_mistake(run("round", *TINY), "no data yet", "pool add")
    assert dump(project) == before


@pytest.mark.parametrize(
    "args, words",
    [
        (["--model", "no_such_module_xyz:make"], ["cannot import", "no_such_module_xyz"]),
        (["--model", "json:no_such_factory"], ["no attribute", "no_such_factory"]),
        (["--model", "json"], ["pkg.mod:factory"]),
        (["--model", "json:dumps"], ["--model", "failed"]),
        (["--model", "cnn"], ["--model"]),
        (["--posterior", "nope"], ["posterior", "nope"]),
        (["--posterior", "gp"], ["regression", "mc-dropout"]),
        (["--acquisition", "nope"], ["acquisition", "nope"]),
        (["--k", "0"], ["--k"]),
        (["--device", "tpu"], ["device"]),
        (["--csv", "missing/r.csv"], ["--csv"]),
    ],
)
def test_round_mistakes_leave_database_unchanged(pooled, args, words):
    before = dump(pooled)
    assert_mistake(run("round", *TINY, *args), *words)
    assert dump(pooled) == before


def test_round_with_user_factory(pooled):
    Path("mynet.py").write_text(
        "from torch import nn\n"
        "def make():\n"
        "    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.5), nn.Linear(8, 3))\n"
        "def wrong():\n"
        "    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.5), nn.Linear(8, 5))\n"
    )
    before = dump(pooled)
    assert_mistake(run("round", *TINY, "--model", "mynet:wrong"), "logits", "3")
    assert dump(pooled) == before
    first = run("--json", "round", *TINY, "--k", "4", "--model", "mynet:make", "--oracle", "truth")
    assert first.exit_code == 0, first.output
    second = json.loads(run("--json", "round", *TINY, "--k", "4", "--model", "mynet:make", "--oracle", "truth").stdout)
    assert second["round"] == 2 and second["labelled"] == 4 and second["status"] == "done"
    assert 0.0 <= second["metrics"]["accuracy"] <= 1.0


def test_interrupted_round_is_resumed_not_doubled(pooled):
    from activebayes.store import PoolStore

    with PoolStore(f"sqlite:///{pooled}") as store:  # a round killed right after it started
        store.start_round("blobs", posterior="mc-dropout", acquisition="bald", seed=1)
    result = run("--json", "round", *TINY, "--k", "5", "--oracle", "truth")
    assert result.exit_code == 0, result.output
    assert "resuming round 1" in result.stderr
    data = json.loads(result.stdout)
    assert data["round"] == 1 and data["status"] == "done" and len(data["queries"]) == 5
    assert [r["number"] for r in json.loads(run("--json", "status").stdout)["rounds"]] == [1]


def test_human_round_then_label_from_csv(pooled):
    result = run("round", *TINY, "--k", "5")
    assert result.exit_code == 0, result.output
    shown = " ".join(result.stdout.split())  # 3 classes, k = 5: the default --first auto's typical items
    assert "blobs-round-1.csv" in result.stdout and "(TypiClust's typical items: no labels yet, 3 classes)" in shown
    rows = list(csv.reader(Path("blobs-round-1.csv").open()))
    assert rows[0][:4] == ["key", "label", "score", "rank"] and len(rows) == 6 and all(r[1] == "" for r in rows[1:])
    keys = [r[0] for r in rows[1:]]
    for key in keys:
        assert key in result.stdout
    status = json.loads(run("--json", "status").stdout)
    assert status["rounds"][0]["status"] == "queried" and "label" in status["next"]

    # a second round while answers are pending is refused, writing nothing
    before = dump(pooled)
    assert_mistake(run("round", *TINY), "still waits for 5", "activebayes label")
    assert dump(pooled) == before

    truth = {r["id"]: r["label"] for r in csv.DictReader(Path("pool.csv").open())}
    with Path("blobs-round-1.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["key", "label"])
        writer.writerows([[k, truth[k]] for k in keys])
    result = run("label", "--from", "blobs-round-1.csv", "--who", "ann")
    assert result.exit_code == 0, result.output
    assert "Recorded 5" in result.stdout
    run("export", "labels.csv")
    exported = [r for r in csv.DictReader(Path("labels.csv").open()) if r["split"] == "pool"]
    assert {(r["key"], r["label"], r["who"], r["source"], r["round"]) for r in exported} == {
        (k, truth[k], "ann", "file", "1") for k in keys
    }
    assert all(r["time"] for r in exported)
    # the same file again is harmless
    assert run("label", "--from", "blobs-round-1.csv", "--who", "ann").exit_code == 0
    assert json.loads(run("--json", "status").stdout)["labelled"] == 5

    result = run("--json", "round", *TINY, "--k", "5")
    data = json.loads(result.stdout)
    assert data["round"] == 2 and data["labelled"] == 5 and len(data["queries"]) == 5
    assert "accuracy" in data["metrics"]
    assert [r["status"] for r in json.loads(run("--json", "status").stdout)["rounds"]] == ["done", "queried"]


@pytest.mark.parametrize(
    "content, words",
    [
        ("key,label\nitem-000,a,extra\n", ["line 2", "expected 2 fields"]),
        ("key,label\nitem-000,zebra\n", ["zebra", "classes"]),
        ("key,label\nnot-an-item,a\n", ["not-an-item"]),
        ("key,label\nitem-000,a\nitem-000,b\n", ["item-000", "line 2 gave"]),
        ("key,label\n", ["no answers"]),
    ],
)
def test_label_mistakes_leave_database_unchanged(pooled, content, words):
    Path("answers.csv").write_text(content)
    before = dump(pooled)
    assert_mistake(run("label", "--from", "answers.csv"), *words)
    assert dump(pooled) == before


def test_label_other_mistakes(pooled):
    before = dump(pooled)
    assert_mistake(run("label", "--from", "missing.csv"), "no file at")
    assert_mistake(run("label"), "nothing to label", "activebayes round")
    assert_mistake(run("label", "--round", "7", "--from", "pool.csv"), "no round 7")
    assert dump(pooled) == before


def test_label_without_round_is_recorded_without_one(pooled):
    Path("answers.csv").write_text("item-001,b\nitem-003,a\n")  # two pool items (item-002 is a test item)
    result = run("--json", "label", "--from", "answers.csv")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "project": "blobs", "round": None, "recorded": 2, "round_answers": 0, "other_pool": 2, "test": 0, "evaluation": 0,
        "relabelled": 0, "unchanged": 0, "skipped": 0, "remaining": 0,
    }  # fmt: skip


def test_status_export_report_after_rounds(pooled):
    for _ in range(3):
        assert run("round", *TINY, "--k", "5", "--oracle", "truth").exit_code == 0
    status = json.loads(run("--json", "status").stdout)
    assert [r["labelled_count"] for r in status["rounds"]] == [0, 5, 10]
    assert all("accuracy" in r["metrics"] for r in status["rounds"][1:])
    assert status["labelled"] == 15 and "activebayes round" in status["next"]
    text = run("status").stdout  # each metric has its own column (tests/test_cli_global.py)
    accuracy = f"{status['rounds'][-1]['metrics']['accuracy']:.4g}"
    assert "accuracy" in text and accuracy in text and "labelled: 15" in text

    exported = json.loads(Path("out.json").read_text()) if run("export", "out.json").exit_code == 0 else None
    pool = [i for i in exported["items"] if i["split"] == "pool"]
    assert len(pool) == 15 and {i["round"] for i in pool} == {1, 2, 3}
    assert {i["who"] for i in pool} == {"truth"} and {i["source"] for i in pool} == {"oracle"}
    again = run("label", "--from", "out.json")  # export's own JSON reads back: every label is recorded already
    assert again.exit_code == 0 and "repeated an item's current label" in " ".join(again.output.split())
    Path("broken.json").write_text(json.dumps({"project": "p", "items": [pool[0], {"key": pool[1]["key"]}]}))
    before = dump(pooled)
    assert_mistake(run("label", "--from", "broken.json"), "broken.json' item 2", '"label"')
    assert dump(pooled) == before

    result = run("--json", "report", "--out", "plots")
    assert result.exit_code == 0, result.output
    files = json.loads(result.stdout)["files"]
    assert sorted(Path(f).name for f in files) == ["acquisition.png", "learning-curve.png"]
    for f in files:
        assert Path(f).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert run("report", "--all", "--out", "plots-all").exit_code == 0
    assert Path("plots-all/learning-curve.png").exists()


def test_truth_answering_a_persons_round_says_so(pooled):
    """`round --oracle truth` while a person's round waits: it answers that round's open queries
    and closes it, and says so (nothing had stopped); a --k above the candidates is pointed out."""
    assert run("round", *TINY, "--k", "5").exit_code == 0
    result = run("round", *TINY, "--oracle", "truth")
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "answering round 1's 5 open queries from the truth (--oracle truth) and closing it" in said and "resuming" not in said
    result = run("round", *TINY, "--k", "1000", "--oracle", "truth")
    assert "--k 1000 is more than the 40 unlabelled pool items: this round asks for all of them" in " ".join(result.output.split())
    assert "Every pool item is labelled now: `activebayes export labels.csv` writes them out" in " ".join(result.output.split())


def test_ctrl_c_in_a_round_says_how_to_resume(pooled, monkeypatch):
    """Ctrl-C while a round fits: one line saying which round stopped and how to resume or discard
    it, and the shell's exit code for Ctrl-C (130)."""
    from activebayes.loop import ActiveLearningLoop

    def interrupted(self):
        self.hook("fit")
        raise KeyboardInterrupt

    monkeypatch.setattr(ActiveLearningLoop, "step", interrupted)
    result = run("round", *TINY)
    assert result.exit_code == 130
    assert result.stderr.strip() == ("interrupted: round 1 stopped while fitting the posterior; `activebayes round` resumes it "
                                     "(`activebayes round --restart-round` discards it)")


def test_export_to_stdout(pooled):
    """`export -` writes the labels alone on stdout (csv, or --format json) and says so on
    stderr; with --json, or as Label Studio tasks, it is refused in one line."""
    assert run("round", *TINY, "--k", "3", "--oracle", "truth").exit_code == 0
    written = run("export", "-")
    assert written.exit_code == 0 and written.stderr.strip() == "Wrote 18 labelled items of blobs to stdout"  # 3 answered, 15 test items
    rows = list(csv.DictReader(io.StringIO(written.stdout)))
    assert len(rows) == 18 and {r["split"] for r in rows} == {"pool", "test"} and list(rows[0])[:4] == ["key", "row", "split", "label"]
    assert len(json.loads(run("export", "-", "--format", "json").stdout)["items"]) == 18
    before = dump(pooled)
    refused = run("--json", "export", "-")
    assert refused.exit_code == 2 and refused.stdout == "" and "leave --json out" in json.loads(refused.stderr)["error"]
    assert_mistake(run("export", "-", "--format", "label-studio"), "export -", "name a .json file")
    assert dump(pooled) == before


def test_report_without_rounds(pooled):
    before = dump(pooled)
    assert_mistake(run("report"), "no rounds yet", "activebayes round")
    assert dump(pooled) == before
    assert not Path("activebayes-report").exists()


def test_changed_data_file_is_refused(pooled):
    Path("pool.csv").write_text(Path("pool.csv").read_text().replace("item-000", "item-xyz"))
    before = dump(pooled)
    assert_mistake(run("round", *TINY), "changed")
    assert dump(pooled) == before


def test_oracle_truth_needs_labels_in_the_data(project):
    write_pool_csv(Path("pool.csv"), n=30)
    text = "\n".join(",".join(line.split(",")[:-1]) for line in Path("pool.csv").read_text().splitlines())
    Path("nolabels.csv").write_text(text + "\n")
    assert run("pool", "add", "nolabels.csv", "--key-column", "id").exit_code == 0
    before = dump(project)
    assert_mistake(run("round", *TINY, "--oracle", "truth"), "no held-back truth", "activebayes label")
    assert dump(project) == before
    assert_mistake(run("pool", "add", "nolabels.csv", "--test-fraction", "0.2"), "already has a pool")


def test_every_item_labelled_stops_rounds(project):
    write_pool_csv(Path("pool.csv"), n=12)
    assert run("pool", "add", "pool.csv", "--key-column", "id").exit_code == 0
    assert run("round", *TINY, "--k", "12", "--oracle", "truth").exit_code == 0
    before = dump(project)
    assert_mistake(run("round", *TINY, "--oracle", "truth"), "every pool item", "export")
    assert dump(project) == before


def test_a_person_s_last_round_is_closed_when_nothing_is_left_to_ask(project):
    """A person answers the round that took the last items: `round` closes it (it stayed
    `queried` for good before, since the refusal came first) and says so, then refuses."""
    write_pool_csv(Path("pool.csv"), n=12)
    assert run("pool", "add", "pool.csv", "--key-column", "id").exit_code == 0
    asked = json.loads(run("--json", "round", *TINY, "--k", "12").stdout)
    truth = {row.split(",")[0]: row.split(",")[-1] for row in Path("pool.csv").read_text().splitlines()[1:]}
    Path("answers.csv").write_text("key,label\n" + "".join(f"{q['key']},{truth[q['key']]}\n" for q in asked["queries"]))
    assert run("label", "--from", "answers.csv").exit_code == 0
    closed = run("round", *TINY)
    assert closed.exit_code == 0 and "round 1 is closed with all its answers" in " ".join(closed.stdout.split())
    assert json.loads(run("--json", "status").stdout)["rounds"][-1]["status"] == "done"
    assert_mistake(run("round", *TINY), "every pool item", "export")


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


# ---- PostgreSQL through the same URL option ------------------------------------------------------




def pg_dump(url: str) -> dict[str, list]:
    from sqlalchemy import create_engine, inspect, text

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return {t: sorted(map(tuple, conn.execute(text(f'SELECT * FROM "{t}"')))) for t in inspect(conn).get_table_names()}
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_postgres_campaign(env, pg_url, monkeypatch):
    monkeypatch.setenv("ACTIVEBAYES_DB", pg_url)
    write_pool_csv(Path("pool.csv"))
    assert run("init", "--name", "blobs", "--classes", ",".join(CLASSES)).exit_code == 0
    assert run("pool", "add", "pool.csv", "--key-column", "id", "--test-fraction", "0.25").exit_code == 0
    for _ in range(2):
        assert run("round", *TINY, "--k", "5", "--oracle", "truth").exit_code == 0
    before = pg_dump(pg_url)
    Path("answers.csv").write_text("item-000,zebra\n")
    assert_mistake(run("label", "--from", "answers.csv"), "zebra")
    assert_mistake(run("round", *TINY, "--model", "no_such_module_xyz:f"), "no_such_module_xyz")
    assert pg_dump(pg_url) == before
    status = json.loads(run("--json", "status").stdout)
    assert status["labelled"] == 10 and [r["status"] for r in status["rounds"]] == ["done", "done"]
    assert not env.exists()  # nothing was written to the default SQLite file


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
