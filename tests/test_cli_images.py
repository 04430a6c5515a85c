"""`activebayes pool add FOLDER`: a folder of PNG/JPEG images end to end (labels from sub-folders
or a key,label csv, --image-size, `round --model cnn`, round files naming the original images),
and every mistake one line, exit 2, database unchanged, on SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest

from cli_checks import assert_mistake, db_dump, ok, run

TINY = ("--epochs", "1", "--samples", "2", "--device", "cpu")


def shape(kind: str, size: int = 8, shift: int = 0) -> np.ndarray:
    """A grey uint8 `size`x`size` image: a hollow square or a cross."""
    img = np.zeros((size, size), dtype=np.uint8)
    if kind == "squares":
        img[1 + shift % 2, 1:-1] = img[-2, 1:-1] = img[1:-1, 1] = img[1:-1, -2] = 255
    else:
        img[size // 2 - 1 + shift % 2, :] = img[:, size // 2] = 255
    return img


def write_images(root: Path, n: int = 6, *, rgb: bool = False, size: int = 8, ext: str = "png") -> Path:
    """`root/squares/*.png` and `root/crosses/*.png`, n of each."""
    from PIL import Image

    for kind in ("squares", "crosses"):
        (root / kind).mkdir(parents=True, exist_ok=True)
        for i in range(n):
            img = shape(kind, size, i)
            if rgb:
                img = np.stack([img, img // 2, 255 - img], axis=-1)
            Image.fromarray(img).save(root / kind / f"{i:02d}.{ext}")
    return root


@pytest.fixture
def db(cli_db):
    ok("init", "--name", "shapes")
    return cli_db


@pytest.mark.parametrize("rgb", [False, True], ids=["grey", "rgb"])
def test_folder_end_to_end(db, tmp_path, rgb):
    folder = write_images(tmp_path / "imgs", rgb=rgb)
    (folder / "README.txt").write_text("not an image")
    (folder / ".DS_Store").write_bytes(b"\0")
    added = ok("--json", "pool", "add", str(folder), "--labels-from-folders", "--test-fraction", "0.25")
    summary = json.loads(added.stdout)
    assert summary["format"] == "image-folder" and summary["file"] == str(folder.resolve())
    assert summary["features"] == [3 if rgb else 1, 8, 8] and summary["skipped"] == 1
    assert summary["pool_items"] + summary["test_items"] == 12 and summary["truth"] == "held-back"
    assert "README.txt" in added.stderr  # the skipped file is noted
    ok("round", "--model", "cnn", "--oracle", "truth", "--k", "3", *TINY)
    fitted = json.loads(ok("--json", "round", "--model", "cnn", "--oracle", "truth", "--k", "3", *TINY).stdout)
    assert fitted["round"] == 2
    ok("round", "--model", "cnn", "--k", "2", "--csv", "r3.csv", *TINY)
    with open("r3.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert rows[0][-1] == "image" and len(rows) == 3
    originals = {f.read_bytes() for f in folder.glob("*/*.png")}
    for row in rows[1:]:
        # labels from sub-folders: neither the key nor the image's name shows the class folder,
        # and the image is a copy of the original file beside the round file
        assert row[0].startswith("img-") and not any(kind in row[0] + row[-1] for kind in ("squares", "crosses"))
        assert row[-1] == f"r3-images/{row[3].zfill(3)}-{row[0]}.png"
        assert Path(row[-1]).read_bytes() in originals
    exported = list(csv.DictReader(io.StringIO(ok("export", "-").stdout)))  # the researcher's view: each key's file
    assert exported and all((folder / e["path"]).is_file() and e["path"].split("/")[0] == e["label"] for e in exported)


def test_resize_jpeg_and_truth_csv(db, tmp_path):
    from PIL import Image

    folder = tmp_path / "imgs"
    folder.mkdir()
    keys = []
    for i, (kind, size) in enumerate([("squares", 8), ("crosses", 12), ("squares", 16), ("crosses", 10)]):
        Image.fromarray(shape(kind, size)).convert("RGB").save(folder / f"{i}.jpg", quality=95)
        keys.append((f"{i}.jpg", kind))
    with open("labels.csv", "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([("key", "label"), *keys])
    summary = json.loads(ok("--json", "pool", "add", str(folder), "--image-size", "9x11", "--truth", "labels.csv").stdout)
    assert summary["features"] == [1, 9, 11] and summary["truth"] == "held-back"  # grey JPEGs kept 1 channel
    ok("round", "--model", "cnn", "--oracle", "truth", "--k", "2", *TINY)


def test_changed_removed_added_image_refused(db, tmp_path):
    from PIL import Image

    folder = write_images(tmp_path / "imgs", n=3)
    ok("pool", "add", str(folder), "--labels-from-folders")
    before = db_dump(db)
    original = (folder / "squares" / "00.png").read_bytes()
    Image.fromarray(shape("crosses")).save(folder / "squares" / "00.png")
    assert_mistake(run("round", "--oracle", "truth", "--k", "2", *TINY), "changed", "squares/00.png")
    (folder / "squares" / "00.png").write_bytes(original)
    (folder / "crosses" / "02.png").rename(tmp_path / "moved.png")
    assert_mistake(run("round", "--oracle", "truth", "--k", "2", *TINY), "removed", "crosses/02.png")
    (tmp_path / "moved.png").rename(folder / "crosses" / "02.png")
    Image.fromarray(shape("crosses")).save(folder / "crosses" / "new.png")
    assert_mistake(run("round", "--oracle", "truth", "--k", "2", *TINY), "added", "crosses/new.png")
    assert db_dump(db) == before
    (folder / "crosses" / "new.png").unlink()
    ok("round", "--oracle", "truth", "--k", "2", *TINY)


def _mistakes(tmp_path: Path) -> list[tuple[list[str], list[str]]]:
    from PIL import Image

    good = write_images(tmp_path / "good", n=2)
    mixed = write_images(tmp_path / "mixed", n=2)
    Image.fromarray(shape("squares", 10)).save(mixed / "squares" / "big.png")
    corrupt = write_images(tmp_path / "corrupt", n=2)
    (corrupt / "crosses" / "bad.png").write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    truncated = write_images(tmp_path / "truncated", n=2)
    data = (truncated / "squares" / "00.png").read_bytes()
    (truncated / "squares" / "00.png").write_bytes(data[: len(data) // 2])
    empty = tmp_path / "empty"
    (empty / "sub").mkdir(parents=True)
    only_text = tmp_path / "text"
    only_text.mkdir()
    (only_text / "notes.txt").write_text("x")
    loose = write_images(tmp_path / "loose", n=2)
    Image.fromarray(shape("squares")).save(loose / "top.png")
    (tmp_path / "labels.csv").write_text("key,label\nsquares/00.png,squares\n")
    return [
        ([str(mixed)], ["mixed", "10x10", "8x8", "--image-size"]),
        ([str(corrupt)], ["crosses/bad.png", "not a readable image"]),
        ([str(truncated)], ["squares/00.png", "not a readable image"]),
        ([str(empty)], ["holds no images"]),
        ([str(only_text)], ["holds no images", "notes.txt"]),
        ([str(loose), "--labels-from-folders"], ["--labels-from-folders", "top.png"]),
        ([str(good), "--image-size", "8by8"], ["--image-size", "8by8"]),
        ([str(good), "--image-size", "0x8"], ["--image-size", "0x8"]),
        ([str(good), "--test-fraction", "0.5"], ["--test-fraction", "--labels-from-folders"]),
        ([str(good), "--labels-from-folders", "--truth", str(tmp_path / "labels.csv")], ["--truth", "--labels-from-folders"]),
        ([str(good), "--truth", str(tmp_path / "labels.csv")], ["--truth", "no label for 3 item(s)"]),
        ([str(good), "--label-column", "label"], ["--label-column", "folder"]),
        ([str(tmp_path / "labels.csv"), "--image-size", "8x8"], ["--image-size", "not a folder"]),
        ([str(tmp_path / "nowhere")], ["nowhere"]),
    ]


def test_mistakes_one_line_db_unchanged(db, tmp_path):
    for args, words in _mistakes(tmp_path):
        before = db_dump(db)
        assert_mistake(run("pool", "add", *args), *words)
        assert db_dump(db) == before, args
    cache = tmp_path / "activebayes-cache"
    assert not cache.exists() or not any(cache.iterdir())  # no converted copy left behind


def test_class_not_in_project(db, tmp_path):
    ok("init", "--name", "digits", "--classes", "squares,circles")
    folder = write_images(tmp_path / "imgs", n=2)
    before = db_dump(db)
    assert_mistake(run("--project", "digits", "pool", "add", str(folder), "--labels-from-folders"), "crosses", "classes")
    assert db_dump(db) == before


def test_second_pool_refused(db, tmp_path):
    """Named by the folder the user added, not by its converted copy in activebayes-cache/."""
    folder = write_images(tmp_path / "imgs", n=2)
    ok("pool", "add", str(folder), "--labels-from-folders")
    before = db_dump(db)
    assert_mistake(run("pool", "add", str(folder)), f"already has a pool from {folder} (images)")
    assert db_dump(db) == before
    shown = " ".join(ok("status").stdout.split())
    assert f"data: {folder} (images)" in shown and "image-folder.npz" not in shown


def test_one_unreadable_image_is_refused_or_skipped(db, tmp_path):
    """One broken file stops the folder in one line naming it and --skip-unreadable; with the flag
    it is left out and named, and later loads accept it while it stays as it was."""
    folder = write_images(tmp_path / "imgs")
    (folder / "crosses" / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n not really")
    before = db_dump(db)
    assert_mistake(run("pool", "add", str(folder), "--labels-from-folders"), "'crosses/broken.png'", "--skip-unreadable")
    assert db_dump(db) == before
    added = ok("--json", "pool", "add", str(folder), "--labels-from-folders", "--skip-unreadable")
    summary = json.loads(added.stdout)
    assert summary["pool_items"] == 12 and summary["unreadable"] == ["crosses/broken.png"]
    assert "left out 1 unreadable image(s)" in added.stderr and "crosses/broken.png" in added.stderr
    ok("round", "--model", "cnn", "--oracle", "truth", "--k", "3", *TINY)
    (folder / "crosses" / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n changed")
    assert_mistake(run("round", "--model", "cnn", "--k", "3", *TINY), "changed since `pool add`", "1 added")


USER_NETS = """\
from torch import nn


