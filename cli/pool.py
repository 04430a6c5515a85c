"""`activebayes pool add FILE`: register a data file as the project's pool of candidates.

The file is checked whole before anything is written (format, numeric finite features, unique
keys, every label among the classes); then its path and sha256 are recorded and one item is
created per row. A label column is held back as the truth that `round --oracle truth` answers
from, or imported as observations with --labels-are-known. With --test-fraction F a seeded
random share of the rows becomes the test split, whose labels are recorded so that every round
reports test accuracy.

Tables are made ready for a network: a csv text column is one-hot encoded (--categorical auto;
its categories recorded, `error` refuses text), and the features of a csv/npz table are
standardised (z = (x - mean) / sd per feature, statistics over the pool rows, recorded in the
project's settings and applied at every fit and score; --no-standardize keeps them raw). A
project created without --classes reads its classes from the labels here (naturally sorted).
"""

from __future__ import annotations

import csv
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import numpy as np
import typer
from rich.markup import escape

from activebayes_cli._app import CliError
from activebayes_cli._context import state
from activebayes_cli._parse import existing_file, fraction

app = typer.Typer(no_args_is_help=True)


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
    with path.open(newline="", encoding="utf-8") as fh:
        return [h.strip() for h in next(csv.reader(fh), [])]


def label_text(value: Any) -> str:
    """A label as the store keeps it: 3, 3.0, "3" -> "3"."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


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


def truth_labels(path: Path, keys: list[str], classes: Any) -> list[str]:
    """The labels of a separate truth file (.npy/.npz/IDX [N] in row order, or a csv with
    key,label columns), aligned with the data file's `keys`."""
    from activebayes.data import check_labels, load_labels

    truth = load_labels(path)
    values = [label_text(v) for v in truth.y.tolist()]
    if truth.keys is not None:
        by_key = dict(zip(truth.keys, values))
        missing = [k for k in keys if k not in by_key]
        if missing:
            raise CliError(f"--truth: {path} has no label for {len(missing)} item(s), e.g. {missing[0]!r}", "give a label for every key")
        values = [by_key[k] for k in keys]
    elif len(values) != len(keys):
        raise CliError(f"--truth: {path} has {len(values)} labels for {len(keys)} data rows", "pass the labels file that belongs to FILE")
    if classes is not None:
        check_labels(np.asarray(values), classes, path)
    return values


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
    from activebayes.data import detect_format, load_dataset

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
        labels = truth_labels(truth, keys, classes)
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


@app.command("add")
def add(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="Data file: .npy, .npz (x, y, keys), .csv, or MNIST IDX.")],
    key_column: Annotated[Optional[str], typer.Option("--key-column", help="csv column of item keys (default: 'key' if present, else the row number).")] = None,
    label_column: Annotated[Optional[str], typer.Option("--label-column", help="csv column of labels (default: 'label' if present).")] = None,
    test_fraction: Annotated[float, typer.Option("--test-fraction", help="Share of rows held out as a labelled test split (for metrics).")] = 0.0,
    labels_are_known: Annotated[bool, typer.Option("--labels-are-known", help="Import the labels as observations instead of holding them back as the truth.")] = False,
    truth: Annotated[Optional[Path], typer.Option("--truth", help="Labels in a separate file (e.g. MNIST *-labels-idx1-ubyte, .npy, or a key,label csv).")] = None,
    image_layout: Annotated[ImageLayout, typer.Option("--image-layout", help="IDX images as flat rows or [1, H, W] (for --model cnn).")] = ImageLayout.flat,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the test split.")] = 0,
    standardize: Annotated[bool, typer.Option("--standardize/--no-standardize", help="Standardise a table's features (mean 0, sd 1 over the pool; recorded, applied at every fit and score).")] = True,
    categorical: Annotated[Categorical, typer.Option("--categorical", help="csv text columns: auto (one-hot encoded, categories recorded) or error.")] = Categorical.auto,
    image_size: Annotated[Optional[str], typer.Option("--image-size", help="FOLDER of images: resize every image to HxW (e.g. 32x32); default: their common size.")] = None,
    labels_from_folders: Annotated[bool, typer.Option("--labels-from-folders", help="FOLDER of images: each image's label is its sub-folder's name.")] = False,
) -> None:
    """Register a data file (path + sha256), or a FOLDER of PNG/JPEG images, and create one item per row/image."""
    st = state(ctx)
    if file.is_dir() or image_size is not None or labels_from_folders:  # images: see cli/pool_folder.py
        from activebayes_cli.pool_folder import add_folder

        return add_folder(
            st, file, image_size=image_size, labels_from_folders=labels_from_folders, truth=truth, key_column=key_column,
            label_column=label_column, test_fraction=test_fraction, labels_are_known=labels_are_known, seed=seed,
        )  # fmt: skip
    existing_file(file, "FILE")
    if truth is not None:
        existing_file(truth, "--truth")
    fraction(test_fraction, "--test-fraction")
    store = st.store(upgrade=True)  # writes: an older schema is upgraded first
    name = st.project_name()
    summary = register_pool(
        store, name, file, key_column=key_column, label_column=label_column, test_fraction=test_fraction,
        labels_are_known=labels_are_known, truth=truth, image_layout=image_layout.value, seed=seed,
        standardize=standardize, categorical=categorical.value,
    )  # fmt: skip
    for note in summary["notes"]:
        st.out.note(note)
    truth_text = {"none": "no labels", "known": "labels imported", "held-back": "labels held back as the truth"}
    next_hint = st.next_command("round", *(("--oracle", "truth") if summary["truth"] == "held-back" else ()))

    def render(console) -> None:
        console.print(
            f"Added {summary['pool_items']} pool items"
            + (f" and {summary['test_items']} test items" if summary["test_items"] else "")
            + f" from {file} ({summary['format']}, features {summary['features']}"
            + ("; standardised" if summary["standardized"] else "")
            + (f"; one-hot: {', '.join(summary['categorical'])}" if summary["categorical"] else "")
            + f"; {truth_text[summary['truth']]})."
        )
        console.print(f"Next: {escape(next_hint)}")

    st.out.result(summary, render)
