"""The round file `activebayes round` writes for a person: one a project and round, never
overwritten; its columns (score, rank, the item's features, clashing names renamed, an image
pool's PNGs); filled in, it is what `label --from` reads."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from activebayes.store import PoolStore
from cli_checks import assert_mistake, db_dump, ok, run
from test_cli_round import TINY, add_project
from test_cli_round import db, pooled  # noqa: F401  (the fixtures)


def rows_of(path: str | Path) -> list[list[str]]:
    with Path(path).open(newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def pool_features() -> dict[str, list[str]]:
    return {r[0]: r[1:5] for r in rows_of("pool.csv")[1:]}


# ---- round files ---------------------------------------------------------------------------------
def test_round_files_are_per_project_and_never_overwritten(db):
    add_project("first")
    add_project("second")
    result = ok("--project", "first", "round", *TINY, "--k", "3")
    assert "first-round-1.csv" in result.stdout and not Path("round-1.csv").exists()
    filled = [r[:1] + ["a"] + r[2:] for r in rows_of("first-round-1.csv")[1:]]
    with Path("first-round-1.csv").open("a", newline="") as fh:  # a person fills in the form
        csv.writer(fh).writerows(filled)
    text = Path("first-round-1.csv").read_text()

    # the second project's round 1 has its own file
    data = json.loads(ok("--json", "--project", "second", "round", *TINY, "--k", "3").stdout)
    assert data["csv"] == "second-round-1.csv" and len(rows_of("second-round-1.csv")) == 4
    assert Path("first-round-1.csv").read_text() == text

    # a round whose file exists is refused before anything is recorded, naming the file
    ok("--project", "first", "round", *TINY, "--k", "3", "--restart-round", "--csv", "other.csv")  # round 2 waits
    Path("first-round-3.csv").write_text("key,label\nitem-000,a\n")
    before = db_dump(db)
    assert_mistake(run("--project", "first", "round", *TINY, "--restart-round"), "first-round-3.csv", "--force")
    assert db_dump(db) == before
    assert Path("first-round-3.csv").read_text() == "key,label\nitem-000,a\n"
    Path("mine.csv").write_text("precious\n")
    assert_mistake(run("--project", "first", "round", *TINY, "--restart-round", "--csv", "mine.csv"), "mine.csv", "--force")
    assert_mistake(run("--project", "first", "round", *TINY, "--restart-round", "--csv", "."), "--csv", "folder")
    assert db_dump(db) == before
    assert Path("mine.csv").read_text() == "precious\n"

    # --force overwrites it
    data = json.loads(ok("--json", "--project", "first", "round", *TINY, "--k", "2", "--restart-round", "--force").stdout)
    assert data["round"] == 3 and data["csv"] == "first-round-3.csv"
    assert [r[0] for r in rows_of("first-round-3.csv")[1:]] == [q["key"] for q in data["queries"]]
    assert Path("first-round-1.csv").read_text() == text


def test_round_file_columns_hold_score_rank_and_features(pooled):
    ok("round", *TINY, "--k", "5", "--oracle", "truth")  # round 1: a random first batch, answered
    data = json.loads(ok("--json", "round", *TINY, "--k", "4", "--show-model-guess").stdout)
    assert data["csv"] == "blobs-round-2.csv" and data["status"] == "queried"
    header, *rows = rows_of("blobs-round-2.csv")
    assert header == ["key", "label", "score", "rank", "predicted", "probability", "f0", "f1", "f2", "f3"]
    features = pool_features()
    assert [r[0] for r in rows] == [q["key"] for q in data["queries"]]
    for row, query in zip(rows, data["queries"]):
        assert row[1] == ""
        assert float(row[2]) == pytest.approx(query["score"], rel=5e-6) and int(row[3]) == query["rank"]  # 6 significant digits
        # the round's prediction for the item: its most probable class and that probability
        assert row[4] == query["prediction"]["label"] and row[4] in ("a", "b", "c")
        assert row[5] == f"{query['prediction']['probability']:.4f}" and 1 / 3 <= float(row[5]) <= 1
        assert [float(v) for v in row[6:]] == pytest.approx([float(v) for v in features[row[0]]], rel=1e-6)
    assert any(float(r[2]) > 0 for r in rows)  # BALD scores, not the cold start's zeros


def test_round_file_and_table_leave_the_models_guess_out_by_default(pooled):
    """The person who fills in the round file sees no prediction (it anchors the answer); the
    database and --json keep it."""
    ok("round", *TINY, "--k", "5", "--oracle", "truth")
    shown = ok("round", *TINY, "--k", "3").stdout
    assert "predicted" not in shown
    header, *rows = rows_of("blobs-round-2.csv")
    assert header == ["key", "label", "score", "rank", "f0", "f1", "f2", "f3"] and len(rows) == 3
    with PoolStore(pooled) as store:
        assert all(q.prediction and q.prediction["label"] in ("a", "b", "c") for q in store.queries("blobs", 2))
    for row in rows:  # the file still reads back
        row[1] = "a"
    with Path("blobs-round-2.csv").open("w", newline="") as fh:
        csv.writer(fh).writerows([header, *rows])
    ok("label", "--from", "blobs-round-2.csv")
    assert json.loads(ok("--json", "status").stdout)["labelled"] == 8


def test_round_file_renames_clashing_feature_columns(db):
    rng = np.random.default_rng(0)
    with Path("clash.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["name", "score", "rank", "f", "label"])
        writer.writerows([[f"k{i}", *np.round(rng.normal(size=3), 3), "ab"[i % 2]] for i in range(20)])
    ok("init", "--name", "clash", "--classes", "a,b")
    ok("pool", "add", "clash.csv", "--key-column", "name", "--label-column", "label")
    ok("round", *TINY, "--k", "2", "--show-model-guess")
    header, *rows = rows_of("clash-round-1.csv")
    assert header == ["key", "label", "score", "rank", "predicted", "probability", "feature_score", "feature_rank", "f"]
    assert all(r[4:6] == ["", ""] for r in rows)  # a cold start: no prediction


def write_idx(path: Path, array: np.ndarray) -> None:
    """An MNIST IDX file (unsigned bytes)."""
    header = bytes([0, 0, 0x08, array.ndim]) + np.asarray(array.shape, dtype=">u4").tobytes()
    path.write_bytes(header + array.astype(np.uint8).tobytes())


@pytest.mark.parametrize("layout", ["flat", "chw"])
def test_round_file_of_an_image_pool_points_at_pngs(db, layout):
    from matplotlib.image import imread

    n = 30
    labels = np.arange(n) % 3
    images = np.zeros((n, 8, 8), dtype=np.uint8)
    for i, c in enumerate(labels):
        images[i, 2 * c : 2 * c + 3, 1:7] = 255  # a bright bar whose height is the class
    write_idx(Path("imgs-idx3-ubyte"), images)
    write_idx(Path("labels-idx1-ubyte"), labels)
    ok("init", "--name", "bars", "--classes", "3")
    ok("pool", "add", "imgs-idx3-ubyte", "--truth", "labels-idx1-ubyte", "--image-layout", layout)
    data = json.loads(ok("--json", "round", *TINY, "--k", "3", "--show-model-guess").stdout)
    assert data["images"] == "bars-round-1-images"
    header, *rows = rows_of("bars-round-1.csv")
    assert header == ["key", "label", "score", "rank", "predicted", "probability", "image"]
    assert [r[0] for r in rows] == [q["key"] for q in data["queries"]]
    for key, _, _, rank, _, _, image in rows:
        assert image.startswith("bars-round-1-images/") and image.endswith(".png")
        assert Path(image).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        pixels = imread(image)
        assert pixels.shape[:2] == (112, 112)  # 8x8 enlarged 14 times
        bar = np.unique(np.flatnonzero(pixels[:, 56, 0] > 0.5) // 14)  # the rows of the bar, in item pixels
        assert list(bar) == list(range(2 * labels[int(key)], 2 * labels[int(key)] + 3))

    # the image folder is not overwritten either
    before = db_dump(db)
    Path("bars-round-2-images").mkdir()
    Path("bars-round-2-images/old.png").write_bytes(b"x")
    assert_mistake(run("round", *TINY, "--restart-round"), "bars-round-2-images", "--force")
    assert db_dump(db) == before


def test_label_from_a_filled_in_round_file(pooled):
    """The round file is the form `activebayes label --from` reads (extra columns ignored)."""
    ok("round", *TINY, "--k", "4")
    truth = {r[0]: r[5] for r in rows_of("pool.csv")[1:]}
    header, *rows = rows_of("blobs-round-1.csv")
    with Path("blobs-round-1.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows([[r[0], truth[r[0]], *r[2:]] for r in rows])
    result = ok("--json", "label", "--from", "blobs-round-1.csv")
    assert json.loads(result.stdout)["recorded"] == 4
    data = json.loads(ok("--json", "round", *TINY, "--k", "4").stdout)
    assert data["round"] == 2 and data["labelled"] == 4 and data["csv"] == "blobs-round-2.csv"


def test_waiting_round_names_its_file(pooled):
    ok("round", *TINY, "--k", "3")
    before = db_dump(pooled)
    assert_mistake(run("round", *TINY), "still waits for 3", "blobs-round-1.csv", "--restart-round")
    assert db_dump(pooled) == before
