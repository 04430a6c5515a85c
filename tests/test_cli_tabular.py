"""Tabular projects out of the box: classes read from the labels when `init` has no --classes,
text columns one-hot encoded, features standardised (recorded, applied at every load), the
training sized to the labelled set and recorded in the round. Every mistake is one line, exit 2,
and leaves the database unchanged, on SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from cli_checks import assert_mistake, db_dump, ok, run

COLOURS = ("red", "green", "blue")
LABELS = ("class2", "class10", "class1")  # natural order: class1, class2, class10


def write_table(path: Path, n: int = 30, *, colour: bool = True, label: bool = True, labels=LABELS) -> Path:
    """Columns id, f0 (mean ~100, sd ~10), f1 (mean ~0, sd ~0.01), colour (text), label."""
    rng = np.random.default_rng(0)
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "f0", "f1", *(["colour"] if colour else []), *(["label"] if label else [])])
        for i in range(n):
            row = [f"r{i:02d}", f"{100 + 10 * rng.normal():.4f}", f"{0.01 * rng.normal():.6f}"]
            row += [COLOURS[i % 3]] if colour else []
            row += [labels[i % len(labels)]] if label else []
            writer.writerow(row)
    return path


@pytest.fixture
def db(cli_db):
    return cli_db


def project_settings(url: str) -> tuple[list[str], dict]:
    from activebayes.store import PoolStore

    with PoolStore(url, create=False) as store:
        info = store.project("t")
        return info.classes, info.settings


def file_features(path: Path) -> np.ndarray:
    """f0, f1 and the colour one-hot (blue, green, red), as in the file."""
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    return np.asarray(
        [[float(r["f0"]), float(r["f1"]), *(float(r.get("colour") == c) for c in ("blue", "green", "red"))] for r in rows]
    )


def test_classes_read_from_labels_text_one_hot_and_standardised(db):
    created = json.loads(ok("--json", "init", "--name", "t").stdout)
    assert created["classes"] is None
    write_table(Path("t.csv"))
    summary = json.loads(ok("--json", "pool", "add", "t.csv", "--key-column", "id", "--test-fraction", "0.2").stdout)
    assert summary["classes"] == ["class1", "class2", "class10"]
    assert summary["categorical"] == {"colour": ["blue", "green", "red"]}
    assert summary["features"] == [5] and summary["standardized"] is True

    classes, settings = project_settings(db)
    assert classes == ["class1", "class2", "class10"]
    spec = settings["features"]
    raw = file_features(Path("t.csv"))
    from activebayes.store import PoolStore

    with PoolStore(db, create=False) as store:
        rows = np.sort(np.asarray(store.candidates("t")[1]))  # the pool rows (none labelled yet)
        from activebayes.data import load_project_data

        data = load_project_data(store, "t")
    # statistics over the pool rows (the test split excluded); indicators left as they are
    f0, f1, colour = spec["columns"]
    assert [f0["name"], f1["name"], colour["name"]] == ["f0", "f1", "colour"]
    assert [f0["mean"], f1["mean"]] == pytest.approx(raw[rows, :2].mean(axis=0), rel=1e-5)
    assert [f0["scale"], f1["scale"]] == pytest.approx(raw[rows, :2].std(axis=0), rel=1e-4)
    assert colour["kind"] == "categorical" and colour["categories"] == ["blue", "green", "red"]
    assert data.feature_names == ["f0", "f1", "colour=blue", "colour=green", "colour=red"]
    with Path("t.csv").open(newline="") as fh:
        assert data.raw.tolist() == [[r["f0"], r["f1"], r["colour"]] for r in csv.DictReader(fh)]  # as in the file
    mean = np.asarray([f0["mean"], f1["mean"], 0, 0, 0])
    scale = np.asarray([f0["scale"], f1["scale"], 1, 1, 1])
    assert data.x == pytest.approx(((raw - mean) / scale).astype(np.float32), abs=1e-5)

    # a round fits on the standardised features with the sized default training, recorded
    first = json.loads(ok("--json", "round", "--device", "cpu", "--samples", "2", "--k", "10", "--oracle", "truth").stdout)
    assert "training" not in first["posterior_settings"]  # cold start: nothing fitted
    second = json.loads(ok("--json", "round", "--device", "cpu", "--samples", "2", "--k", "4", "--oracle", "truth").stdout)
    training = second["posterior_settings"]["training"]
    assert training == {
        "rule": "min-steps", "labelled": 10, "batch_size": 64, "min_epochs": 50, "min_steps": 500,
        "prior_precision": 1.0, "epochs": 500, "steps": 500, "weight_decay": pytest.approx(0.1),
    }  # fmt: skip
    assert set(second["metrics"]) >= {"accuracy", "nll"}
    # a human's round file shows the features as in the file, not standardised
    json.loads(ok("--json", "round", "--device", "cpu", "--samples", "2", "--epochs", "1", "--k", "2", "--show-model-guess").stdout)
    with Path("t-round-3.csv").open(newline="") as fh:
        header, *lines = list(csv.reader(fh))
    assert header[4:] == ["predicted", "probability", "f0", "f1", "colour"]
    with Path("t.csv").open(newline="") as fh:
        by_key = {r["id"]: [r["f0"], r["f1"], r["colour"]] for r in csv.DictReader(fh)}
    for line in lines:
        assert line[6:] == by_key[line[0]]


def test_no_standardize_keeps_raw_features(db):
    ok("init", "--name", "t", "--classes", "class1,class2,class10")
    write_table(Path("t.csv"), colour=False)
    summary = json.loads(ok("--json", "pool", "add", "t.csv", "--key-column", "id", "--no-standardize").stdout)
    assert summary["standardized"] is False and summary["categorical"] == {}
    _, settings = project_settings(db)
    assert settings["features"]["standardize"] is False
    assert [(c["mean"], c["scale"]) for c in settings["features"]["columns"]] == [(0.0, 1.0)] * 2
    from activebayes.data import load_project_data
    from activebayes.store import PoolStore

    with PoolStore(db, create=False) as store:
        data = load_project_data(store, "t")
    assert data.x == pytest.approx(file_features(Path("t.csv"))[:, :2].astype(np.float32))


def test_unseen_class_in_an_answer_is_one_line(db):
    """Classes read at `pool add` are the project's: an answer outside them later is refused."""
    ok("init", "--name", "t")
    write_table(Path("t.csv"), label=False, n=12)
    Path("truth.csv").write_text("key,label\n" + "".join(f"r{i:02d},{LABELS[i % 3]}\n" for i in range(12)))
    summary = json.loads(ok("--json", "pool", "add", "t.csv", "--key-column", "id", "--truth", "truth.csv").stdout)
    assert summary["classes"] == ["class1", "class2", "class10"]
    Path("answers.csv").write_text("key,label\nr00,class3\n")
    before = db_dump(db)
    assert_mistake(run("label", "--from", "answers.csv"), "class3")
    assert db_dump(db) == before


