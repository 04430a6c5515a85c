"""Label Studio interchange: `export --format label-studio` writes a round's queries as Label
Studio tasks (and the labelling config), `label --from EXPORT.json` reads Label Studio's JSON
export back; every mistake is one line, exit 2, database unchanged, on SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from activebayes.data.label_studio import answers_from_export, disputes, labelling_config, tasks_from_queries
from activebayes.errors import DataError
from activebayes.store import PoolStore
from cli_checks import assert_mistake, db_dump, ok, run
from test_cli import write_pool_csv
from test_cli_images import write_images
from test_cli_label import open_round

TINY = ("--epochs", "1", "--samples", "2", "--device", "cpu")


def annotated(tasks: list[dict], labels: dict[str, str | None], *, cancelled: set[str] = frozenset()) -> list[dict]:
    """`tasks` as Label Studio's JSON export gives them back: an id, the data, the predictions,
    and per task the annotation of `labels[key]` (none for None); a key in `cancelled` gets a
    cancelled (skipped) annotation only."""
    out = []
    for i, task in enumerate(tasks, start=1):
        key = task["data"]["activebayes_key"]
        annotations = []
        if key in cancelled:
            annotations.append({"id": 100 + i, "completed_by": 1, "result": [], "was_cancelled": True,
                                "ground_truth": False, "created_at": "2026-01-02T10:00:00.000000Z",
                                "updated_at": "2026-01-02T10:00:00.000000Z", "lead_time": 1.5, "task": i})  # fmt: skip
        elif labels.get(key) is not None:
            result = {"id": f"r{i}", "type": "choices", "from_name": "label", "to_name": "text", "origin": "manual",
                      "value": {"choices": [labels[key]]}}  # fmt: skip
            annotations.append({"id": 100 + i, "completed_by": 1, "result": [result], "was_cancelled": False,
                                "ground_truth": False, "created_at": "2026-01-02T10:00:00.000000Z",
                                "updated_at": "2026-01-02T10:00:00.000000Z", "lead_time": 3.2, "task": i})  # fmt: skip
        out.append({"id": i, "annotations": annotations, "drafts": [], "predictions": task.get("predictions", []),
                    "data": task["data"], "meta": {}, "created_at": "2026-01-01T09:00:00.000000Z",
                    "updated_at": "2026-01-02T10:00:00.000000Z", "inner_id": i, "project": 1})  # fmt: skip
    return out


def write_json(name: str, value) -> str:
    Path(name).write_text(json.dumps(value), encoding="utf-8")
    return name


@pytest.fixture
def waiting(cli_db, tmp_path):
    """Project 'blobs' (classes a, b, c) from a 30-row CSV, round 1 waiting for 4 answers; returns
    (db url, the exported tasks, the CSV's labels by key)."""
    write_pool_csv(tmp_path / "pool.csv", n=30)
    ok("init", "--name", "blobs", "--classes", "a,b,c")
    ok("pool", "add", "pool.csv", "--key-column", "id", "--label-column", "label", "--test-fraction", "0.2")
    ok("round", *TINY, "--k", "4")
    exported = json.loads(ok("--json", "export", "--format", "label-studio", "--out", "tasks.json", "--config", "ls.xml").stdout)
    assert exported["round"] == 1 and exported["tasks"] == 4 and exported["open"] == 4
    assert exported["predictions"] == 0  # round 1 had no labels: nothing fitted, nothing predicted
    truth = {r["id"]: r["label"] for r in csv.DictReader((tmp_path / "pool.csv").open())}
    return cli_db, json.loads(Path("tasks.json").read_text()), truth


def test_round_trip_through_label_studio(waiting):
    db, tasks, truth = waiting
    keys = [t["data"]["activebayes_key"] for t in tasks]
    with PoolStore(db) as store:
        queries = store.queries("blobs", 1)
    assert keys == [q.key for q in queries]  # by rank
    first = tasks[0]["data"]
    assert set(first) == {"activebayes_key", "activebayes_project", "activebayes_round", "score", "rank", "text"}
    assert first["activebayes_project"] == "blobs" and first["activebayes_round"] == 1 and first["rank"] == 1
    assert first["text"].splitlines()[0].startswith("f0: ") and len(first["text"].splitlines()) == 4
    assert "predictions" not in tasks[0]  # a cold-start round predicts nothing
    config = Path("ls.xml").read_text()
    assert '<Text name="text" value="$text"/>' in config and '<Choices name="label" toName="text"' in config
    assert [line.strip() for line in config.splitlines() if "<Choice " in line] == [f'<Choice value="{c}"/>' for c in "abc"]

    # three answered, one cancelled in Label Studio: three recorded, one skipped and counted
    export = annotated(tasks, {k: truth[k] for k in keys[:3]}, cancelled={keys[3]})
    summary = json.loads(ok("--json", "label", "--from", write_json("project-1-at-2026.json", export), "--who", "ann").stdout)
    assert summary["recorded"] == 3 and summary["round_answers"] == 3 and summary["skipped"] == 1 and summary["remaining"] == 1
    human = ok("label", "--from", "project-1-at-2026.json")
    assert "1 task without an annotation (none, or cancelled) skipped." in human.stdout
    with PoolStore(db) as store:
        _, labelled, values = store.labels("blobs", split="pool")
        observations = store.observations("blobs")
    assert dict(zip(labelled, values)) == {k: truth[k] for k in keys[:3]}
    assert {o["source"] for o in observations if o["key"] in keys} == {"file"}

    # the last one answered later (a second annotation, the first one cancelled): the round closes, the next runs
    export[3]["annotations"].append({**export[0]["annotations"][0], "updated_at": "2026-01-03T08:00:00.000000Z",
                                     "result": [{"type": "choices", "from_name": "label", "to_name": "text",
                                                 "value": {"choices": [truth[keys[3]]]}}]})  # fmt: skip
    assert json.loads(ok("--json", "label", "--from", write_json("again.json", export)).stdout)["recorded"] == 1
    nxt = json.loads(ok("--json", "round", *TINY, "--k", "3").stdout)
    assert nxt["round"] == 2 and nxt["labelled"] == 4 and len(nxt["queries"]) == 3
    hidden = json.loads(ok("--json", "export", "--format", "label-studio", "--out", "round2.json").stdout)
    assert hidden["round"] == 2 and hidden["predictions"] == 0  # the model's guesses stay out unless asked for
    assert not any("predictions" in t for t in json.loads(Path("round2.json").read_text()))
    assert "the model's guesses stay hidden unless --show-model-guess" in " ".join(
        ok("export", "--format", "label-studio", "--out", "round2.json", "--force").stdout.split())
    second = json.loads(ok("--json", "export", "--format", "label-studio", "--out", "round2.json", "--show-model-guess", "--force").stdout)
    assert second["round"] == 2 and second["predictions"] == 3
    # round 2 was fitted: with --show-model-guess each task carries the round's prediction for its item as a pre-annotation
    with PoolStore(db) as store:
        predicted = {q.key: q.prediction for q in store.queries("blobs", 2)}
        posterior = store.rounds("blobs")[1].posterior
    for task in json.loads(Path("round2.json").read_text()):
        guess = predicted[task["data"]["activebayes_key"]]
        assert guess["label"] in ("a", "b", "c") and 1 / 3 <= guess["probability"] <= 1
        assert task["predictions"] == [{"model_version": f"activebayes {posterior} round 2", "score": guess["probability"],
                                        "result": [{"from_name": "label", "to_name": "text", "type": "choices",
                                                    "value": {"choices": [guess["label"]]}}]}]  # fmt: skip
    assert json.loads(ok("--json", "export", "--format", "label-studio", "--round", "1", "--out", "r1.json").stdout)["open"] == 0


def test_mistakes_change_nothing(waiting):
    db, tasks, truth = waiting
    keys = [t["data"]["activebayes_key"] for t in tasks]
    good = annotated(tasks, {k: truth[k] for k in keys})
    before = db_dump(db)
    Path("broken.json").write_text('[{"data": {"activebayes_key": ', encoding="utf-8")
    assert_mistake(run("label", "--from", "broken.json"), "broken.json", "not valid JSON")
    assert_mistake(run("label", "--from", write_json("dict.json", {"tasks": []})), "dict.json", "list of Label Studio tasks")
    no_key = [dict(good[0], data={"text": "x"}), *good[1:]]
    assert_mistake(run("label", "--from", write_json("nokey.json", no_key)), "nokey.json' task 1", "activebayes_key")
    unknown = [dict(good[0], data={**good[0]["data"], "activebayes_key": "item-999"}), *good[1:]]
    assert_mistake(run("label", "--from", write_json("unknown.json", unknown)), "task 1", "item-999", "not an item")
    outside = annotated(tasks, {keys[0]: truth[keys[0]], keys[1]: "zebra"})
    assert_mistake(run("label", "--from", write_json("outside.json", outside)), "task 2", "'zebra'", "not one of the classes")
    unannotated = annotated(tasks, {}, cancelled={keys[0]})
    assert_mistake(run("label", "--from", write_json("none.json", unannotated)), "no annotated task", "4 tasks")
    twice = [*good, annotated(tasks[:1], {keys[0]: "c" if truth[keys[0]] != "c" else "a"})[0]]
    assert_mistake(run("label", "--from", write_json("twice.json", twice)), "task 5", "task 1 gave")
    assert_mistake(run("export", "--format", "label-studio", "--out", "tasks.csv"), "unknown file type", ".json")
    assert_mistake(run("export", "--format", "label-studio", "--round", "7", "--out", "t.json"), "no round 7")
    assert_mistake(run("export", "labels.csv", "--round", "1"), "--round", "label-studio")
    assert db_dump(db) == before


def test_an_existing_tasks_file_or_config_is_kept_without_force(waiting):
    db, tasks, _ = waiting
    written = {name: Path(name).read_text() for name in ("tasks.json", "ls.xml")}
    before = db_dump(db)
    assert_mistake(run("export", "--format", "label-studio", "--out", "tasks.json"),
                   "the Label Studio tasks file tasks.json already exists", "pass --force to overwrite it")  # fmt: skip
    assert_mistake(run("export", "--format", "label-studio", "--out", "new.json", "--config", "ls.xml"),
                   "the labelling config ls.xml already exists", "choose another --config FILE")  # fmt: skip
    assert {name: Path(name).read_text() for name in written} == written and not Path("new.json").exists()
    ok("export", "--format", "label-studio", "--out", "tasks.json", "--config", "ls.xml", "--force")
    assert json.loads(Path("tasks.json").read_text()) == tasks and db_dump(db) == before


def test_image_folder_tasks_carry_image_paths(cli_db, tmp_path):
    folder = write_images(tmp_path / "imgs", n=4)
    ok("init", "--name", "shapes")
    ok("pool", "add", str(folder), "--labels-from-folders", "--test-fraction", "0.25")
    ok("round", "--model", "cnn", "--k", "3", *TINY)
    ok("export", "--format", "label-studio", "--out", "tasks.json")
    tasks = json.loads(Path("tasks.json").read_text())
    assert len(tasks) == 3
    originals = {f.read_bytes() for f in folder.glob("*/*.png")}
    for task in tasks:  # labels from sub-folders: copies whose names, like the keys, do not show the class folder
        data = task["data"]
        assert data["activebayes_key"].startswith("img-") and "text" not in data
        assert Path(data["image"]).parent == Path("tasks-images").resolve() and data["activebayes_key"] in Path(data["image"]).name
        assert Path(data["image"]).read_bytes() in originals
    printed = ok("export", "--format", "label-studio", "--out", "tasks.json", "--force").stdout
    assert '<Image name="image" value="$image"/>' in printed and '<Choice value="crosses"/>' in printed
    assert "--image-url" in " ".join(printed.split())  # bare paths: the way to reach the files is named
    served = ok("export", "--format", "label-studio", "--out", "served.json", "--image-url", "/data/local-files/?d=imgs/").stdout
    for task in json.loads(Path("served.json").read_text()):
        assert task["data"]["image"] == "/data/local-files/?d=imgs/" + Path(task["data"]["image"]).name  # within served-images/
        assert (Path("served-images") / Path(task["data"]["image"]).name).is_file()
    assert "--image-url" not in served
    before = Path("served.json").read_text()
    assert_mistake(run("export", "--format", "label-studio", "--out", "served.json", "--image-url", "http://host:8081"), "ending in / or =")
    assert_mistake(run("export", "labels.csv", "--image-url", "http://host/"), "--image-url", "label-studio")
    assert_mistake(run("export", "labels.csv", "--show-model-guess"), "--show-model-guess", "label-studio")
    assert Path("served.json").read_text() == before


def test_image_array_tasks_get_pngs(cli_db):
    np.save("x.npy", np.random.default_rng(0).uniform(size=(12, 8, 8)).astype(np.float32))
    ok("init", "--name", "arr", "--classes", "2")
    ok("pool", "add", "x.npy")  # keys are the row numbers
    open_round(cli_db, "arr", ["5", "2"])
    ok("export", "--format", "label-studio", "--out", "tasks.json", "--config", "c.xml")
    tasks = json.loads(Path("tasks.json").read_text())
    assert [t["data"]["activebayes_key"] for t in tasks] == ["5", "2"]
    assert [Path(t["data"]["image"]) for t in tasks] == [Path("tasks-images/001-5.png").resolve(), Path("tasks-images/002-2.png").resolve()]
    assert all(Path(t["data"]["image"]).is_file() for t in tasks)
    assert '<Choice value="1"/>' in Path("c.xml").read_text()
    Path("fresh-images").mkdir()
    (Path("fresh-images") / "mine.png").write_bytes(b"mine")
    assert_mistake(run("export", "--format", "label-studio", "--out", "fresh.json"), "the images folder fresh-images", "pass --force")
    assert not Path("fresh.json").exists() and [p.name for p in Path("fresh-images").iterdir()] == ["mine.png"]
    ok("export", "--format", "label-studio", "--out", "tasks.json", "--image-url", "http://localhost:8081/", "--force")
    assert [t["data"]["image"] for t in json.loads(Path("tasks.json").read_text())] == [
        "http://localhost:8081/001-5.png", "http://localhost:8081/002-2.png"]  # within tasks-images/, which is served
    # Label Studio's CSV export, one row per annotation: `id` numbers its tasks (1, 2), which are item keys here too;
    # the item is the activebayes_key column's
    with open("export.csv", "w", newline="") as fh:
        csv.writer(fh).writerows([["activebayes_key", "annotator", "id", "image", "label"], ["5", 1, 1, "a.png", "1"], ["2", 1, 2, "b.png", "0"]])
    assert json.loads(ok("--json", "label", "--from", "export.csv").stdout)["round_answers"] == 2
    with PoolStore(cli_db) as store:
        _, labelled, values = store.labels("arr", split="pool")
    assert dict(zip(labelled, values)) == {"5": "1", "2": "0"}


# ---- the pure functions --------------------------------------------------------------------------
class Q:
    def __init__(self, key: str, score: float, rank: int, prediction: dict | None = None) -> None:
        self.key, self.score, self.rank, self.prediction = key, score, rank, prediction


def test_tasks_with_predictions_and_the_config():
    queries = [Q("b", 0.2, 1), Q("a", 0.9, 0, {"label": "cat", "probability": 0.8})]
    images = {"a": "/x/a.png", "b": "/x/b.png"}
    assert not any("predictions" in t for t in tasks_from_queries(queries, project="p", round_number=2, images=images))  # not by default
    tasks = tasks_from_queries(queries, project="p", round_number=2, images=images, model_version="v1", pre_annotate=True)
    assert [t["data"]["activebayes_key"] for t in tasks] == ["a", "b"] and tasks[0]["data"]["image"] == "/x/a.png"
    assert tasks[0]["predictions"] == [{"model_version": "v1", "score": 0.8, "result": [
        {"from_name": "label", "to_name": "image", "type": "choices", "value": {"choices": ["cat"]}}]}]  # fmt: skip
    assert "predictions" not in tasks[1]
    # regression: the predictive mean as a number result, unscored
    (task,) = tasks_from_queries([Q("r", 0.5, 0, {"mean": 2.5, "sd": 0.3})], project="p", round_number=1, texts={"r": "x: 1"}, pre_annotate=True)
    assert task["predictions"] == [{"model_version": "activebayes", "result": [
        {"from_name": "label", "to_name": "text", "type": "number", "value": {"number": 2.5}}]}]  # fmt: skip
    assert '<Choice value="a &amp; b"/>' in labelling_config(["a & b"])
    assert '<Number name="label" toName="text"' in labelling_config(None, kind="text")


def test_answers_from_export_picks_the_latest_annotation_not_cancelled():
    def ann(choice, when, cancelled=False):
        return {"result": [{"type": "choices", "from_name": "label", "value": {"choices": [choice]}}],
                "was_cancelled": cancelled, "updated_at": when}  # fmt: skip

    tasks = [
        {"data": {"activebayes_key": "a"}, "annotations": [ann("y", "2026-01-02"), ann("x", "2026-01-01")]},
        {"data": {"activebayes_key": "b"}, "annotations": [ann("x", "2026-01-01"), ann("y", "2026-01-03", True)]},
        {"data": {"activebayes_key": 7}, "annotations": []},
        {"data": {"activebayes_key": "n"}, "annotations": [{"result": [{"type": "number", "value": {"number": 2.5}}]}]},
    ]
    assert answers_from_export(tasks) == [(1, "a", "y"), (2, "b", "x"), (3, "7", ""), (4, "n", "2.5")]
    with pytest.raises(DataError, match="task 2"):
        answers_from_export([tasks[0], {"annotations": []}])


def test_only_submitted_single_answers_of_this_project_are_labels():
    def ann(choices, who, when, cancelled=False):
        return {"result": [{"type": "choices", "from_name": "label", "value": {"choices": choices}}],
                "completed_by": who, "was_cancelled": cancelled, "updated_at": when}  # fmt: skip

    guess = [{"model_version": "m", "score": 0.9, "result": ann(["x"], 0, "")["result"]}]
    tasks = [
        {"data": {"activebayes_key": "p", "activebayes_project": "demo"}, "annotations": [], "predictions": guess},
        {"data": {"activebayes_key": "d"}, "annotations": [], "drafts": [{"result": ann(["x"], 1, "")["result"]}]},
        {"data": {"activebayes_key": "a"}, "annotations": [ann(["x"], 1, "2026-01-01"), ann(["y"], 2, "2026-01-02")]},
        {"data": {"activebayes_key": "u"}, "annotations": [ann(["y"], 1, "2026-01-03"), ann(["x"], 1, "2026-01-01")]},
        {"data": {"activebayes_key": "c"}, "annotations": [ann(["x"], 1, "2026-01-01"), ann([], 2, "2026-01-02", True)]},
    ]
    # a prediction or a draft is no answer; the latest submitted annotation not cancelled is the label
    assert answers_from_export(tasks, project="demo") == [(1, "p", ""), (2, "d", ""), (3, "a", "y"), (4, "u", "y"), (5, "c", "x")]
    # two annotators who differ are a dispute; one annotator's update, or a cancelled one, is not
    assert [disputes(t) for t in tasks] == [[], [], ["x", "y"], [], []]
    earlier = {"data": {"activebayes_key": "e"}, "annotations": [ann(["x", "y"], 1, "2026-01-01"), ann(["x"], 2, "2026-01-02")]}
    with pytest.raises(DataError, match=r"^task 6: the annotation chose 2 classes"):  # an earlier annotator's, too
        disputes(earlier, "task 6")
    with pytest.raises(DataError, match=r"task 1: the task was exported from project 'demo', not 'other'"):
        answers_from_export(tasks, project="other")
    with pytest.raises(DataError, match=r"task 1: the annotation chose 2 classes \('x', 'y'\)"):
        answers_from_export([{"data": {"activebayes_key": "m"}, "annotations": [ann(["x", "y"], 1, "2026-01-01")]}])
    typed = [{"data": {"activebayes_key": k}, "annotations": [{"result": [{"type": t, "from_name": "label", "value": v}]}]}
             for k, t, v in [("r", "rating", {"rating": 4}), ("t", "textarea", {"text": [" 101,5 "]}), ("n", "number", {"number": " 7 "}),
                             ("e", "number", {"number": " "})]]  # fmt: skip
    assert answers_from_export(typed) == [(1, "r", "4"), (2, "t", "101,5"), (3, "n", "7"), (4, "e", "")]  # read as the project writes numbers
    # Label Studio's JSON-MIN, one flat record per annotation, reads the same (tests/test_label_studio_exports.py)
    assert answers_from_export([{"activebayes_key": "m", "label": "x", "annotator": 1}]) == [(1, "m", "x")]


def test_label_studio_disputes_other_projects_and_csv_exports(waiting):
    db, tasks, truth = waiting
    keys = [t["data"]["activebayes_key"] for t in tasks]
    other = "a" if truth[keys[0]] != "a" else "b"
    export = annotated(tasks, {keys[0]: other, keys[1]: truth[keys[1]]})
    before = db_dump(db)
    foreign = [dict(export[0], data={**export[0]["data"], "activebayes_project": "elsewhere"}), *export[1:]]
    assert_mistake(run("label", "--from", write_json("foreign.json", foreign)), "task 1", "project 'elsewhere', not 'blobs'")
    multi = [dict(export[0], annotations=[{**export[0]["annotations"][0], "result": [
        {"type": "choices", "from_name": "label", "to_name": "text", "value": {"choices": ["a", "b"]}}]}])]  # fmt: skip
    assert_mistake(run("label", "--from", write_json("multi.json", multi)), "task 1", "chose 2 classes")
    assert db_dump(db) == before
    # Label Studio's CSV export: its `id` column numbers the tasks; the item is activebayes_key
    with open("export.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["activebayes_key", "annotator", "id", "label", "text"])
        writer.writerow([keys[1], 1, 1, truth[keys[1]], "f0: 1"])
    assert json.loads(ok("--json", "label", "--from", "export.csv").stdout)["recorded"] == 1
    # a second annotator answers the first task differently, later: the latest answer is recorded, the dispute named
    export[0]["annotations"].append({**export[0]["annotations"][0], "completed_by": 2, "updated_at": "2026-01-03T08:00:00.000000Z",
                                     "result": [{"type": "choices", "from_name": "label", "to_name": "text",
                                                 "value": {"choices": [truth[keys[0]]]}}]})  # fmt: skip
    summary = json.loads(ok("--json", "label", "--from", write_json("two.json", export)).stdout)
    assert summary["recorded"] == 1 and summary["disagreements"] == {keys[0]: [other, truth[keys[0]]]}
    with PoolStore(db) as store:
        _, labelled, values = store.labels("blobs", split="pool")
    assert dict(zip(labelled, values)) == {keys[0]: truth[keys[0]], keys[1]: truth[keys[1]]}
    assert f"the annotators disagree on 1 item, recorded with the latest answer: {keys[0]}" in " ".join(
        ok("label", "--from", "two.json").stdout.split())
