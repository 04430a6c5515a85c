"""The round file's shared pieces: the columns it names, where an image pool's PNGs go, and
how an item is drawn as a PNG (used by `round` and by `export --format label-studio`)."""

from __future__ import annotations

import gzip
import math
from pathlib import Path
from typing import Any

import numpy as np

QUERY_COLUMNS = ("key", "label", "score", "rank")
# the round's prediction for the item (`QueryInfo.prediction`), empty where it has none
PREDICTION_COLUMNS = {"classification": ("predicted", "probability"), "regression": ("predicted", "predicted_sd")}
RESERVED_COLUMNS = (*QUERY_COLUMNS, "predicted", "probability", "predicted_sd")
IMAGE_MIN_SIDE = 112  # PNGs of small images are enlarged (nearest neighbour) to at least this


def round_columns(task: str) -> tuple[str, ...]:
    """The round file's leading columns for a project's task: key, label, score, rank, then the
    prediction's (classification: predicted, probability; regression: predicted, predicted_sd)."""
    return (*QUERY_COLUMNS, *PREDICTION_COLUMNS.get(task, ()))


def prediction_cells(prediction: dict[str, Any] | None, task: str) -> list[str]:
    """The prediction columns' cells of one query: the class and its probability (4 decimals),
    or the predictive mean and sd; empty cells without a prediction (a cold-start round)."""
    names = PREDICTION_COLUMNS.get(task, ())
    if not prediction:
        return [""] * len(names)
    if task == "classification":
        return [str(prediction["label"]), f"{prediction['probability']:.4f}"]
    return [repr(float(prediction["mean"])), repr(float(prediction["sd"]))]


def prediction_text(prediction: dict[str, Any] | None) -> str:
    """"7 (0.62)" for a class and its probability, "3.1 ± 0.4" for a mean and sd, "" for none."""
    if not prediction:
        return ""
    if "label" in prediction:
        return f"{prediction['label']} ({prediction['probability']:.2f})"
    return f"{prediction['mean']:.4g} ± {prediction['sd']:.2g}"


def images_folder(csv_path: Path) -> Path:
    """Where the PNGs of an image pool's queries go: `<csv name>-images/` next to the CSV."""
    return csv_path.with_name(f"{csv_path.stem}-images")


def _idx_shape(path: Path) -> tuple[int, ...]:
    """The array shape in an IDX file's header (raw or .gz), without reading the data."""
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    with opener(path, "rb") as fh:
        head = fh.read(4)
        if len(head) < 4:
            return ()
        return tuple(int(d) for d in np.frombuffer(fh.read(4 * head[3]), dtype=">u4"))


def image_shape(info: Any, data: Any) -> tuple[int, ...] | None:
    """The shape of one item as an image ([H, W] or [C, H, W], C = 1 or 3), or None for a table
    pool. Image pools: MNIST IDX images (flattened or [1, H, W]) and arrays [N, H, W] or
    [N, C, H, W] in .npy/.npz files."""
    shape = tuple(int(s) for s in data.x.shape[1:])
    if len(shape) == 2 or (len(shape) == 3 and shape[0] in (1, 3)):
        return shape
    if len(shape) == 1 and data.format == "idx":
        header = _idx_shape(Path(data.path))
        if len(header) == 3 and header[1] * header[2] == shape[0]:
            return header[1:]
    return None


def feature_columns(info: Any, data: Any) -> list[str]:
    """The names of the features' columns in the round file: a csv pool's own feature columns (as
    in the file: no key, label or ignored column), else x0, x1, ... over the flattened item. A name that clashes
    with key, label, score, rank, the prediction's columns or another column gets a 'feature_'
    prefix."""
    raw_columns = getattr(data, "raw_columns", None)
    if raw_columns is not None:  # a csv table: its feature columns as in the file
        names = list(raw_columns)
    else:
        width = int(np.prod(data.x.shape[1:]))
        own = getattr(data, "feature_names", None)
        names = list(own) if own is not None and len(own) == width else [f"x{j}" for j in range(width)]
    taken = set(RESERVED_COLUMNS)
    out = []
    for name in names:
        while name in taken:
            name = f"feature_{name}"
        taken.add(name)
        out.append(name)
    return out


def write_png(path: Path, pixels: np.ndarray) -> None:
    """A grey ([H, W] / [1, H, W]) or colour ([3, H, W]) image as PNG; values outside [0, 1]
    are scaled by the image's own range; small images are enlarged to be seen."""
    from matplotlib.image import imsave

    img = np.asarray(pixels, dtype=np.float64)
    if img.ndim == 3:
        img = img[0] if img.shape[0] == 1 else img.transpose(1, 2, 0)
    lo, hi = float(img.min()), float(img.max())
    if lo < 0.0 or hi > 1.0:
        img = (img - lo) / (hi - lo) if hi > lo else np.zeros_like(img)
    factor = max(1, math.ceil(IMAGE_MIN_SIDE / max(img.shape[:2])))
    img = img.repeat(factor, axis=0).repeat(factor, axis=1)
    imsave(path, img, cmap="gray", vmin=0.0, vmax=1.0, format="png")
