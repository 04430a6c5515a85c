"""The bundled demo data: scikit-learn's handwritten digits (1797 8x8 images, labels 0-9),
which ships inside scikit-learn, written out as a file a project can reference."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from activebayes.errors import DataError

DIGITS_CLASSES = tuple(str(c) for c in range(10))


def digits_arrays() -> tuple[np.ndarray, np.ndarray]:
    """(x [1797, 64] float32 in [0, 1], y [1797] int64 in 0..9) from sklearn.datasets.load_digits."""
    from sklearn.datasets import load_digits

    bunch = load_digits()
    return (bunch.data / 16.0).astype(np.float32), bunch.target.astype(np.int64)


def write_digits(path: str | Path, *, format: str | None = None, overwrite: bool = False) -> Path:
    """Write the digits to `path` as .npz (arrays x, y, keys) or .csv (columns key, p0..p63,
    label); returns the path. An existing file is refused (DataError) unless `overwrite`."""
    path = Path(path)
    fmt = format or path.suffix.lstrip(".").lower()
    if fmt not in ("npz", "csv"):
        raise DataError(f"format: expected 'npz' or 'csv' for the digits demo file, got {fmt!r} ({str(path)!r})")
    if path.exists() and not overwrite:
        raise DataError(f"data file {str(path)!r} already exists; pass overwrite=True or choose another path")
    x, y = digits_arrays()
    keys = np.asarray([f"digit-{i:04d}" for i in range(len(y))])
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "npz":
        with path.open("wb") as fh:  # a file handle keeps numpy from appending .npz
            np.savez(fh, x=x, y=y, keys=keys)
    else:
        with path.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(["key", *[f"p{j}" for j in range(x.shape[1])], "label"])
            for k, row, label in zip(keys.tolist(), x.tolist(), y.tolist()):
                writer.writerow([k, *[f"{v:.4g}" for v in row], label])
    return path
