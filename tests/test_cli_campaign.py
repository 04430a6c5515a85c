"""A labelling campaign through the `activebayes` command line: round, label, status, export and
report on a pool, and every mistake on the way (one line on stderr, exit code 2, database
unchanged), on SQLite and PostgreSQL. Tiny data, tiny epochs."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from cli_checks import assert_mistake
from test_cli import CLASSES, TINY, dump, run, write_pool_csv
from test_cli import env, pooled, project  # noqa: F401  (the fixtures)


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
        (["--model", "json:dumps"], ["--model", "json:dumps", "without defaults"]),
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
