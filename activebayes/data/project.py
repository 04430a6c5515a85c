"""A store project's data: its data file loaded with the settings recorded at `pool add`, and
the labels held back as its truth (the data file's own labels, or a separate truth file).

    data = load_project_data(store, "digits")    # checked against its sha256 first
    truth = project_truth(store, "digits", data)  # {key: label}, or None without any truth

`store` is an open `activebayes.store.PoolStore` (duck-typed: `project`, `verify_data`).
"""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from activebayes.data.feature_cache import cached_dataset
from activebayes.data.loaders import Dataset, check_labels, label_text, load_dataset, load_labels, sha256_file
from activebayes.errors import DataError


def load_project_data(store: Any, project: str) -> Dataset:
    """The project's data file as a `Dataset`, loaded with the project's settings after checking
    its sha256 (DataError naming the file when it changed); the feature encoding and
    standardisation recorded at `pool add` (settings["features"]) are applied. A csv table or an
    image folder comes from its feature cache (`activebayes.data.feature_cache`), memory-mapped."""
    info = store.project(project)
    path = store.verify_data(project)
    cached = cached_dataset(info, path)  # the features made once at `pool add` (csv tables, image folders)
    if cached is not None:
        return cached
    settings = info.settings
    return load_dataset(
        path, format=info.data_format, label_column=settings.get("label_column"),
        key_column=settings.get("key_column"), image_layout=settings.get("image_layout", "flat"),
        features=settings.get("features"),  # recorded at `pool add`: categories + standardisation
    )  # fmt: skip


def truth_labels(path: str | Path, keys: Sequence[str], classes: Sequence[Any] | None = None) -> list[str]:
    """The labels of a separate truth file (.npy/.npz/IDX [N] in row order, or a csv with
    key,label columns) as `label_text`, aligned with the data file's `keys`; DataError naming
    the file when a key has no label or the row counts differ, or (with `classes`) naming the
    row and line of a label that is not one of them. Keys match in Unicode's composed form (NFC),
    so 'café.png' typed matches a file name a Mac stores decomposed (NFD)."""
    truth = load_labels(path)
    if classes is not None:
        check_labels(truth.y, classes, Path(path), truth.lines)
    values = [label_text(v) for v in truth.y.tolist()]
    if truth.keys is not None:  # keys compared in NFC: a macOS file name (NFD) is the name as typed
        by_key = {unicodedata.normalize("NFC", str(k)): v for k, v in zip(truth.keys, values)}
        composed = [unicodedata.normalize("NFC", k) for k in keys]
        missing = [k for k, c in zip(keys, composed) if c not in by_key]
        if missing:
            raise DataError(f"truth file {str(path)!r} has no label for {len(missing)} item(s), e.g. {missing[0]!r}; give a label for every key")
        return [by_key[c] for c in composed]
    if len(values) != len(keys):
        raise DataError(f"truth file {str(path)!r} has {len(values)} labels for {len(keys)} data rows; pass the labels file that belongs to the data file")
    return values


def label_texts(y: np.ndarray) -> list[str]:
    """`label_text` of every label in y [N], at once for text (label_text of text is the text stripped)."""
    return np.char.strip(y).tolist() if y.dtype.kind == "U" else [label_text(v) for v in y.tolist()]


def project_truth(store: Any, project: str, data: Dataset | None = None) -> dict[str, str] | None:
    """{key: label} of the labels held back at `pool add`: the data file's labels, or its truth
    file (settings["truth_path"], checked against its recorded sha256: DataError when missing or
    changed); None when the project has neither. `data`: the project's data already loaded by
    `load_project_data` (loaded here when None)."""
    data = data if data is not None else load_project_data(store, project)
    keys = data.keys if data.keys is not None else [str(i) for i in range(len(data))]
    if data.y is not None:
        return dict(zip(keys, label_texts(data.y)))
    settings = store.project(project).settings
    if not settings.get("truth_path"):
        return None
    path = Path(settings["truth_path"])
    if not path.is_file() or sha256_file(path) != settings.get("truth_sha256"):
        raise DataError(f"truth file {str(path)!r} of project {project!r} is missing or changed since the pool was added; restore it")
    return dict(zip(keys, truth_labels(path, keys)))
