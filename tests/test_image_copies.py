"""The copies of an image folder's files a labeller opens (round files, Label Studio tasks) carry
the picture, upright, and none of the file's metadata, which can name the item or its class:
EXIF (ImageDescription, orientation), a JPEG comment, a PNG's text chunks. `label --from` still
checks an opaque id against the ORIGINAL file's sha256. On SQLite and PostgreSQL (the CLI test)."""

from __future__ import annotations

import csv
import hashlib
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps, PngImagePlugin

from activebayes.data.image_copies import write_bare_copy
from activebayes.data.label_studio import task_id
from cli_checks import ok, same_picture
from test_label_studio_keys import recorded

SECRET = "dark cat from the dark folder"
DESCRIPTION, ORIENTATION = 0x010E, 0x0112  # EXIF tags ImageDescription and Orientation


def tagged_jpeg(path: Path, level: int = 60) -> np.ndarray:
    """A 16 x 24 (H x W) JPEG stored sideways with EXIF orientation 6 (turn 90° clockwise to view),
    its ImageDescription and a comment naming the class. Returns its upright pixels, [24, 16, 3]."""
    pixels = np.zeros((16, 24, 3), dtype=np.uint8)
    pixels[:, :12] = level
    pixels[:, 12:] = 255 - level  # halves that tell the turn apart
    exif = Image.Exif()
    exif[DESCRIPTION] = SECRET
    exif[ORIENTATION] = 6
    Image.fromarray(pixels).save(path, quality=95, exif=exif, comment=SECRET.encode())
    with Image.open(path) as img:
        return np.asarray(ImageOps.exif_transpose(img).convert("RGB"))


def texted_png(path: Path, level: int = 60) -> None:
    info = PngImagePlugin.PngInfo()
    info.add_text("Description", SECRET)
    info.add_text("Keywords", "dark")
    pixels = np.random.default_rng(level).integers(0, 255, size=(9, 7, 3)).astype(np.uint8)
    Image.fromarray(pixels).save(path, pnginfo=info)


def no_metadata(path: Path) -> None:
    assert SECRET.encode() not in path.read_bytes() and b"Keywords" not in path.read_bytes()
    with Image.open(path) as img:
        assert dict(img.getexif()) == {}
        assert not {"comment", "exif", "xmp", "Description", "Keywords"} & set(img.info), img.info


def test_a_jpeg_copy_is_upright_and_bare(tmp_path):
    upright = tagged_jpeg(tmp_path / "dark0.jpg")
    copy = write_bare_copy(tmp_path / "dark0.jpg", tmp_path / "001-r1-q1-abc")
    assert copy == tmp_path / "001-r1-q1-abc.jpg"
    no_metadata(copy)
    with Image.open(copy) as img:
        shown = np.asarray(img.convert("RGB"))
    assert shown.shape == upright.shape == (24, 16, 3)  # turned as the tag said, so it needs no tag
    assert np.abs(shown.astype(int) - upright.astype(int)).max() <= 8  # re-encoded at quality 95
    assert (tmp_path / "dark0.jpg").read_bytes().count(SECRET.encode()) >= 1  # the original is left alone


def test_a_png_copy_keeps_its_pixels_and_drops_its_text(tmp_path):
    texted_png(tmp_path / "dark1.png")
    copy = write_bare_copy(tmp_path / "dark1.png", tmp_path / "002-x")
    assert copy.name == "002-x.png"
    no_metadata(copy)
    assert same_picture(copy, tmp_path / "dark1.png")
    # other formats become PNGs (lossless, and a browser shows them), a palette image's palette kept
    Image.open(tmp_path / "dark1.png").convert("P").save(tmp_path / "dark2.gif", comment=SECRET.encode())
    gif = write_bare_copy(tmp_path / "dark2.gif", tmp_path / "003-y")
    assert gif.name == "003-y.png"
    no_metadata(gif)
    with Image.open(gif) as shown, Image.open(tmp_path / "dark2.gif") as source:
        assert np.array_equal(np.asarray(shown.convert("RGB")), np.asarray(source.convert("RGB")))


def test_a_copy_is_of_the_format_the_file_holds_whatever_its_name(tmp_path):
    texted_png(tmp_path / "named.png")
    (tmp_path / "named.png").rename(tmp_path / "named.jpg")  # a PNG named .jpg
    copy = write_bare_copy(tmp_path / "named.jpg", tmp_path / "004-z")
    assert copy.name == "004-z.png" and same_picture(copy, tmp_path / "named.jpg")  # lossless, not re-encoded as a JPEG
    tagged_jpeg(tmp_path / "photo.jpg")
    (tmp_path / "photo.jpg").rename(tmp_path / "photo.png")  # a JPEG named .png
    assert write_bare_copy(tmp_path / "photo.png", tmp_path / "005-w").name == "005-w.jpg"


def test_round_copies_are_bare_and_ids_still_check_the_originals(cli_db, tmp_path):
    truth = {}
    for label, level in (("dark", 40), ("light", 215)):
        (tmp_path / "images" / label).mkdir(parents=True)
        for i in range(3):
            if i == 0:
                tagged_jpeg(tmp_path / "images" / label / f"{label}{i}.jpg", level)
                truth[f"{label}/{label}{i}.jpg"] = label
            else:
                texted_png(tmp_path / "images" / label / f"{label}{i}.png", level + i)
                truth[f"{label}/{label}{i}.png"] = label
    (tmp_path / "truth.csv").write_text("key,label\n" + "".join(f"{k},{v}\n" for k, v in truth.items()))
    ok("init", "--name", "shapes", "--classes", "dark,light")
    ok("pool", "add", str(tmp_path / "images"), "--truth", str(tmp_path / "truth.csv"), "--image-size", "8x8")
    ok("round", "--k", "6", "--epochs", "1", "--samples", "2", "--device", "cpu", "--first", "random")
    with Path("shapes-round-1.csv").open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    originals = {hashlib.sha256(p.read_bytes()).hexdigest(): p for p in (tmp_path / "images").rglob("*.*")}
    for rank, row in enumerate(rows):
        source = next(p for digest, p in originals.items() if row["query"] == task_id(1, rank, digest))  # the original's hash
        copy = Path(row["image"])
        no_metadata(copy)
        assert copy.suffix == (".jpg" if source.suffix == ".jpg" else ".png")
        if source.suffix == ".png":
            assert same_picture(copy, source)
        row["label"] = truth[source.relative_to(tmp_path / "images").as_posix()]
    with Path("answers.csv").open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    ok("label", "--from", "answers.csv")  # every id checks against its original file's hash
    assert recorded(cli_db) == truth
