"""activebayes.data.images: converting a folder of images, checking it later, and the prompt's
drawing of colour and wide images."""

from __future__ import annotations

import io

import numpy as np
import pytest

from activebayes.data import detect_format, load_dataset
from activebayes.data.images import check_folder, convert_folder, parse_image_size, scan_folder, source_path
from activebayes.errors import DataError
from activebayes.nets import default_model
from activebayes.oracles import PromptOracle
from activebayes.oracles.prompt import image_art


def save(path, pixels) -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.asarray(pixels, dtype=np.uint8)).save(path)


def test_grey_folder_round_trip(tmp_path):
    img = np.arange(64, dtype=np.uint8).reshape(8, 8) * 4
    save(tmp_path / "src" / "b" / "x.png", img)
    save(tmp_path / "src" / "a" / "y.png", 255 - img)
    (tmp_path / "src" / "a" / "notes.txt").write_text("skip me")
    out, summary = convert_folder(tmp_path / "src", tmp_path / "cache", labels_from_folders=True)
    assert detect_format(out) == "image-folder" and out.parent == tmp_path / "cache"
    assert summary["images"] == 2 and summary["skipped"] == 1 and summary["channels"] == 1 and summary["size"] == [8, 8]
    data = load_dataset(out)
    # labels from the sub-folders: keys that do not name them, each item's file in `paths`
    assert data.format == "image-folder" and sorted(data.keys) == ["img-0001", "img-0002"] and data.y.tolist() == ["a", "b"]
    assert data.paths == ["a/y.png", "b/x.png"]
    assert data.x.dtype == np.float32 and data.x.shape == (2, 1, 8, 8)
    np.testing.assert_allclose(data.x[1, 0], img / 255.0, atol=1e-6)
    assert source_path(data, data.keys[1]) == (tmp_path / "src" / "b" / "x.png").resolve()
    assert source_path(data, "b/x.png") is None  # a path is not a key of this pool
    assert default_model("cnn", data.x.shape[1:], 2)()(__import__("torch").from_numpy(data.x)).shape == (2, 2)


def test_every_common_format_reads_losslessly_as_the_same_pixels(tmp_path):
    """PNG, WebP (lossless), BMP, GIF (a palette of grey), TIFF: the same 8x8 grey picture in each
    reads back as its pixels; a file of another kind is skipped and counted."""
    img = (np.arange(64, dtype=np.uint8).reshape(8, 8) * 4).astype(np.uint8)
    from PIL import Image

    for name in ("a.png", "b.webp", "c.bmp", "d.gif", "e.tif", "f.TIFF"):
        (tmp_path / "src").mkdir(exist_ok=True)
        Image.fromarray(img).save(tmp_path / "src" / name, **({"lossless": True} if name.endswith("webp") else {}))
    (tmp_path / "src" / "g.pdf").write_bytes(b"%PDF-1.4")
    out, summary = convert_folder(tmp_path / "src", tmp_path / "cache")
    assert summary["images"] == 6 and summary["skipped"] == 1 and summary["channels"] == 1
    data = load_dataset(out)
    for k in range(6):
        np.testing.assert_array_equal(np.round(data.x[k, 0] * 255).astype(np.uint8), img, err_msg=data.keys[k])


@pytest.mark.parametrize(("orientation", "turn"), [(1, lambda a: a), (3, lambda a: np.rot90(a, 2)), (6, lambda a: np.rot90(a, -1)),
                                                   (8, lambda a: np.rot90(a, 1)), (2, lambda a: a[:, ::-1])])  # fmt: skip
def test_a_photo_is_read_upright_as_its_exif_orientation_says(tmp_path, orientation, turn):
    """A phone stores a portrait photo sideways with EXIF orientation 6 (turn 90 degrees clockwise
    to view); viewers and the labelling page show it upright, so the model is given it upright
    too, and its size is compared upright."""
    from PIL import Image

    stored = np.zeros((4, 6), dtype=np.uint8)
    stored[0, :] = 255  # a white top row, 6 wide
    stored[:, 0] = 128
    exif = Image.Exif()
    exif[0x0112] = orientation
    (tmp_path / "src").mkdir()
    Image.fromarray(stored).save(tmp_path / "src" / "photo.png", exif=exif.tobytes())
    Image.fromarray(np.ascontiguousarray(turn(stored))).save(tmp_path / "src" / "upright.png")  # the same picture, already upright
    out, summary = convert_folder(tmp_path / "src", tmp_path / "cache")
    upright = turn(stored)
    assert summary["size"] == list(upright.shape)
    data = load_dataset(out)
    np.testing.assert_array_equal(np.round(data.x[0, 0] * 255).astype(np.uint8), upright)
    np.testing.assert_array_equal(data.x[0], data.x[1])


def test_rgb_and_resize(tmp_path):
    rgb = np.zeros((10, 6, 3), dtype=np.uint8)
    rgb[..., 0] = 200
    save(tmp_path / "src" / "red.png", rgb)
    save(tmp_path / "src" / "grey.png", np.full((4, 4), 90))
    out, summary = convert_folder(tmp_path / "src", tmp_path / "cache", image_size=(12, 9))
    data = load_dataset(out)
    assert summary["channels"] == 3 and data.x.shape == (2, 3, 12, 9)
    grey, red = data.x  # sorted keys: grey.png, red.png
    np.testing.assert_allclose(grey, 90 / 255.0, atol=1e-6)  # grey replicated into three equal channels
    np.testing.assert_allclose(red[0], 200 / 255.0, atol=1e-6)
    assert red[1].max() == 0 and data.y is None


