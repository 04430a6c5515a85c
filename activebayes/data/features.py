"""Feature helpers shared by the loaders: natural ordering of categories, one-hot encoding
against recorded categories, and the standardisation of an npz table.

A csv table's features are planned and encoded by `activebayes.data.tabular` (a scikit-learn
pipeline recorded as its spec); an npz table [N, D] is standardised with the statistics
`fit_features` records in the project's settings["features"] at `pool add` (over the pool rows)
and `apply_features` applies at every load:

    spec = fit_features(x_pool, standardize_features=True)   # at import
    x_model = apply_features(x, spec)                         # at every load
"""

from __future__ import annotations

import re
from typing import Any, Sequence

import numpy as np

from activebayes.errors import DataError

#: settings["features"] format version.
SPEC_VERSION = 1
_CHUNK = 65_536


def natural_key(text: str) -> tuple:
    """Sort key ordering text the way a person reads it: "2" < "10", "class2" < "class10";
    runs of digits compare as numbers, the rest case-insensitively (ties by the raw text)."""
    parts = re.split(r"(\d+(?:\.\d+)?)", str(text))
    key = []
    for i, part in enumerate(parts):
        if i % 2:
            key.append((0, float(part), ""))
        elif part:
            key.append((1, 0.0, part.casefold()))
    return (tuple(key), str(text))


def natural_sorted(values: Sequence[Any]) -> list[str]:
    """The distinct values of `values` as text, in natural order (`natural_key`)."""
    return sorted({str(v) for v in values}, key=natural_key)


def is_number(text: str) -> bool:
    """Whether `text` parses as a finite-or-not float (the csv loader's notion of numeric)."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def unseen_category(row: int, value: str, categories: Sequence[str], *, column: str, path: Any = None) -> DataError:
    """The error for a value outside the categories recorded at `pool add`, naming the column,
    the row and the known categories."""
    where = f"data file {str(path)!r} " if path is not None else ""
    known = ", ".join(list(categories)[:20]) + (" ..." if len(categories) > 20 else "")
    return DataError(
        f"{where}row {row}: column {column!r} has the category {value!r}, not seen when its encoding was "
        f"recorded at `pool add` (known: {known}); use only those categories, or import the file into a new project"
    )


def one_hot_codes(index: np.ndarray, n_categories: int) -> np.ndarray:
    """[N, K] float32 indicators of category indices `index` [N] (each in 0..K-1): out[i, index[i]] = 1."""
    out = np.zeros((index.shape[0], n_categories), dtype=np.float32)
    out[np.arange(index.shape[0]), index] = 1.0
    return out


def one_hot(values: Sequence[str], categories: Sequence[str], *, column: str, path: Any = None) -> np.ndarray:
    """[N, K] float32 indicators: out[i, j] = 1 iff values[i] == categories[j].

    A value outside `categories` (a category not seen when the encoding was recorded) raises a
    DataError naming the column, the row and the known categories (`unseen_category`).
    """
    lookup = {c: j for j, c in enumerate(categories)}
    index = np.empty(len(values), dtype=np.int64)
    for i, value in enumerate(values):
        j = lookup.get(value)
        if j is None:
            raise unseen_category(i, value, categories, column=column, path=path)
        index[i] = j
    return one_hot_codes(index, len(categories))


def standardize_stats(x: np.ndarray, *, skip: Sequence[int] = ()) -> tuple[np.ndarray, np.ndarray]:
    """(mean [D], scale [D]) of features x [N, D], float64, computed in row chunks.

        mean_d  = (1/N) Σ_i x_id
        scale_d = sqrt((1/N) Σ_i (x_id − mean_d)²)      (population standard deviation)

    A constant column (scale_d = 0, or below 1e-12·max(1, |mean_d|)) gets scale 1, so it maps to
    0 rather than to NaN. Columns in `skip` (one-hot indicators) get mean 0 and scale 1: left as is.
    """
    x2 = x.reshape(x.shape[0], -1)
    n, d = x2.shape
    total = np.zeros(d)
    for start in range(0, n, _CHUNK):
        total += np.asarray(x2[start : start + _CHUNK], dtype=np.float64).sum(axis=0)
    mean = total / max(n, 1)
    sq = np.zeros(d)
    for start in range(0, n, _CHUNK):
        sq += ((np.asarray(x2[start : start + _CHUNK], dtype=np.float64) - mean) ** 2).sum(axis=0)
    scale = np.sqrt(sq / max(n, 1))
    scale[scale <= 1e-12 * np.maximum(1.0, np.abs(mean))] = 1.0
    skip = list(skip)
    mean[skip], scale[skip] = 0.0, 1.0
    return mean, scale


def standardize(x: np.ndarray, mean: Sequence[float], scale: Sequence[float]) -> np.ndarray:
    """z = (x − mean) / scale per feature, as float32 [N, D] (a new array; x is not changed)."""
    x2 = np.asarray(x, dtype=np.float64).reshape(x.shape[0], -1)
    mean_a, scale_a = np.asarray(mean, dtype=np.float64), np.asarray(scale, dtype=np.float64)
    if mean_a.shape != (x2.shape[1],) or scale_a.shape != (x2.shape[1],):
        raise DataError(
            f"features: the recorded standardisation has {mean_a.shape[0]} features, the data {x2.shape[1]}; "
            "import the file into a new project"
        )
    return ((x2 - mean_a) / scale_a).astype(np.float32).reshape(x.shape)


def can_standardize(fmt: str, x: np.ndarray) -> bool:
    """Whether a pool gets standardised by default: tabular features [N, D] from a csv or npz
    file (images, IDX files and memory-mapped .npy files are kept raw)."""
    return fmt in ("csv", "npz") and x.ndim == 2


def fit_features(
    x: np.ndarray,
    *,
    categories: dict[str, list[str]] | None = None,
    one_hot_columns: Sequence[int] = (),
    standardize_features: bool = True,
) -> dict[str, Any]:
    """The spec recorded in the project's settings["features"]:

    {"version": 1, "categorical": {column: [categories in order]}, "standardize": bool,
     "mean": [D] | None, "scale": [D] | None}

    `x` is the encoded table (one-hot columns included, listed in `one_hot_columns`)."""
    spec: dict[str, Any] = {
        "version": SPEC_VERSION,
        "categorical": dict(categories or {}),
        "standardize": bool(standardize_features),
        "mean": None,
        "scale": None,
    }
    if standardize_features:
        mean, scale = standardize_stats(x, skip=one_hot_columns)
        spec["mean"], spec["scale"] = [float(v) for v in mean], [float(v) for v in scale]
    return spec


def apply_features(x: np.ndarray, spec: dict[str, Any] | None) -> np.ndarray:
    """x with the recorded standardisation applied (x itself when the spec has none)."""
    if not spec or not spec.get("standardize") or spec.get("mean") is None:
        return x
    return standardize(x, spec["mean"], spec["scale"])
