"""`pool add FOLDER --append`: new images put in a project's image folder join its pool (old items
keep their keys, rows and pixels; one transaction; refused in one line, nothing written, when a
recorded image changed or went, under a running round, or for images unlike the old ones); and
the keys of a folder labelled by its sub-folders, which must not show a labeller the class, with
projects made before them (keys = paths) still working. On SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import numpy as np

from cli_checks import assert_mistake, db_dump, ok, run, same_picture
from test_cli_images import TINY, shape, write_images


def cache_files() -> list[str]:
    folder = Path("activebayes-cache")
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def project_data():
    from activebayes.data import load_project_data
    from activebayes.store import PoolStore

    with PoolStore(os.environ["ACTIVEBAYES_DB"]) as store:
        return load_project_data(store, "shapes")


def add_new(folder: Path, kind: str, names: list[str], size: int = 8) -> None:
    from PIL import Image

    for i, name in enumerate(names):
        Image.fromarray(shape(kind, size, i)).save(folder / kind / name)


def test_append_keeps_old_items_and_adds_new_ones(cli_db, tmp_path):
    folder = write_images(tmp_path / "imgs", n=4)
    ok("init", "--name", "shapes")
    ok("pool", "add", str(folder), "--labels-from-folders")
    ok("round", "--model", "cnn", "--oracle", "truth", "--k", "3", *TINY)
    old = project_data()
    old_keys, old_x = list(old.keys), np.array(old.x)
    add_new(folder, "crosses", ["new 1.png", "nouvelle é.png"])
    add_new(folder, "squares", ["new 2.png"])
    summary = json.loads(ok("--json", "pool", "add", str(folder), "--append", "--test-fraction", "0.34").stdout)
    assert summary["images"] == 3 and summary["pool_items"] + summary["test_items"] == 3 and summary["test_items"] == 1
    assert sorted(summary["keys"]) == ["img-0009", "img-0010", "img-0011"]  # numbering continues after the last key
    new = project_data()
    assert new.keys[:8] == old_keys and np.array_equal(new.x[:8], old_x)  # old items as they were, first
    assert new.paths[8:] == ["crosses/new 1.png", "crosses/nouvelle é.png", "squares/new 2.png"]
    assert new.y.tolist()[8:] == ["crosses", "crosses", "squares"]
    assert len(cache_files()) == 2  # the new converted folder and its features; the previous ones removed
    shown = json.loads(ok("--json", "status").stdout)
    assert shown["pool_items"] + shown["test_items"] == 11 and shown["labelled"] == 3
    assert "+ 3 images appended" in " ".join(ok("status").stdout.split())
    ok("round", "--model", "cnn", "--oracle", "truth", "--k", "3", *TINY)  # the next round scores old and new items


def test_append_refusals_write_nothing(cli_db, tmp_path):
    from PIL import Image

    folder = write_images(tmp_path / "imgs", n=3)
    ok("init", "--name", "shapes")
    ok("pool", "add", str(folder), "--labels-from-folders")
    before, files = db_dump(cli_db), cache_files()
    assert_mistake(run("pool", "add", str(folder), "--append"), "no image added since")
    add_new(folder, "crosses", ["new.png"])
    original = (folder / "squares" / "00.png").read_bytes()
    Image.fromarray(shape("crosses")).save(folder / "squares" / "00.png")
    assert_mistake(run("pool", "add", str(folder), "--append"), "1 changed", "'squares/00.png'", "restore")
    (folder / "squares" / "00.png").unlink()
    assert_mistake(run("pool", "add", str(folder), "--append"), "1 removed", "'squares/00.png'")
    (folder / "squares" / "00.png").write_bytes(original)
    other = write_images(tmp_path / "other", n=1)
    assert_mistake(run("pool", "add", str(other), "--append"), f"are in {folder.resolve()}", "put the new images in")
    cases = [
        ("crosses/colour.png", np.stack([shape("crosses"), shape("squares"), shape("crosses")], axis=-1), [], ["in colour", "grey"]),
        ("crosses/big.png", shape("crosses", 10), [], ["10x10", "8x8", "--image-size"]),
        ("circles/c.png", shape("crosses"), [], ["'circles'", "classes"]),
        ("top.png", shape("crosses"), [], ["directly in", "top.png"]),
        ("crosses/ok.png", shape("crosses"), ["--image-size", "9x9"], ["8x8", "not 9x9"]),
        ("crosses/ok.png", shape("crosses"), ["--truth", "t.csv"], ["--truth", "cannot be given"]),
        ("crosses/ok.png", shape("crosses"), ["--labels-are-known"], ["--labels-are-known", "labels back"]),
    ]
    for name, pixels, flags, words in cases:
        (folder / name).parent.mkdir(exist_ok=True)
        Image.fromarray(pixels).save(folder / name)
        assert_mistake(run("pool", "add", str(folder), "--append", *flags), *words)
        (folder / name).unlink()
    (folder / "crosses" / "bad.png").write_bytes(b"\x89PNG\r\n\x1a\n not really")
    assert_mistake(run("pool", "add", str(folder), "--append"), "'crosses/bad.png'", "--skip-unreadable")
    (folder / "crosses" / "bad.png").unlink()
    from activebayes.store import PoolStore

    with PoolStore(cli_db) as store, store.round_lock("shapes"):
        assert_mistake(run("pool", "add", str(folder), "--append"), "of project 'shapes' is running", "run this command again")
    assert db_dump(cli_db) == before and cache_files() == files
    assert json.loads(ok("--json", "pool", "add", str(folder), "--append").stdout)["images"] == 1


def test_append_to_a_table_project_or_a_folder_to_a_table_refused(cli_db, tmp_path):
    Path("t.csv").write_text("x,label\n" + "".join(f"{i},{'ab'[i % 2]}\n" for i in range(8)))
    ok("init", "--name", "t")
    ok("pool", "add", "t.csv")
    folder = write_images(tmp_path / "imgs", n=1)
    before = db_dump(cli_db)
    assert_mistake(run("pool", "add", str(folder), "--append"), "holds a .csv file", "a folder of images cannot be appended")
    assert db_dump(cli_db) == before


def test_keys_hide_the_class_folder_and_old_projects_keep_path_keys(cli_db, tmp_path, monkeypatch):
    """A project converted before keys hid the paths (keys = paths, no `paths` array) keeps its
    keys and rounds, and takes appended images keyed by path; its round files name the queries by
    opaque ids and copies of the images (a path names the class folder), which `label --from` maps back."""
    import functools

    import activebayes.data.images as images

    folder = write_images(tmp_path / "imgs", n=3)
    ok("init", "--name", "shapes")
    with monkeypatch.context() as patched:  # converted as before keys hid the paths
        patched.setattr(images, "convert_folder", functools.partial(images.convert_folder, hide_keys=False))
        ok("pool", "add", str(folder), "--labels-from-folders")
    assert project_data().paths is None and sorted(project_data().keys)[0] == "crosses/00.png"
    queries = json.loads(ok("--json", "round", "--model", "cnn", "--k", "2", "--csv", "r.csv", *TINY).stdout)["queries"]
    with open("r.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    for row, query in zip(rows, queries):  # the id and a copy beside the file, neither naming the class folder
        assert "key" not in row and row["query"].startswith(f"r1-q{query['rank']}-") and row["image"].startswith("r-images/")
        assert same_picture(Path(row["image"]), folder / query["key"])
    add_new(folder, "squares", ["late.png"])
    assert json.loads(ok("--json", "pool", "add", str(folder), "--append").stdout)["keys"] == ["squares/late.png"]
    rows[0]["label"] = queries[0]["key"].split("/")[0]
    with open("r.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    ok("label", "--from", "r.csv")
    assert json.loads(ok("--json", "status").stdout)["labelled"] == 1


def test_hidden_keys_are_seeded_and_do_not_follow_the_paths():
    from activebayes.data.image_manifest import hidden_keys

    keys = hidden_keys(200, seed=3)
    assert keys == hidden_keys(200, seed=3) and keys != hidden_keys(200, seed=4)
    assert sorted(keys) == [f"img-{i:04d}" for i in range(1, 201)] and keys != sorted(keys)
    assert hidden_keys(2, seed=3, start=9999) in (["img-10000", "img-10001"], ["img-10001", "img-10000"])
