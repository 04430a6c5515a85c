"""Copies of an image folder's files for a person labelling, that carry the picture and nothing else.

A round file's images and Label Studio's tasks point the labeller at copies of the pool's files,
named neutrally, because the original's path can spell its class (`dark/dark0.png`). The file
itself can too: EXIF (ImageDescription, the camera's original file name, GPS, the artist), XMP and
IPTC keywords, a JPEG comment or a PNG's text chunks are written by cameras and by whoever
sorted the photos. So a copy is the picture re-encoded, not the file's bytes:

* turned upright as its EXIF orientation says (`ImageOps.exif_transpose`, as `pool add` does for
  the model and every viewer does for a person), so no orientation tag is needed;
* a JPEG stays a JPEG (quality 95, no chroma subsampling: a re-encoding a person cannot tell from
  the original), every other format becomes a PNG (lossless; a browser shows it, where it would
  not show a TIFF); of an animated GIF or a multi-page TIFF the first frame, as the model reads;
* with no metadata but the ICC colour profile, which says how to show the colours (a photo in
  Adobe RGB looks washed out without it).

The original is left alone: the opaque ids' check (`activebayes_cli._task_ids`) and the pool's
checks hash the original files, never a copy.
"""

from __future__ import annotations

from pathlib import Path

from activebayes.atomic_files import atomic_write

_JPEG = (".jpg", ".jpeg")
_PNG_MODES = ("1", "L", "LA", "I", "I;16", "P", "RGB", "RGBA")
_JPEG_MODES = ("L", "RGB", "CMYK")


def write_bare_copy(source: Path, stem: Path) -> Path:
    """Write the upright picture of image file `source`, without metadata (module docstring), to
    `stem` plus ".jpg" (a JPEG source, its own suffix kept when it is .jpg or .jpeg) or ".png";
    the path written. A source is a JPEG by its content, not its name. A file of that name is
    replaced."""
    from PIL import Image, ImageOps

    with Image.open(source) as img:
        img.load()
        jpeg = img.format == "JPEG"  # what the file holds, whatever its name says (a PNG named .jpg stays lossless)
        icc = img.info.get("icc_profile")
        upright = ImageOps.exif_transpose(img)
    suffix = source.suffix.lower() if jpeg and source.suffix.lower() in _JPEG else ".jpg" if jpeg else ".png"
    target = stem.with_name(stem.name + suffix)
    modes = _JPEG_MODES if jpeg else _PNG_MODES
    if upright.mode not in modes:
        upright = upright.convert("RGBA" if "A" in upright.getbands() and not jpeg else "RGB")
    bare = Image.new(upright.mode, upright.size)  # a new image: none of the original's info, EXIF or palette
    if upright.mode == "P":
        bare.putpalette(upright.getpalette())
        transparency = upright.info.get("transparency")
    else:
        transparency = None
    bare.paste(upright)
    options = {"icc_profile": icc} if icc else {}
    if jpeg:
        options.update(quality=95, subsampling=0)
    elif transparency is not None:
        options["transparency"] = transparency
    with atomic_write(target, "wb") as fh:  # whole or not at all: a failure leaves the old file
        bare.save(fh, format="JPEG" if jpeg else "PNG", **options)
    return target