def test_mixed_sizes_refused_without_image_size(tmp_path):
    save(tmp_path / "a.png", np.zeros((8, 8)))
    save(tmp_path / "b.png", np.zeros((8, 9)))
    with pytest.raises(DataError, match=r"'b.png' is 8x9 but 'a.png' is 8x8.*image_size=\(H, W\)"):
        convert_folder(tmp_path, tmp_path / ".cache")
    assert not (tmp_path / ".cache").exists()  # nothing written before everything is checked


def test_check_folder_names_each_change(tmp_path):
    save(tmp_path / "src" / "a.png", np.zeros((8, 8)))
    save(tmp_path / "src" / "b.png", np.ones((8, 8)))
    out, _ = convert_folder(tmp_path / "src", tmp_path / "cache")
    save(tmp_path / "src" / "a.png", np.full((8, 8), 7))
    (tmp_path / "src" / "b.png").unlink()
    save(tmp_path / "src" / "c.png", np.zeros((8, 8)))
    with pytest.raises(DataError, match=r"1 changed \(e.g. 'a.png'\), 1 removed \(e.g. 'b.png'\), 1 added \(e.g. 'c.png'\)"):
        load_dataset(out)
    with pytest.raises(DataError, match="missing"):
        check_folder(tmp_path / "gone", ["a.png"], ["0" * 64])


def test_scan_and_sizes(tmp_path):
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "x.png").write_bytes(b"")
    (tmp_path / "Z.JPEG").write_bytes(b"")
    (tmp_path / "d.txt").write_text("")
    assert scan_folder(tmp_path) == (["Z.JPEG"], ["d.txt"])
    assert parse_image_size("28x32") == (28, 32) and parse_image_size("16") == (16, 16)
    for bad in ("28*28", "0x4", "", "x8"):
        with pytest.raises(DataError, match="^image_size: "):
            parse_image_size(bad)


def test_prompt_draws_rgb_and_shrinks_wide_images():
    rgb = np.zeros((3, 8, 8))
    rgb[1, 2:6, 2:6] = 1.0  # a green square
    out = io.StringIO()
    PromptOracle(classes=["a", "b"], input=io.StringIO("a\n"), output=out, width=80).ask(["k"], rgb[None])
    art = out.getvalue().split("\n")[1:9]
    assert art[0] == " " * 16 and art[3] == " " * 4 + "█" * 8 + " " * 4
    wide = np.zeros((40, 200))
    wide[:, 100:] = 1.0
    lines = image_art(wide, max_width=50).split("\n")
    assert max(len(line) for line in lines) <= 50 and lines[0].strip() and lines[0].startswith(" ")


def test_the_page_serves_originals_a_browser_shows_and_a_png_of_the_rest(tmp_path):
    """WebP, GIF and BMP go to the browser as they are; a TIFF, which browsers do not show, gets
    no original (the page then serves a PNG of the pixels the model sees)."""
    from PIL import Image

    from activebayes.data.images import ImageFolderDataset
    from activebayes.web.items import original_image

    img = np.full((4, 4), 90, dtype=np.uint8)
    for name in ("a.webp", "b.gif", "c.bmp", "d.tif"):
        Image.fromarray(img).save(tmp_path / name)
    data = ImageFolderDataset(np.zeros((4, 1, 4, 4)), None, ["a.webp", "b.gif", "c.bmp", "d.tif"], tmp_path, "image-folder", folder=tmp_path)
    assert [original_image(data, k)[1] for k in ("a.webp", "b.gif", "c.bmp")] == ["image/webp", "image/gif", "image/bmp"]
    assert original_image(data, "a.webp")[0] == (tmp_path / "a.webp").read_bytes()
    assert original_image(data, "d.tif") is None and original_image(data, "../x.png") is None


def test_a_folder_converted_before_links_were_followed_keeps_passing_them_over(tmp_path):
    from dataclasses import replace

    from activebayes.data.image_manifest import read_manifest, write_manifest

    save(tmp_path / "src" / "a.png", np.zeros((8, 8)))
    save(tmp_path / "elsewhere" / "b.png", np.ones((8, 8)))
    out, summary = convert_folder(tmp_path / "src", tmp_path / "cache")
    manifest, x = read_manifest(out, pixels=True)
    assert manifest.follows_links and summary["images"] == 1
    older = write_manifest(tmp_path / "cache", "old", replace(manifest, follows_links=False), x)  # as written before
    assert not read_manifest(older)[0].follows_links
    (tmp_path / "src" / "linked").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    assert len(load_dataset(older).x) == 1  # its linked folder passed over, as when it was converted
    with pytest.raises(DataError, match=r"1 added \(e.g. 'linked/b.png'\)"):
        load_dataset(out)  # a folder converted now reads the linked folder, so its image is new
