"""activebayes.data.image_decode and the folder reading around it: transparency laid on white
(hand-computed blends), 16-bit, 32-bit and floating-point pixels, the JPEG and PNM names read,
images too large to keep without a size, and Pillow's decompression-bomb guard."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest

from activebayes.data import load_dataset
from activebayes.data.image_append import append_images
from activebayes.data.image_decode import decode_image
from activebayes.data.image_manifest import read_manifest, write_manifest
from activebayes.data.images import convert_folder
from activebayes.errors import DataError


def pil(array, mode=None):
    from PIL import Image

    return Image.fromarray(np.asarray(array), mode) if mode else Image.fromarray(np.asarray(array))


def test_transparent_pixels_are_laid_on_white_as_the_page_shows_them(tmp_path):
    """Each channel a * c + (1 - a) * 255 (a = alpha / 255), rounded: a black digit stroke on a
    clear background reads as black on white, not as an all-black image."""
    rgba = np.zeros((2, 2, 4), dtype=np.uint8)
    rgba[0, 0] = [0, 0, 0, 255]  # the stroke: opaque black
    rgba[0, 1] = [0, 0, 0, 0]  # clear, black underneath
    rgba[1, 0] = [255, 0, 0, 0]  # clear, red underneath: shows white all the same
    rgba[1, 1] = [0, 100, 200, 128]  # half: 128/255 of the colour, 127/255 of white
    pil(rgba, "RGBA").save(tmp_path / "a.png")
    one = decode_image(tmp_path, "a.png", None)
    px, original, deep = one.pixels, one.original, one.deep_max
    a = 128 / 255
    half = [round(a * c + (1 - a) * 255) for c in (0, 100, 200)]
    assert original == (2, 2) and deep is None  # not a 16-bit image
    assert px.tolist() == [[[0, 0, 0], [255, 255, 255]], [[255, 255, 255], half]]
    assert half == [127, 177, 227]  # 128/255 * c + 127


def test_grey_with_alpha_a_palette_and_a_png_transparent_colour_lie_on_white(tmp_path):
    pil(np.stack([np.full((2, 2), 40, np.uint8), np.array([[255, 0], [0, 255]], np.uint8)], -1), "LA").save(tmp_path / "la.png")
    assert decode_image(tmp_path, "la.png", None).pixels[..., 0].tolist() == [[40, 255], [255, 40]]
    palette = pil(np.array([[0, 1], [1, 0]], np.uint8), "P")
    palette.putpalette([10, 20, 30, 200, 100, 50] + [0] * 762)
    palette.save(tmp_path / "p.png", transparency=0)  # colour 0 is transparent
    assert decode_image(tmp_path, "p.png", None).pixels.tolist() == [[[255] * 3, [200, 100, 50]], [[200, 100, 50], [255] * 3]]
    rgb = np.array([[[10, 10, 10], [5, 6, 7]]], np.uint8)
    pil(rgb).save(tmp_path / "t.png", transparency=(10, 10, 10))  # a PNG's tRNS colour
    assert decode_image(tmp_path, "t.png", None).pixels.tolist() == [[[255, 255, 255], [5, 6, 7]]]


def test_a_folder_converted_when_alpha_was_dropped_appends_the_same_way(tmp_path):
    """A pool converted before transparency was laid on white reads its new images as its old
    ones were read (alpha dropped); one converted now lays them on white."""
    clear = np.zeros((4, 4, 4), dtype=np.uint8)  # transparent, black underneath
    (tmp_path / "src").mkdir()
    pil(np.full((4, 4, 3), 9, np.uint8)).save(tmp_path / "src" / "a.png")
    out, _ = convert_folder(tmp_path / "src", tmp_path / "cache")
    manifest, x = read_manifest(out, pixels=True)
    assert manifest.alpha_on_white
    older = write_manifest(tmp_path / "cache", "old", replace(manifest, alpha_on_white=False), x)
    pil(clear, "RGBA").save(tmp_path / "src" / "b.png")
    new_out, _ = append_images(out, tmp_path / "cache", stem="now")
    old_out, _ = append_images(older, tmp_path / "cache", stem="old")
    assert read_manifest(new_out, pixels=True)[1][1].max() == 255 and read_manifest(new_out)[0].alpha_on_white
    assert read_manifest(old_out, pixels=True)[1][1].max() == 0 and not read_manifest(old_out)[0].alpha_on_white


def test_sixteen_and_thirty_two_bit_pixels_scale_and_out_of_range_ones_are_refused(tmp_path):
    pil(np.array([[0, 257, 65535]], np.uint16)).save(tmp_path / "s.png")
    one = decode_image(tmp_path, "s.png", None)
    px, deep = one.pixels, one.deep_max
    assert px[..., 0].tolist() == [[0, 1, 255]] and deep == 65535
    pil(np.array([[0, 70000]], np.int32)).save(tmp_path / "i.tif")
    with pytest.raises(DataError, match=r"'i.tif' holds pixel values from 0 to 70000, outside 0-65535; save it as an 8-bit"):
        decode_image(tmp_path, "i.tif", None)


def test_floating_point_pixels_read_on_the_0_255_scale_and_an_ambiguous_0_1_image_is_refused(tmp_path):
    pil(np.array([[0.0, 2.4, 254.6]], np.float32)).save(tmp_path / "f.tif")
    assert decode_image(tmp_path, "f.tif", None).pixels[..., 0].tolist() == [[0, 2, 255]]
    pil(np.array([[0.0, 0.5, 1.0]], np.float32)).save(tmp_path / "unit.tif")
    with pytest.raises(DataError, match=r"floating-point pixels from 0 to 1, which could be a 0-1 scale"):
        decode_image(tmp_path, "unit.tif", None)
    pil(np.array([[-1.0, 3.0]], np.float32)).save(tmp_path / "neg.tif")
    with pytest.raises(DataError, match=r"from -1 to 3, outside 0-255"):
        decode_image(tmp_path, "neg.tif", None)


def test_jfif_jpe_and_netpbm_files_are_read_as_the_images_they_hold(tmp_path):
    img = (np.arange(64).reshape(8, 8) * 4).astype(np.uint8)
    src = tmp_path / "src"
    src.mkdir()
    pil(np.stack([img] * 3, -1)).save(src / "a.jpg", format="JPEG")
    for name in ("b.jfif", "c.jpe"):
        (src / name).write_bytes((src / "a.jpg").read_bytes())
    pil(img).save(src / "d.pgm")
    pil(np.stack([img] * 3, -1)).save(src / "e.ppm")
    pil(img > 127).save(src / "f.pbm")
    out, summary = convert_folder(src, tmp_path / "cache")
    assert summary["images"] == 6 and summary["skipped"] == 0 and summary["unread_pictures"] == []
    x = np.round(load_dataset(out).x * 255).astype(np.uint8)[:, 0]
    assert (x[1] == x[0]).all() and (x[2] == x[0]).all()  # the same JPEG under three names
    assert (x[3] == img).all() and (x[4] == img).all() and (x[5] == np.where(img > 127, 255, 0)).all()


def test_an_image_too_large_to_keep_without_a_size_is_refused_before_the_rest_are_read(tmp_path, monkeypatch):
    import activebayes.data.images as images

    monkeypatch.setattr(images, "MAX_PIXELS_UNSIZED", 63)
    src = tmp_path / "src"
    src.mkdir()
    pil(np.zeros((8, 8), np.uint8)).save(src / "a.png")
    (src / "b.png").write_bytes(b"not read")  # decoding stops at the first image
    with pytest.raises(DataError, match=r"'a.png' is 8x8 \(0.0 megapixels\), and a round would hold 2 image\(s\).*"
                                        r"pass image_size=\(H, W\).*or image_size 8x8 to keep them as they are"):  # fmt: skip
        convert_folder(src, tmp_path / "cache")
    (src / "b.png").unlink()
    _, summary = convert_folder(src, tmp_path / "cache", image_size=(8, 8))  # their own size, given: kept
    assert summary["size"] == [8, 8]


def test_a_decompression_bomb_is_named_with_its_size_and_the_warning_below_it_is_not_shown(tmp_path, monkeypatch):
    from PIL import Image

    pil(np.zeros((10, 10), np.uint8)).save(tmp_path / "a.png")
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 60)  # warned above 60 pixels, refused above 120
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert decode_image(tmp_path, "a.png", None).original == (10, 10)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 40)
    with pytest.raises(DataError, match=r"'a.png' is 100 pixels, more than Pillow reads; shrink it"):
        decode_image(tmp_path, "a.png", None)


def test_sixteen_bit_images_that_use_twelve_bits_or_fewer_are_noted(tmp_path):
    """12-bit camera images (values up to 4095) read on the 0-65535 scale keep 16 grey levels:
    the summary names them; one image reaching 4096 or above (13 bits) and none is noted."""
    src = tmp_path / "src"
    src.mkdir()
    pil(np.array([[0, 100]], np.uint16)).save(src / "a.png")
    pil(np.array([[0, 4095]], np.uint16)).save(src / "b.png")
    _, summary = convert_folder(src, tmp_path / "cache")
    assert summary["dim_deep"] == {"images": 2, "max": 4095, "example": "b.png"}
    pil(np.array([[0, 4096]], np.uint16)).save(src / "c.png")
    assert convert_folder(src, tmp_path / "cache")[1]["dim_deep"] is None


def test_a_text_file_named_png_is_named_as_no_picture(tmp_path):
    (tmp_path / "notes.png").write_text("not a picture\n")
    with pytest.raises(DataError, match=r"'notes.png' is not a readable image \(its content is in no picture format Pillow reads, "
                                        r"whatever its name says\); repair or remove it$"):  # fmt: skip
        decode_image(tmp_path, "notes.png", None)


def test_an_animation_is_read_as_its_first_frame_and_noted(tmp_path):
    frames = [pil(np.full((4, 4), v, np.uint8)) for v in (0, 200, 90)]
    src = tmp_path / "src"
    src.mkdir()
    frames[0].save(src / "a.gif", save_all=True, append_images=frames[1:])
    pil(np.full((4, 4), 30, np.uint8)).save(src / "b.gif")
    one = decode_image(src, "a.gif", None)
    assert one.frames == 3 and (one.pixels == 0).all()
    out, summary = convert_folder(src, tmp_path / "cache")
    assert summary["animated"] == ["a.gif"]
