"""`Dataset`, what every loader returns (a pool's features, labels, keys and what to show of each
item), and the checks made on a data file and what it holds: its sha256 (a project records it),
finite features, labels among the classes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from activebayes.data.csv_table import shown
from activebayes.data.features import natural_sorted
from activebayes.errors import DataError

_FINITE_CHUNK = 65_536


@dataclass(frozen=True)
class Dataset:
    """A loaded pool.

    x: [N, D] features, or [N, 1, H, W] images (a read-only memory map for .npy files).
    y: [N] labels as given in the file (numbers or text), or None.
    keys: N stable item keys from the file's key column / `keys` array, or None (use row index).
    feature_names: the D feature column names of a csv file (its header, less the label and key
        columns; a one-hot encoded text column c gives "c=<category>" per category), or None.
    categories: a csv file's text columns and their categories in order (one-hot encoded), or None.
    one_hot_columns: the positions in x of the one-hot indicator features.
    raw: what a person should be shown of each item: a csv table's feature columns as text
        [N, M] (a missing value empty; names in `raw_columns`), or the features before the
        recorded standardisation; None when x itself is that.
    lines: a text file's line number of each row (for messages), or None.
    raw_columns: the M column names of a csv table's `raw`, or None.
    """

    x: np.ndarray
    y: np.ndarray | None
    keys: list[str] | None
    path: Path
    format: str
    feature_names: list[str] | None = None
    categories: dict[str, list[str]] | None = None
    one_hot_columns: tuple[int, ...] = ()
    raw: np.ndarray | None = None
    lines: tuple[int, ...] | None = None
    raw_columns: list[str] | None = None

    def __len__(self) -> int:
        return int(self.x.shape[0])


def sha256_file(path: str | Path, *, chunk_size: int = 1 << 20) -> str:
    """Hex sha256 of a file, read in chunks (never the whole file in memory)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"data file {str(path)!r} does not exist")
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(chunk_size):
            digest.update(block)
    return digest.hexdigest()


def check_finite(x: np.ndarray, path: Path) -> None:
    """DataError naming the first row with a NaN or infinite feature (chunked over rows)."""
    if not np.issubdtype(x.dtype, np.floating):
        return
    for start in range(0, x.shape[0], _FINITE_CHUNK):
        block = np.asarray(x[start : start + _FINITE_CHUNK]).reshape(min(_FINITE_CHUNK, x.shape[0] - start), -1)
        bad = ~np.isfinite(block).all(axis=1)
        if bad.any():
            raise DataError(f"data file {str(path)!r}: row {start + int(np.argmax(bad))} has a NaN or infinite feature")


def label_text(value: Any) -> str:
    """A label as the store keeps it before its task's check: 3, 3.0, np.int64(3), " 3" -> "3"."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def check_labels(y: np.ndarray, classes: Sequence[Any] | None, path: Path, lines: Sequence[int] | None = None, *,
                 numeric: bool = False, empty_ok: bool = False) -> None:  # fmt: skip
    """DataError naming the first label (and its row, or its line in a text file) that is empty or
    not among `classes`; with classes=None (classes still to be read from these labels, or a
    regression's targets) only an empty one, and with `numeric` one that is not a finite number.
    `empty_ok`: an empty label is no label (a row still to be labelled), not a mistake."""
    allowed = None if classes is None else {str(c) for c in classes}
    for i, value in enumerate(y.tolist()):
        text = str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
        if (text.strip() if allowed is None else text in allowed) and (not numeric or _finite_number(text)):
            continue
        if empty_ok and isinstance(value, str) and not value.strip():
            continue
        where = f"data file {str(path)!r}: row {i}"
        at = f" (line {lines[i]})" if lines is not None else ""
        listed = None if allowed is None else sorted(allowed)[:20]
        outside = "" if listed is None else f", not one of the classes {listed}"
        if isinstance(value, str) and not value.strip():
            raise DataError(f"{where} has an empty label{at}{outside}; fill it in or drop the row")
        label = shown(value) if isinstance(value, str) else repr(value)
        if listed is None:
            from activebayes.data.parsed_columns import surely_decimal_comma  # it reads labels with `label_text`

            comma = isinstance(value, str) and surely_decimal_comma(value)
            why = ("; a decimal comma is read only in a file whose cells are separated by ';' or tabs (save it so, "
                   "as spreadsheets in comma-decimal locales do), or write the number with a point") if comma else (
                   ": name a column of numbers with --label-column, or, for classes, create a classification project "
                   "(`activebayes init --name NAME` without --task regression)")
            raise DataError(f"{where} has label {label}{at}, not a finite number; a regression label is a number{why}")
        texts = {label_text(v) for v in y.tolist()} - {""}
        if not texts & allowed:  # no label is a class: the project's classes, not the labels, are wrong
            exact = len(texts) <= 20 and not any("," in t or t != t.strip() for t in texts)
            named = f"init --name NAME --classes {','.join(natural_sorted(texts))}" if exact else "init --name NAME --classes naming them"
            raise DataError(f"{where} has label {label}{at}{outside}, and no label of the file is one; add the file to a project "
                            f"with those classes ({named}), or to one made without --classes, which reads them from the labels")  # fmt: skip
        raise DataError(f"{where} has label {label}{at}{outside}; correct the label")


def _finite_number(text: str) -> bool:
    try:
        return bool(np.isfinite(float(text.strip())))
    except ValueError:
        return False
