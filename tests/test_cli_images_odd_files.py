"""`pool add FOLDER` on folders as people bring them: a name that is not UTF-8, a link to
nothing, a linked class folder (and a link back up the tree), one picture in two class folders,
HEIC photos, a single class folder, images without labels in a project without classes, and a
class folder named with a trailing space. Every refusal: one line, exit 2, database unchanged."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from cli_checks import assert_mistake, db_dump, ok, run


def picture(path: Path, value: int) -> None:
    """An 8x8 RGB PNG at `path` whose pixels are all `value`, its folders made."""
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((8, 8, 3), value, dtype=np.uint8)).save(path, "PNG")


def two_classes(root: Path, n: int = 3) -> Path:
    """`root/cat` and `root/dog`, n distinct pictures each."""
    for i in range(n):
        picture(root / "cat" / f"{i}.png", 10 + i)
        picture(root / "dog" / f"{i}.png", 100 + i)
    return root


@pytest.fixture
def db(cli_db):
    ok("init", "--name", "pets")
    return cli_db


def refused(db: str, folder: Path, *words: str, flags: tuple[str, ...] = ("--labels-from-folders",)) -> None:
    """`pool add folder` is a one-line mistake naming `words`, with nothing recorded or converted."""
    before = db_dump(db)
    assert_mistake(run("pool", "add", str(folder), *flags), *words)
    assert db_dump(db) == before
    assert not list(Path("activebayes-cache").glob("*.npz"))


def test_a_name_that_is_not_utf8_is_refused_in_one_line(db, tmp_path):
    folder = two_classes(tmp_path / "imgs")
    picture(Path(os.fsdecode(os.fsencode(folder / "dog") + b"/caf\xe9.png")), 200)
    refused(db, folder, "'dog/caf\\xe9.png'", "not UTF-8", "rename it")


def test_a_link_to_nothing_is_refused_naming_its_target(db, tmp_path):
    folder = two_classes(tmp_path / "imgs")
    (folder / "dog" / "gone.png").symlink_to(tmp_path / "nowhere.png")
    refused(db, folder, "'dog/gone.png'", "a link to", "nowhere.png", "does not exist")


def test_a_linked_class_folder_is_read_and_a_link_back_up_adds_nothing(db, tmp_path):
    folder = two_classes(tmp_path / "imgs")
    for i in range(2):
        picture(tmp_path / "elsewhere" / f"b{i}.png", 50 + i)
    (folder / "bird").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (folder / "cat" / "loop").symlink_to(folder, target_is_directory=True)
    summary = json.loads(ok("--json", "pool", "add", str(folder), "--labels-from-folders").stdout)
    assert summary["images"] == 8 and summary["classes"] == ["bird", "cat", "dog"]
    ok("round", "--k", "2")  # a later load checks the folder, links followed the same way


def test_one_picture_in_two_class_folders_is_noted(db, tmp_path):
    folder = two_classes(tmp_path / "imgs")
    picture(folder / "dog" / "copy.png", 10)  # cat/0.png's bytes
    added = ok("pool", "add", str(folder), "--labels-from-folders")
    assert "1 image(s) are byte-for-byte copies of another, e.g. 'cat/0.png' = 'dog/copy.png'" in " ".join(added.output.split())
    assert "1 picture(s) lie in two class folders or more, so have two labels" in " ".join(added.output.split())


def test_heic_photos_are_named_apart_from_other_files(db, tmp_path):
    folder = two_classes(tmp_path / "imgs")
    (folder / "cat" / "IMG_1.HEIC").write_bytes(b"\0\0\0\x18ftypheic" + b"\0" * 40)
    (folder / "cat" / "notes.txt").write_text("x")
    added = " ".join(ok("pool", "add", str(folder), "--labels-from-folders").output.split())
    assert "left out 1 picture(s) in a format not read, e.g. 'cat/IMG_1.HEIC'; convert them to PNG or JPEG" in added
    assert "skipped 1 file(s) that are not .png" in added and "'cat/notes.txt'" in added


def test_a_folder_of_heic_photos_only_is_refused_with_the_way_to_convert_them(db, tmp_path):
    (tmp_path / "imgs" / "cat").mkdir(parents=True)
    (tmp_path / "imgs" / "cat" / "IMG_1.heic").write_bytes(b"\0" * 40)
    refused(db, tmp_path / "imgs", "no image activebayes reads", "'cat/IMG_1.heic'", "convert them to PNG or JPEG")


def test_one_class_folder_is_refused_naming_the_folder(db, tmp_path):
    for i in range(3):
        picture(tmp_path / "imgs" / "cat" / f"{i}.png", i)
    refused(db, tmp_path / "imgs", "--labels-from-folders", "1 class folder(s) ['cat']", "at least 2", "--classes A,B")


def test_images_without_labels_in_a_project_without_classes_name_the_flags_a_folder_takes(db, tmp_path):
    folder = two_classes(tmp_path / "imgs")
    refused(db, folder, "no labels to read them from", "--labels-from-folders", "--truth FILE", flags=())
    assert "--label-column" not in run("pool", "add", str(folder)).stderr


def test_class_folders_spelt_apart_are_noted_as_folders_to_rename(db, tmp_path):
    folder = two_classes(tmp_path / "imgs")
    picture(folder / "dog " / "0.png", 150)
    picture(folder / "Cat" / "0.png", 160)
    summary = json.loads(ok("--json", "pool", "add", str(folder), "--labels-from-folders").stdout)
    assert summary["classes"] == ["Cat", "cat", "dog"]  # 'dog ' is 'dog'
    notes = " ".join(summary["notes"])
    assert "the folder 'dog ' is read as the class 'dog'" in notes
    assert "'Cat', 'cat' differ only in case or spacing; if they are one class, rename their folders to one name" in notes
    assert "--merge-label-spellings" not in notes


def test_an_appended_copy_in_another_class_folder_is_noted(db, tmp_path):
    folder = two_classes(tmp_path / "imgs")
    ok("pool", "add", str(folder), "--labels-from-folders")
    picture(folder / "dog" / "again.png", 11)  # cat/1.png's bytes
    appended = " ".join(ok("pool", "add", str(folder), "--append").output.split())
    assert "1 image(s) are byte-for-byte copies of another, e.g. 'cat/1.png' = 'dog/again.png'" in appended
    assert "1 picture(s) lie in two class folders or more" in appended


def test_images_stretched_to_another_shape_are_noted(db, tmp_path):
    from PIL import Image

    folder = two_classes(tmp_path / "imgs")
    Image.fromarray(np.zeros((10, 40, 3), dtype=np.uint8)).save(folder / "dog" / "wide.png")
    Image.fromarray(np.zeros((17, 16, 3), dtype=np.uint8)).save(folder / "dog" / "near.png")  # within 10 %: no note
    added = " ".join(ok("pool", "add", str(folder), "--labels-from-folders", "--image-size", "8x8").output.split())
    assert "stretched 1 image(s) of another shape to 8x8 (--image-size keeps no aspect ratio), e.g. 'dog/wide.png' (10x40)" in added


def test_a_train_val_split_is_refused_naming_a_split_folder_to_add(db, tmp_path):
    two_classes(tmp_path / "data" / "train")
    two_classes(tmp_path / "data" / "val")
    refused(db, tmp_path / "data", "['train', 'val'], a split of the data", "['cat', 'dog']",
            f"pool add {tmp_path / 'data' / 'train'} --labels-from-folders")


def test_class_folders_holding_the_same_sub_folders_are_noted(db, tmp_path):
    two_classes(tmp_path / "data" / "big", n=2)
    for i in range(2):
        picture(tmp_path / "data" / "small" / "cat" / f"{i}.png", 60 + i)
        picture(tmp_path / "data" / "small" / "dog" / f"{i}.png", 70 + i)
    summary = json.loads(ok("--json", "pool", "add", str(tmp_path / "data"), "--labels-from-folders").stdout)
    assert summary["classes"] == ["big", "small"]  # read as asked, and noted
    assert "every class folder (big, small) holds the same sub-folders (cat, dog) and no image of its own" in " ".join(summary["notes"])


def test_a_file_managers_files_go_unmentioned(db, tmp_path):
    folder = two_classes(tmp_path / "imgs")
    (folder / "cat" / "Thumbs.db").write_bytes(b"\0" * 20)
    (folder / "desktop.ini").write_text("[.ShellClassInfo]")
    (folder / "cat" / "._0.png").write_bytes(b"\0\5\26\7")  # macOS AppleDouble
    summary = json.loads(ok("--json", "pool", "add", str(folder), "--labels-from-folders").stdout)
    assert summary["skipped"] == 0 and not any("skipped" in note for note in summary["notes"])


def test_an_empty_image_file_is_named_so(db, tmp_path):
    folder = two_classes(tmp_path / "imgs")
    (folder / "cat" / "empty.png").write_bytes(b"")
    refused(db, folder, "'cat/empty.png' is not a readable image (an empty file, 0 bytes)", "--skip-unreadable")


def test_names_a_mac_stores_decomposed_match_the_keys_typed_in_a_truth_file_and_a_labels_file(db, tmp_path):
    import unicodedata

    names = {"café.png": ("cat", 1), "naïve.png": ("dog", 2), "plain.png": ("cat", 3), "über.png": ("dog", 4)}
    for name, (_, value) in names.items():
        picture(tmp_path / "imgs" / unicodedata.normalize("NFD", name), value)  # as macOS writes them
    truth = tmp_path / "truth.csv"
    truth.write_text("key,label\n" + "".join(f"{unicodedata.normalize('NFC', n)},{c}\n" for n, (c, _) in names.items()), encoding="utf-8")
    summary = json.loads(ok("--json", "pool", "add", str(tmp_path / "imgs"), "--truth", str(truth)).stdout)
    assert summary["classes"] == ["cat", "dog"]
    Path("answers.csv").write_text("key,label\nnaïve.png,dog\n", encoding="utf-8")  # typed, composed
    ok("label", "--from", "answers.csv")
    exported = ok("export", "-").stdout
    assert unicodedata.normalize("NFD", "naïve.png") in exported and ",dog" in exported


def test_sixteen_bit_images_of_a_twelve_bit_camera_are_noted_with_their_grey_levels(db, tmp_path):
    from PIL import Image

    for c, top in (("cat", 4095), ("dog", 2000)):
        (tmp_path / "imgs" / c).mkdir(parents=True)
        Image.fromarray(np.array([[0, top], [top, 0]], dtype=np.uint16)).save(tmp_path / "imgs" / c / "0.png")
    out = " ".join(ok("pool", "add", str(tmp_path / "imgs"), "--labels-from-folders").stdout.split())
    assert "2 16-bit image(s) hold values up to 4095 of 0-65535 only, e.g. 'cat/0.png'" in out
    assert "so they keep 17 grey level(s) of 256; stretch them to 0-65535" in out


def test_an_animation_is_noted_as_read_by_its_first_frame(db, tmp_path):
    from PIL import Image

    root = two_classes(tmp_path / "imgs")
    frames = [Image.fromarray(np.full((8, 8, 3), v, dtype=np.uint8)) for v in (0, 200)]
    frames[0].save(root / "cat" / "moving.gif", save_all=True, append_images=frames[1:])
    out = " ".join(ok("pool", "add", str(root), "--labels-from-folders").stdout.split())
    assert "1 image(s) hold several frames (an animation, a multi-page TIFF), e.g. 'cat/moving.gif': the model reads the first frame" in out