def small_cnn():
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Dropout(0.2), nn.Linear(4 * 8 * 8, 2))


def seven_outputs():
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 7))


def for_28x28():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 2))


def for_colour():
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.Flatten(), nn.Linear(4 * 8 * 8, 2))


def needs_weights():
    raise FileNotFoundError("weights.pt")


def not_a_network():
    return "cnn"
"""


def test_a_users_model_package_on_an_image_folder(db, tmp_path):
    """`--model mypkg.nets:factory` (a package in the working folder) runs on the images; each way
    the factory can be wrong, or not fit the images' shape, is one line, exit 2, nothing written."""
    folder = write_images(tmp_path / "imgs", n=3)
    (Path("mypkg")).mkdir()
    (Path("mypkg") / "__init__.py").write_text("")
    (Path("mypkg") / "nets.py").write_text(USER_NETS)
    ok("pool", "add", str(folder), "--labels-from-folders")
    before = db_dump(db)
    for spec, words in [
        ("nopkg.nets:small_cnn", ["cannot import module 'nopkg.nets'", "PYTHONPATH"]),
        ("mypkg.nets:big_cnn", ["has no attribute 'big_cnn'"]),
        ("mypkg.nets:needs_weights", ["calling mypkg.nets:needs_weights() failed", "FileNotFoundError"]),
        ("mypkg.nets:not_a_network", ["returned str, not a torch.nn.Module"]),
        ("mypkg.nets:seven_outputs", ["expected logits [N, 2]", "got (2, 7)"]),
        ("mypkg.nets:for_28x28", ["items of shape (1, 8, 8)", "--image-size"]),
        ("mypkg.nets:for_colour", ["items of shape (1, 8, 8)", "3 channels"]),
        ("mypkg.nets", ["expected mlp, cnn, auto, pkg.mod:factory"]),
    ]:
        assert_mistake(run("round", "--model", spec, "--oracle", "truth", "--k", "2", *TINY), "--model", *words)
        assert db_dump(db) == before, spec
    ok("round", "--model", "mypkg.nets:small_cnn", "--oracle", "truth", "--k", "2", *TINY)
