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
    assert data.format == "image-folder" and data.keys == ["a/y.png", "b/x.png"] and data.y.tolist() == ["a", "b"]
    assert data.x.dtype == np.float32 and data.x.shape == (2, 1, 8, 8)
    np.testing.assert_allclose(data.x[1, 0], img / 255.0, atol=1e-6)
    assert source_path(data, "b/x.png") == (tmp_path / "src" / "b" / "x.png").resolve()
    assert default_model("cnn", data.x.shape[1:], 2)()(__import__("torch").from_numpy(data.x)).shape == (2, 2)


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
