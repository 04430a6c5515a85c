"""activebayes.data.image_decode's colour profiles: a file's embedded ICC profile (Adobe RGB, a
CMYK print profile, a grey gamma; built in tests/icc_profiles.py) converts its colours to sRGB,
pixel for pixel as Pillow's own `ImageCms.profileToProfile` does on the same file; a profile
that cannot be used is ignored; a pool converted before profiles were applied appends its new
images as stored, as it read its first ones."""

from __future__ import annotations

import io
from dataclasses import replace

import numpy as np
import pytest

from activebayes.data.image_append import append_images
from activebayes.data.image_decode import decode_image
from activebayes.data.image_manifest import read_manifest, write_manifest
from activebayes.data.images import convert_folder
from icc_profiles import adobe_rgb_like, cmyk_like, grey_gamma

ImageCms = pytest.importorskip("PIL.ImageCms", reason="Pillow was built without LittleCMS")
from PIL import Image  # noqa: E402

COLOURS = np.array([[[100, 150, 200], [0, 255, 0], [255, 0, 0], [128, 128, 128]],
                    [[20, 40, 60], [240, 200, 10], [90, 10, 160], [255, 255, 255]]], np.uint8)  # fmt: skip


def profile(data: bytes):
    return ImageCms.ImageCmsProfile(io.BytesIO(data))


def in_srgb(path, icc: bytes, mode: str = "RGB") -> np.ndarray:
    """Pillow's own conversion of the file's pixels from profile `icc` to sRGB."""
    with Image.open(path) as img:
        return np.asarray(ImageCms.profileToProfile(img, profile(icc), ImageCms.createProfile("sRGB"), outputMode=mode))


@pytest.mark.parametrize("name", ["a.png", "a.jpg", "a.tif"])
def test_an_adobe_rgb_image_is_read_in_srgb(tmp_path, name):
    """Adobe RGB's (100, 150, 200) is sRGB's (66, 151, 203): read as if it were sRGB, the photo's
    colours would differ from what the labelling page (a browser) shows."""
    icc = adobe_rgb_like()
    Image.fromarray(COLOURS).save(tmp_path / name, icc_profile=icc)
    with Image.open(tmp_path / name) as img:
        stored = np.asarray(img.convert("RGB"))
    read = decode_image(tmp_path, name, None).pixels
    assert (read == in_srgb(tmp_path / name, icc)).all()
    assert (np.abs(read.astype(int) - stored).max(axis=-1) > 10).any()  # the profile changed them
    assert (decode_image(tmp_path, name, None, icc_to_srgb=False).pixels == stored).all()
    if name == "a.png":
        assert read[0, 0].tolist() == [66, 151, 203]


def test_a_cmyk_jpeg_is_read_through_its_profile_and_without_one_as_before(tmp_path):
    icc = cmyk_like()
    ink = np.array([[[0, 0, 0, 0], [255, 0, 0, 0], [0, 255, 0, 0], [0, 0, 255, 0]],
                    [[0, 0, 0, 255], [60, 120, 30, 10], [200, 200, 200, 0], [10, 90, 180, 40]]], np.uint8)  # fmt: skip
    Image.fromarray(ink, "CMYK").save(tmp_path / "print.jpg", icc_profile=icc, quality=100)
    Image.fromarray(ink, "CMYK").save(tmp_path / "bare.jpg", quality=100)
    with Image.open(tmp_path / "print.jpg") as img:
        assert img.mode == "CMYK"
        naive = np.asarray(img.convert("RGB"))
    read = decode_image(tmp_path, "print.jpg", None).pixels
    assert read.shape == (2, 4, 3) and (read == in_srgb(tmp_path / "print.jpg", icc)).all()
    assert (np.abs(read.astype(int) - naive).max(axis=-1) > 10).any()
    with Image.open(tmp_path / "bare.jpg") as img:
        assert (decode_image(tmp_path, "bare.jpg", None).pixels == np.asarray(img.convert("RGB"))).all()


