"""Registering a pool in a project, shared by `pool add` (a data file or an image folder, see
`_pool_folder.py`) and the tabular study: check the file whole, then record its path, sha256,
items, test split and truth (`register_pool`).
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np

from activebayes_cli._app import CliError


class ImageLayout(str, Enum):
    flat = "flat"
    chw = "chw"


class Categorical(str, Enum):
    auto = "auto"
    error = "error"


def infer_classes(labels: list[str] | None, file: Path, truth: Path | None) -> list[str]:
    """The classes of a project created without `--classes`: the distinct labels, naturally sorted."""
    from activebayes.data import natural_sorted

    if labels is None:
        raise CliError(
            f"--classes: the project was created without classes and {file} has no labels to read them from",
            "pass --label-column C (or --truth FILE), or create the project with `activebayes init --classes ...`",
        )
    found = natural_sorted(labels)
    if len(found) < 2:
        source = truth if truth is not None else file
        raise CliError(
            f"--classes: the labels of {source} hold {len(found)} distinct value(s) {found}, a classifier needs at least 2",
            "check the label column, or create the project with `activebayes init --classes ...`",
        )
    return found


def feature_settings(data: Any, fmt: str, pool_rows: np.ndarray, standardize: bool) -> dict[str, Any] | None:
    """settings["features"] of a new pool: the text columns' categories and, for a table
    ([N, D] csv/npz) unless --no-standardize, each feature's mean and scale over the pool rows
    (the test split excluded), applied at every load (`activebayes.data.fit_features`)."""
    from activebayes.data.features import can_standardize, fit_features

    scaled = standardize and can_standardize(fmt, data.x)
    if not scaled and not data.categories:
        return None
    rows = np.asarray(data.x)[pool_rows] if scaled else data.x
    return fit_features(
        rows, categories=data.categories, one_hot_columns=data.one_hot_columns, standardize_features=scaled
    )


def _csv_header(path: Path) -> list[str]:
    """The column names of a csv file, read as the loader reads them (BOM, `;` or tab)."""
    from activebayes.data.loaders import csv_header

    return csv_header(path)


def split_rows(n: int, test_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(pool rows, test rows), sorted; the test rows are a seeded uniform sample of round(f·n)."""
    n_test = int(round(test_fraction * n))
    if test_fraction > 0 and not 1 <= n_test < n:
        raise CliError(
            f"--test-fraction: {test_fraction} of {n} rows leaves {n_test} test and {n - n_test} pool items",
            "choose a fraction that keeps at least one item in each",
        )
    order = np.random.default_rng(seed).permutation(n)
    return np.sort(order[n_test:]), np.sort(order[:n_test])


def register_pool(
    store: Any,
    name: str,
    file: Path,
    *,
    key_column: str | None = None,
    label_column: str | None = None,
    test_fraction: float = 0.0,
    labels_are_known: bool = False,
    truth: Path | None = None,
    image_layout: str = "flat",
    seed: int = 0,
    who: str = "import",
    standardize: bool = True,
    categorical: str = "auto",
) -> dict[str, Any]:
    """Validate `file` whole, then record it and its items in the store; returns a summary.

    Shared by `pool add` and `demo`.
    """
    from activebayes.data import detect_format, label_text, load_dataset, truth_labels
    from activebayes.errors import DataError

    info = store.project(name)
    if info.data_path is not None and store.count_items(name) > 0:
        raise CliError(
            f"project {name!r} already has a pool from {info.data_path}",
            "create another project with `activebayes init --name NAME` for a second data file",
        )
    fmt = detect_format(file)
    notes = []
    if fmt == "csv":
        header = _csv_header(file)
        if key_column is None and "key" in header:
            key_column = "key"
            notes.append("using the column 'key' as item keys (--key-column)")
        if label_column is None and "label" in header:
            label_column = "label"
            notes.append("using the column 'label' as labels (--label-column)")
    elif key_column is not None or label_column is not None:
        raise CliError(f"--key-column/--label-column: only a .csv file has columns, got a .{fmt} file", "leave them out")
    classes = info.classes if info.task == "classification" else None
    data = load_dataset(
        file, format=fmt, label_column=label_column, key_column=key_column, classes=classes,
        image_layout=image_layout, categorical=categorical,
    )  # fmt: skip
    n = len(data)
    keys = data.keys if data.keys is not None else [str(i) for i in range(n)]
    labels = [label_text(v) for v in data.y.tolist()] if data.y is not None else None
    if truth is not None:
        if labels is not None:
            raise CliError(f"--truth: {file} already holds labels", "leave --truth out, or drop the labels from FILE")
        try:
            labels = truth_labels(truth, keys, classes)
        except DataError as exc:
            raise DataError(f"--truth: {exc}") from exc
    if labels is None and (labels_are_known or test_fraction > 0):
        option = "--labels-are-known" if labels_are_known else "--test-fraction"
        raise CliError(f"{option}: {file} has no labels", "pass --label-column C for a csv, or leave the option out")
    new_classes = None
    if info.task == "classification" and classes is None:
        new_classes = infer_classes(labels, file, truth)
        notes.append(f"classes read from the labels: {', '.join(new_classes[:20])}" + (" ..." if len(new_classes) > 20 else ""))
    pool_rows, test_rows = split_rows(n, test_fraction, seed)
    features = feature_settings(data, fmt, pool_rows, standardize)
    truth_kind = "none" if labels is None else ("known" if labels_are_known else "held-back")
    settings = {
        "label_column": label_column,
        "key_column": key_column,
        "image_layout": image_layout,
        "truth": truth_kind,
        "test_fraction": test_fraction,
        "split_seed": seed,
    }
    if features is not None:
        settings["features"] = features
    if truth is not None:
        from activebayes.data import sha256_file

        settings.update(truth_path=str(truth.resolve()), truth_sha256=sha256_file(truth))
    # Everything is validated: one transaction records the file, the items and the known labels
    # (the test split's always, the pool's with --labels-are-known).
    known_rows = list(test_rows) + (list(pool_rows) if labels_are_known else [])
    store.import_pool(
        name, file, data_format=fmt, settings=settings,
        pool_rows=pool_rows, pool_keys=[keys[i] for i in pool_rows],
        test_rows=test_rows, test_keys=[keys[i] for i in test_rows],
        observations=[(keys[i], labels[i]) for i in known_rows], who=who, source="import", classes=new_classes,
    )  # fmt: skip
    return {
        "project": name,
        "file": str(file.resolve()),
        "format": fmt,
        "rows": n,
        "pool_items": int(len(pool_rows)),
        "test_items": int(len(test_rows)),
        "truth": truth_kind,
        "features": list(data.x.shape[1:]),
        "standardized": bool(features and features["standardize"]),
        "categorical": dict(data.categories or {}),
        "classes": new_classes if new_classes is not None else classes,
        "notes": notes,
    }
