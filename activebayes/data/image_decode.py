"""One image file as the uint8 RGB pixels a pool holds: `decode_image(folder, rel, size)`.

What a person labelling sees of the file is what the model gets:

* turned upright as its EXIF orientation says (a phone's photo is stored sideways with a tag
  that every viewer, and the labelling page, applies);
* transparent pixels laid on white, as the labelling page shows them: an alpha channel (RGBA,
  LA, a palette with a transparent colour) says how much of each pixel's colour shows, and the
  colour stored under a transparent pixel is whatever the program that saved it left there
  (black in a digit drawn on a clear background, which would read as an all-black image once
  the alpha was dropped). Each channel becomes `a * c + (1 - a) * 255`, a = alpha / 255, rounded.
  `alpha_on_white=False` drops the alpha instead, as pools converted before did;
* 16-bit greyscale (and 32-bit integer pixels within 0..65535) scaled to 8 bits (v / 257,
  rounded); floating-point pixels read on the 0..255 scale when their largest value is above 1
  and none is below 0 or above 255; pixels outside those ranges, or floats all within 0..1
  (a 0..1 scale cannot be told from a nearly black 0..255 image), are refused: no guess;
* of an animated GIF or a multi-page TIFF, the first frame;
* in sRGB, the colours a browser shows: a file with an embedded ICC colour profile (a camera's
  Adobe RGB, a phone's Display P3, a CMYK JPEG's print profile, a scan's grey gamma) is
  converted from it to sRGB by LittleCMS (Pillow's `ImageCms`, perceptual intent, as
  `ImageCms.profileToProfile`), CMYK to RGB with it; an alpha channel is kept as it was, and a
  grey image stays grey (the green channel of its sRGB). A profile LittleCMS cannot read, or one
  of another colour space than the pixels' (an RGB profile in a grey file), is ignored, as
  browsers ignore it. `icc_to_srgb=False` reads the pixels as they are stored, as pools
  converted before did (and where Pillow was built without LittleCMS).

Pillow's guard against decompression bombs stays (an image of more than 2 x 89,478,485 pixels is
refused, named with its size); between the two limits Pillow's warning is not shown, as these are
the user's own files.
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from activebayes.errors import DataError

_WHOLE_INT = ("I", "I;16", "I;16B", "I;16L", "I;16N")
_ALPHA_MODES = ("RGBA", "LA", "PA", "RGBa", "La")
_PROFILED = ("RGB", "RGBA", "CMYK", "L", "LA", "P", "PA")  # the modes whose ICC profile is applied


@dataclass(frozen=True)
class DecodedImage:
    """One image as read: `pixels` uint8 [H, W, 3]; `original` its upright (H, W) before any
    resize; `deep_max` the largest pixel value of a 16- or 32-bit integer image (None for
    others); `frames` how many frames the file holds (the first is read)."""

    pixels: np.ndarray
    original: tuple[int, int]
    deep_max: int | None = None
    frames: int = 1


def decode_image(folder: Path, rel: str, size: tuple[int, int] | None, *, alpha_on_white: bool = True,
                 icc_to_srgb: bool = True) -> DecodedImage:  # fmt: skip
    """Image `folder/rel` as read (module docstring), resized to `size` (H, W) when given
    (bilinear, aspect ratio not kept); DataError naming it when it cannot be read or its pixels'
    range is not one of those read."""
    from PIL import Image, ImageOps

    path = folder / rel
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(path) as img:
                img.load()
                icc = img.info.get("icc_profile") if icc_to_srgb else None
                frames = int(getattr(img, "n_frames", 1))
                img = ImageOps.exif_transpose(img)  # upright, as viewers show it
                original = (img.height, img.width)
                deep = int(np.asarray(img).max()) if img.mode in _WHOLE_INT else None
                img = _eight_bit(img, folder, rel)
                img = _in_srgb(img, icc)
                img = _on_white(img) if alpha_on_white else img.convert("RGB")
                if size is not None and (img.height, img.width) != size:
                    img = img.resize((size[1], size[0]), Image.Resampling.BILINEAR)
                return DecodedImage(np.asarray(img, dtype=np.uint8), original, deep, frames)
    except DataError:
        raise
    except Image.DecompressionBombError as exc:
        raise DataError(f"image folder {str(folder)!r}: {rel!r} is {_bomb_size(exc)}, more than Pillow reads; "
                        "shrink it (e.g. to 8192 pixels a side) or remove it") from None  # fmt: skip
    except Exception as exc:  # noqa: BLE001 - Pillow raises OSError, ValueError, SyntaxError...
        reason = " ".join(str(exc).split()) or type(exc).__name__
        if path.is_file() and path.stat().st_size == 0:
            reason = "an empty file, 0 bytes"
        elif reason.startswith("cannot identify image file"):  # Pillow's words, with the whole path again
            reason = "its content is in no picture format Pillow reads, whatever its name says"
        raise DataError(f"image folder {str(folder)!r}: {rel!r} is not a readable image ({reason}); repair or remove it") from None


def _bomb_size(exc: Exception) -> str:
    words = str(exc).split()
    pixels = next((w.strip("(") for w in words if w.strip("(").isdigit()), None)
    return f"{int(pixels):,} pixels" if pixels else "too large"


def _eight_bit(img, folder: Path, rel: str):  # type: ignore[no-untyped-def]
    """`img` with 16-bit, 32-bit integer or floating-point pixels as an 8-bit "L" image (module
    docstring); any other image as it is."""
    from PIL import Image

    if img.mode not in (*_WHOLE_INT, "F"):
        return img
    arr = np.asarray(img, dtype=np.float64)
    lo, hi = float(arr.min()), float(arr.max())
    top = 255.0 if img.mode == "F" else 65535.0
    where = f"image folder {str(folder)!r}: {rel!r}"
    save_as = "save it as an 8-bit (0-255) or 16-bit (0-65535) image"
    if lo < 0 or hi > top:
        raise DataError(f"{where} holds pixel values from {lo:g} to {hi:g}, outside 0-{top:g}; {save_as}")
    if img.mode == "F" and 0 < hi <= 1:
        raise DataError(f"{where} holds floating-point pixels from {lo:g} to {hi:g}, which could be a 0-1 scale or a "
                        f"nearly black 0-255 image; {save_as}")  # fmt: skip
    scaled = arr if img.mode == "F" else arr / 257.0
    return Image.fromarray(np.clip(np.round(scaled), 0, 255).astype(np.uint8), "L")


def _in_srgb(img, icc: bytes | None):  # type: ignore[no-untyped-def]
    """`img` converted from `icc`, the ICC profile its file holds, to sRGB (module docstring);
    as it is without a profile, in a mode not listed in _PROFILED, or where the profile cannot be
    used (`_to_srgb`)."""
    if not icc or img.mode not in _PROFILED:
        return img
    if img.mode in ("P", "PA"):
        img = img.convert("RGBA" if img.mode == "PA" or "transparency" in img.info else "RGB")
    alpha = img.getchannel("A") if img.mode in ("RGBA", "LA") else None
    colour = img.convert(img.mode[:-1]) if alpha is not None else img  # LittleCMS is given the colours alone
    transform = _to_srgb(bytes(icc), colour.mode)
    if transform is None:
        return img
    out = transform.apply(colour)
    if colour.mode == "L":
        out = out.getchannel("G")  # a grey's sRGB is neutral (R = G = B): the image stays grey, one channel
    if alpha is not None:
        out.putalpha(alpha)
    return out


@lru_cache(maxsize=16)
def _to_srgb(icc: bytes, mode: str):  # type: ignore[no-untyped-def]
    """LittleCMS's transform from ICC profile `icc` (the bytes of the file's profile; many files
    share one, a camera's) of pixels in `mode` ("RGB", "CMYK" or "L") to sRGB RGB, perceptual
    intent; None where Pillow has no LittleCMS, the profile cannot be read, or its colour space
    is not `mode`'s."""
    try:
        from PIL import ImageCms
    except ImportError:
        return None
    try:
        return ImageCms.buildTransform(ImageCms.ImageCmsProfile(io.BytesIO(icc)), ImageCms.createProfile("sRGB"), mode, "RGB")
    except (ImageCms.PyCMSError, OSError, ValueError, TypeError):
        return None


def _on_white(img):  # type: ignore[no-untyped-def]
    """`img` as RGB, its transparent pixels laid on white (module docstring)."""
    from PIL import Image

    if img.mode not in _ALPHA_MODES and "transparency" not in img.info:  # a palette's or a PNG's transparent colour
        return img.convert("RGB")
    rgba = np.asarray(img.convert("RGBA"))
    alpha = rgba[..., 3:].astype(np.uint16)
    # round(a c / 255) + (255 - a) in integers (a c / 255 is never a half): 2 bytes a value, for large pictures
    blended = (rgba[..., :3] * alpha + 127) // 255 + (255 - alpha)
    return Image.fromarray(blended.astype(np.uint8), "RGB")


__all__ = ["DecodedImage", "decode_image"]