@pytest.mark.parametrize(
    "table, init, args, words",
    [
        ({}, [], ["--categorical", "error"], ["column 'colour' is not a number"]),
        ({"mixed": True}, [], [], ["column 'f0' is not a number", "numeric or categorical"]),
        ({"label": False}, [], [], ["--classes", "no labels", "--label-column"]),
        ({"labels": ("only",)}, [], [], ["--classes", "1 distinct", "at least 2"]),
        ({"labels": ("a", "zebra", "b")}, ["--classes", "a,b"], [], ["zebra", "not one of the classes"]),
        ({}, [], ["--categorical", "maybe"], ["--categorical"]),
    ],
)
def test_tabular_mistakes_leave_database_unchanged(db, table, init, args, words):
    ok("init", "--name", "t", *init)
    table = dict(table)  # the parameter is shared by both backends' runs
    mixed = table.pop("mixed", False)
    write_table(Path("t.csv"), **table)
    if mixed:
        lines = Path("t.csv").read_text().splitlines()
        lines[4] = lines[4].replace(lines[4].split(",")[1], "abc")
        Path("t.csv").write_text("\n".join(lines) + "\n")
    before = db_dump(db)
    assert_mistake(run("pool", "add", "t.csv", "--key-column", "id", *args), *words)
    assert db_dump(db) == before
