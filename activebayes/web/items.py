"""How the labelling page shows one item: as its image, its table row (the raw values, as in the
data file) or its text. Pure functions of a loaded `Dataset` and a row index.

    view = item_view(data, row, text_columns(info.settings))   # ItemView(kind, cells)
    png = image_png(data, row)                                  # bytes, or None for a table

Kinds:
    image   an image pool: an image folder (its original file is served as it is), or an array
            of images [N, H, W], [N, 1, H, W], [N, 3, H, W], or flattened square digits [N, 64] /
            [N, 784] (8x8, 28x28), as the terminal prompt draws them;
    text    a table row with a text column (`pool add --text-column`) or a long free-text cell:
            the text is shown as a paragraph, the other cells under their column names;
    table   any other row: each feature under its column name, its value as in the file.

Every string reaches the page through Jinja2's autoescaping: a cell holding `<script>` is text.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

IMAGE_MIN_SIDE = 160  # small images are enlarged (nearest neighbour) to at least this many pixels
LONG_TEXT = 60  # a cell with a space and at least this many characters reads as prose
# originals a browser shows as they are; a TIFF is served as a PNG of the pixels the model sees
_CONTENT_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".jfif": "image/jpeg", ".jpe": "image/jpeg", ".webp": "image/webp", ".bmp": "image/bmp", ".gif": "image/gif"}


@dataclass(frozen=True)
class ItemView:
    """`kind` "image" | "table" | "text"; `cells` (column, value, is_text) of a table row."""

    kind: str
    cells: tuple[tuple[str, str, bool], ...] = ()


def text_columns(settings: dict[str, Any] | None) -> frozenset[str]:
    """The names of a csv pool's text columns, as recorded at `pool add` (settings["features"])."""
    features = (settings or {}).get("features") or {}
    columns = features.get("columns") if isinstance(features, dict) else None
    return frozenset(c["name"] for c in columns or () if isinstance(c, dict) and c.get("kind") == "text")


def image_pixels(data: Any, row: int) -> np.ndarray | None:
    """Item `row` as an image [H, W] (grey) or [H, W, 3] (colour), in the data's own range, or
    None when the pool is a table. Image pools hold x [N, H, W] or [N, C, H, W] (C = 1 or 3);
    flattened [N, 64] / [N, 784] rows of a numeric array (not a csv table) are square digits."""
    if getattr(data, "raw_columns", None) is not None:
        return None
    item = np.asarray(data.x[row])
    if item.ndim == 2:
        return item
    if item.ndim == 3 and item.shape[0] == 1:
        return item[0]
    if item.ndim == 3 and item.shape[0] == 3:
        return item.transpose(1, 2, 0)
    if item.ndim == 1 and item.size in (64, 784) and getattr(data, "feature_names", None) is None:
        side = math.isqrt(item.size)
        return item.reshape(side, side)
    return None


def is_image_pool(data: Any) -> bool:
    return getattr(data, "folder", None) is not None or (len(data) > 0 and image_pixels(data, 0) is not None)


def image_png(pixels: np.ndarray) -> bytes:
    """`pixels` [H, W] or [H, W, 3] as PNG bytes: values outside [0, 1] scaled by the image's own
    range, small images enlarged by whole factors so that they can be seen."""
    from PIL import Image

    img = np.asarray(pixels, dtype=np.float64)
    lo, hi = float(img.min()), float(img.max())
    if lo < 0.0 or hi > 1.0:
        img = (img - lo) / (hi - lo) if hi > lo else np.zeros_like(img)
    factor = max(1, math.ceil(IMAGE_MIN_SIDE / max(img.shape[:2])))
    img = np.clip(img, 0.0, 1.0).repeat(factor, axis=0).repeat(factor, axis=1)
    out = io.BytesIO()
    Image.fromarray((img * 255).round().astype(np.uint8)).save(out, format="PNG")
    return out.getvalue()


def original_image(data: Any, key: str) -> tuple[bytes, str] | None:
    """(bytes, content type) of item `key`'s original file in an image-folder pool, or None for
    another pool or a path that leaves the folder."""
    from activebayes.data.images import source_path

    file = source_path(data, key)
    if file is None:
        return None
    root = Path(data.folder).resolve()
    path = file.resolve()
    kind = _CONTENT_TYPES.get(path.suffix.lower())
    if kind is None or not path.is_relative_to(root) or not path.is_file():
        return None
    return path.read_bytes(), kind


def item_view(data: Any, row: int, texts: frozenset[str] = frozenset()) -> ItemView:
    """What the page shows of item `row` (see the module docstring)."""
    if is_image_pool(data):
        return ItemView("image")
    raw = getattr(data, "raw", None)
    values = np.asarray(raw[row] if raw is not None else data.x[row]).reshape(-1)
    names = getattr(data, "raw_columns", None) or getattr(data, "feature_names", None)
    if names is None or len(names) != len(values):
        names = [f"x{j}" for j in range(len(values))]
    cells = []
    for name, value in zip(names, values):
        shown = str(value.item()) if isinstance(value, np.generic) else str(value)
        cells.append((str(name), shown, name in texts or (len(shown) >= LONG_TEXT and " " in shown)))
    kind = "text" if any(is_text for _, _, is_text in cells) else "table"
    return ItemView(kind, tuple(cells))
