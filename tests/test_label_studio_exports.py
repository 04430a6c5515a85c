"""Label Studio's exports as people bring them back: JSON-MIN (one flat record per annotation),
a reviewer's ground-truth annotation, annotations "skipped" (Label Studio before 1.0), tasks with
predictions but no annotation, the CSV export with its annotator columns, and a label spelt in
another case than the class."""

from __future__ import annotations

import csv
import json

import pytest

from activebayes.data.label_studio import answers_from_export, export_tasks
from activebayes.errors import DataError
from activebayes.store import PoolStore
from cli_checks import assert_mistake, db_dump, ok, run
from test_label_studio import annotated, waiting, write_json  # noqa: F401 - waiting is a fixture

MIN_META = {"annotation_id": 11, "lead_time": 2.0, "created_at": "2026-01-02T10:00:00Z"}


def test_json_min_records_are_gathered_into_tasks_and_read_like_the_json_export():
    records = [
        {"activebayes_key": "a", "activebayes_round": 1, "id": 1, "label": "x", "annotator": 1, "updated_at": "2026-01-01", **MIN_META},
        {"activebayes_key": "a", "activebayes_round": 1, "id": 1, "label": "y", "annotator": 2, "updated_at": "2026-01-02", **MIN_META},
        {"activebayes_key": "b", "activebayes_round": 1, "id": 2, "annotator": None, "annotation_id": None},  # no annotation
        {"activebayes_key": "n", "id": 3, "label": [{"number": 2.5}], "annotator": 1, **MIN_META},
        {"activebayes_key": "m", "id": 4, "label": {"choices": ["x", "y"]}, "annotator": 1, **MIN_META},
    ]
    tasks = export_tasks(records)
    assert [t["data"] for t in tasks] == [{"activebayes_key": "a", "activebayes_round": 1}, {"activebayes_key": "b", "activebayes_round": 1},
                                          {"activebayes_key": "n"}, {"activebayes_key": "m"}]  # fmt: skip
    assert [len(t["annotations"]) for t in tasks] == [2, 0, 1, 1]
    assert answers_from_export(records[:4]) == [(1, "a", "y"), (2, "b", ""), (3, "n", "2.5")]  # the latest of two annotators
    with pytest.raises(DataError, match=r"task 4: the annotation chose 2 classes \('x', 'y'\)"):
        answers_from_export(records)
    with pytest.raises(DataError, match=r"task 2: expected an object with a \"data\" object \(a JSON-MIN record among JSON tasks\)"):
        answers_from_export([{"data": {"activebayes_key": "t"}, "annotations": []}, records[0]])


def test_a_ground_truth_annotation_is_the_label_and_a_skipped_one_is_none():
    def ann(choice, when, **flags):
        return {"result": [{"type": "choices", "from_name": "label", "value": {"choices": [choice]}}], "updated_at": when, **flags}

    tasks = [
        {"data": {"activebayes_key": "g"}, "annotations": [ann("x", "2026-01-01", ground_truth=True), ann("y", "2026-01-05")]},
        {"data": {"activebayes_key": "s"}, "annotations": [ann("x", "2026-01-01"), ann("y", "2026-01-02", skipped=True)]},
        {"data": {"activebayes_key": "o"}, "annotations": [ann("y", "2026-01-02", skipped=True)]},
    ]
    assert answers_from_export(tasks) == [(1, "g", "x"), (2, "s", "x"), (3, "o", "")]


def test_json_min_export_records_labels_and_names_the_disputes(waiting):
    db, tasks, truth = waiting
    keys = [t["data"]["activebayes_key"] for t in tasks]
    other = "a" if truth[keys[0]] != "a" else "b"

    def record(n, key, label=None, who=None, when=None):
        data = {k: v for k, v in tasks[n]["data"].items()}
        answer = {"label": label, "annotator": who, "annotation_id": 100 + n, "updated_at": when} if label is not None else {"annotation_id": None}
        return {**data, "id": n + 1, **answer}

    records = [record(0, keys[0], other, 1, "2026-01-01"), record(0, keys[0], truth[keys[0]], 2, "2026-01-02"),
               record(1, keys[1], truth[keys[1]], 1, "2026-01-01"), record(2, keys[2])]  # fmt: skip  (keys[3]: cancelled, no record)
    summary = json.loads(ok("--json", "label", "--from", write_json("project-1-min.json", records)).stdout)
    assert summary["recorded"] == 2 and summary["skipped"] == 1 and summary["disagreements"] == {keys[0]: [other, truth[keys[0]]]}
    with PoolStore(db) as store:
        _, labelled, values = store.labels("blobs", split="pool")
    assert dict(zip(labelled, values)) == {keys[0]: truth[keys[0]], keys[1]: truth[keys[1]]}


def test_predictions_without_annotations_record_nothing_and_a_label_in_another_case_is_refused(waiting):
    db, tasks, truth = waiting
    keys = [t["data"]["activebayes_key"] for t in tasks]
    guessed = annotated(tasks, {})
    for task in guessed:
        task["predictions"] = [{"model_version": "m", "score": 0.9, "result": [
            {"from_name": "label", "to_name": "text", "type": "choices", "value": {"choices": ["a"]}}]}]  # fmt: skip
    before = db_dump(db)
    assert_mistake(run("label", "--from", write_json("guessed.json", guessed)), "holds no annotated task", "4 tasks without an annotation")
    shouted = annotated(tasks, {keys[0]: f" {truth[keys[0]].upper()} "})
    assert_mistake(run("label", "--from", write_json("shouted.json", shouted)),
                   f"label {truth[keys[0]].upper()!r} is not one of the classes", f"write it {truth[keys[0]]!r}, as the class is spelled, on task 1")  # fmt: skip
    assert db_dump(db) == before


def test_the_csv_export_with_annotator_columns_and_a_task_not_annotated(waiting):
    db, tasks, truth = waiting
    keys = [t["data"]["activebayes_key"] for t in tasks]
    with open("project-1.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["activebayes_key", "activebayes_project", "annotation_id", "annotator", "created_at", "id", "label", "lead_time", "text"])
        writer.writerow([keys[0], "blobs", 7, "ann@example.org", "2026-01-02", 1, truth[keys[0]], 3.1, "f0: 1"])
        writer.writerow([keys[1], "blobs", "", "", "", 2, "", "", "f0: 2"])  # exported without an annotation
    before = db_dump(db)
    other = "a" if truth[keys[0]] != "a" else "b"
    with open("two.csv", "w", newline="") as fh:  # one row per annotation: a second annotator who differs
        csv.writer(fh).writerows([["activebayes_key", "annotator", "id", "label"], [keys[0], 1, 1, truth[keys[0]]], [keys[0], 2, 1, other]])
    assert_mistake(run("label", "--from", "two.csv"), f"has label {other!r} but line 2 gave {truth[keys[0]]!r}", "keep one of the two lines")
    assert db_dump(db) == before
    summary = json.loads(ok("--json", "label", "--from", "project-1.csv").stdout)
    assert summary["recorded"] == 1 and summary["skipped"] == 1
    with PoolStore(db) as store:
        _, labelled, values = store.labels("blobs", split="pool")
    assert dict(zip(labelled, values)) == {keys[0]: truth[keys[0]]}