def test_an_alpha_channel_is_kept_and_a_palette_converted_too(tmp_path):
    """The colours are converted, then laid on white as the page shows them (a * c + (1 - a) * 255)."""
    icc = adobe_rgb_like()
    rgba = np.concatenate([COLOURS, np.full((2, 4, 1), 128, np.uint8)], axis=-1)
    Image.fromarray(rgba, "RGBA").save(tmp_path / "half.png", icc_profile=icc)
    colours = in_srgb(tmp_path / "half.png", icc, "RGBA")[..., :3].astype(np.uint16)
    assert (decode_image(tmp_path, "half.png", None).pixels == (colours * 128 + 127) // 255 + 127).all()
    Image.fromarray(COLOURS).quantize(8).save(tmp_path / "p.png", icc_profile=icc)  # a palette of its 8 colours
    with Image.open(tmp_path / "p.png") as img:
        expected = np.asarray(ImageCms.profileToProfile(img.convert("RGB"), profile(icc), ImageCms.createProfile("sRGB")))
    assert (decode_image(tmp_path, "p.png", None).pixels == expected).all()


def test_a_grey_image_with_a_grey_profile_stays_grey(tmp_path):
    icc = grey_gamma(1.8)
    levels = np.arange(0, 256, 15, dtype=np.uint8).reshape(2, 9)
    src = tmp_path / "src"
    src.mkdir()
    Image.fromarray(levels).save(src / "scan.png", icc_profile=icc)
    srgb = in_srgb(src / "scan.png", icc)
    assert (srgb[..., 0] == srgb[..., 1]).all() and (srgb[..., 2] == srgb[..., 1]).all()  # neutral
    read = decode_image(src, "scan.png", None).pixels
    assert (read == srgb).all() and read[0, 1, 0] == 18 != levels[0, 1]  # gamma 1.8's 15 is sRGB's 18
    out, summary = convert_folder(src, tmp_path / "cache")
    assert summary["channels"] == 1 and (read_manifest(out, pixels=True)[1][0, 0] == srgb[..., 0]).all()


def test_a_profile_that_cannot_be_used_is_ignored(tmp_path):
    """Unreadable bytes, or an RGB profile in a grey file: the pixels as stored, as a browser shows them."""
    Image.fromarray(COLOURS).save(tmp_path / "junk.png", icc_profile=b"not a colour profile")
    assert (decode_image(tmp_path, "junk.png", None).pixels == COLOURS).all()
    grey = COLOURS[..., 0]
    Image.fromarray(grey).save(tmp_path / "grey.png", icc_profile=adobe_rgb_like())
    assert (decode_image(tmp_path, "grey.png", None).pixels == grey[..., None]).all()
    srgb = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    Image.fromarray(COLOURS).save(tmp_path / "srgb.png", icc_profile=srgb)
    assert (decode_image(tmp_path, "srgb.png", None).pixels == COLOURS).all()  # sRGB in, sRGB out


def test_a_folder_converted_before_profiles_were_applied_appends_its_images_as_stored(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    Image.fromarray(COLOURS).save(src / "a.png")
    out, _ = convert_folder(src, tmp_path / "cache")
    manifest, x = read_manifest(out, pixels=True)
    assert manifest.icc_to_srgb
    older = write_manifest(tmp_path / "cache", "old", replace(manifest, icc_to_srgb=False), x)
    Image.fromarray(COLOURS).save(src / "b.png", icc_profile=adobe_rgb_like())
    new_out, _ = append_images(out, tmp_path / "cache", stem="now")
    old_out, _ = append_images(older, tmp_path / "cache", stem="old")
    assert (read_manifest(new_out, pixels=True)[1][1].transpose(1, 2, 0) == in_srgb(src / "b.png", adobe_rgb_like())).all()
    assert read_manifest(new_out)[0].icc_to_srgb
    assert (read_manifest(old_out, pixels=True)[1][1].transpose(1, 2, 0) == COLOURS).all() and not read_manifest(old_out)[0].icc_to_srgb
