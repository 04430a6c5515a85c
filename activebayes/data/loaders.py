"""Loading a pool's features (and optional labels and keys) from a file.

Formats (detected from the name, or given): `npy` (memory-mapped, x only), `npz` (arrays `x` and
optional `y`, `keys`), `csv` (a header row; numeric feature columns; optional label and key
columns by name), `idx` (MNIST IDX, raw or .gz; images become float32 in [0, 1], flattened to
[N, H*W] or kept as [N, 1, H, W]). Every problem raises DataError naming the file and, for text
files, the line.
"""

from __future__ import annotations

import csv
import dataclasses
import gzip
import hashlib
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from activebayes.errors import DataError

FORMATS = ("npy", "npz", "csv", "idx")
_IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
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
    raw: the features before the recorded standardisation (None when x is not standardised);
        what a person should be shown.
    lines: a text file's line number of each row (for messages), or None.
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


def detect_format(path: str | Path) -> str:
    """The format of a data file from its name: npy, npz, csv or idx (MNIST `*-ubyte[.gz]`)."""
    name = Path(path).name.lower()
    if name.endswith(".image-folder.npz"):  # a folder of images converted by `pool add FOLDER` (data/images.py)
        return "image-folder"
    if name.endswith(".gz"):
        name = name[:-3]
    for ext in ("npy", "npz", "csv"):
        if name.endswith("." + ext):
            return ext
    if name.endswith(".idx") or "-idx" in name or name.endswith("ubyte"):
        return "idx"
    raise DataError(f"data file {str(path)!r}: unknown format; expected .npy, .npz, .csv or MNIST IDX (*-ubyte[.gz])")


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


def check_labels(y: np.ndarray, classes: Sequence[Any], path: Path, lines: Sequence[int] | None = None) -> None:
    """DataError naming the first label (and its row, or its line in a text file) that is not
    among `classes`."""
    allowed = {str(c) for c in classes}
    for i, value in enumerate(y.tolist()):
        text = str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
        if text not in allowed:
            where = f"data file {str(path)!r}: row {i}"
            at = f" (line {lines[i]})" if lines is not None else ""
            listed = sorted(allowed)[:20]
            if isinstance(value, str) and not value.strip():
                raise DataError(f"{where} has an empty label{at}, not one of the classes {listed}; fill it in or drop the row")
            label = shown(value) if isinstance(value, str) else repr(value)
            raise DataError(f"{where} has label {label}{at}, not one of the classes {listed}; correct the label")


def _open_maybe_gz(path: Path) -> io.BufferedIOBase:
    return gzip.open(path, "rb") if path.name.lower().endswith(".gz") else path.open("rb")


def read_idx(path: str | Path) -> np.ndarray:
    """An MNIST IDX array (raw or gzip): magic 0x0000 | dtype byte | ndim byte, then big-endian
    uint32 sizes and the data. Returns the array in native byte order."""
    path = Path(path)
    try:
        with _open_maybe_gz(path) as fh:
            raw = fh.read()
    except (OSError, EOFError) as exc:
        raise DataError(f"data file {str(path)!r}: cannot read IDX data: {exc}") from exc
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_DTYPES:
        raise DataError(f"data file {str(path)!r}: not an IDX file (bad magic number {raw[:4].hex()})")
    ndim = raw[3]
    header = 4 + 4 * ndim
    shape = tuple(int(d) for d in np.frombuffer(raw[4:header], dtype=">u4"))
    dtype = np.dtype(_IDX_DTYPES[raw[2]])
    expected = int(np.prod(shape)) * dtype.itemsize
    if len(raw) - header != expected:
        raise DataError(f"data file {str(path)!r}: IDX header says shape {shape} ({expected} bytes), found {len(raw) - header}")
    return np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape).astype(dtype.newbyteorder("="))


def _load_idx(path: Path, image_layout: str) -> Dataset:
    arr = read_idx(path)
    if arr.ndim == 1:
        return Dataset(arr.astype(np.float32)[:, None], None, None, path, "idx")
    x = arr.astype(np.float32)
    if arr.dtype == np.uint8:
        x /= 255.0
    if arr.ndim == 3:
        x = x[:, None] if image_layout == "chw" else x.reshape(x.shape[0], -1)
    return Dataset(x, None, None, path, "idx")


def _load_npz(path: Path) -> Dataset:
    try:
        with np.load(path, allow_pickle=False) as archive:
            if "x" not in archive.files:
                raise DataError(f"data file {str(path)!r}: expected an array named 'x', found {archive.files}")
            x = archive["x"]
            y = archive["y"] if "y" in archive.files else None
            keys = [str(k) for k in archive["keys"].tolist()] if "keys" in archive.files else None
    except (OSError, ValueError) as exc:
        raise DataError(f"data file {str(path)!r}: cannot read .npz: {exc}") from exc
    if y is not None and y.shape[0] != x.shape[0]:
        raise DataError(f"data file {str(path)!r}: 'y' has {y.shape[0]} entries, 'x' has {x.shape[0]} rows")
    if keys is not None and len(keys) != x.shape[0]:
        raise DataError(f"data file {str(path)!r}: 'keys' has {len(keys)} entries, 'x' has {x.shape[0]} rows")
    return Dataset(x, y, keys, path, "npz")


CSV_DELIMITERS = (",", ";", "\t")
_SHOWN_MAX = 60  # characters of a cell quoted in a message
_DECIMAL_COMMA = re.compile(r"^[+-]?\d+,\d+$")
_DATA_LIKE = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+(\.\d*)?[eE][+-]?\d+)$")


def shown(value: Any) -> str:
    """`value` quoted for a one-line message, cut to a few dozen characters."""
    text = str(value)
    if len(text) > _SHOWN_MAX:
        return repr(text[: _SHOWN_MAX - 20]) + f"... ({len(text)} characters)"
    return repr(text)


def _delimiter_name(d: str) -> str:
    return "tab" if d == "\t" else repr(d)


def csv_text(path: Path, what: str = "data file") -> str:
    """The text of a csv file: UTF-8 (a byte-order mark dropped) or UTF-16 with its BOM (Excel's
    "Unicode Text"); DataError naming the file when it is neither."""
    raw = path.read_bytes()
    encoding = "utf-16" if raw.startswith((b"\xff\xfe", b"\xfe\xff")) else "utf-8-sig"
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as exc:
        raise DataError(
            f"{what} {str(path)!r} is not UTF-8 text (byte {raw[exc.start]:#04x} at offset {exc.start}); "
            "save it as 'CSV UTF-8' and run the command again"
        ) from None
    nul = text.find("\x00")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        raise DataError(f"{str(path)!r} line {line}: holds a NUL byte, so it is not CSV text; save the file as 'CSV UTF-8'")
    return text


def csv_delimiter(text: str, path: Path) -> str:
    """The field separator of a csv text, read from its first non-blank line: the one of `,`,
    `;` and tab that splits it (`,` when none does). A first line that splits at more than one
    is ambiguous: DataError naming the file and line."""
    lines = text.splitlines()
    number, first = next(((i + 1, line) for i, line in enumerate(lines) if line.strip()), (1, ""))
    splitting = []
    for d in CSV_DELIMITERS:
        if d not in first:
            continue
        try:
            fields = next(csv.reader([first], delimiter=d), [])
        except csv.Error:
            continue
        if len(fields) > 1:
            splitting.append(d)
    if len(splitting) > 1:
        names = " and ".join(_delimiter_name(d) for d in splitting)
        raise DataError(
            f"{str(path)!r} line {number}: the header splits at both {names}, so the field separator is ambiguous; "
            "save the file with one separator (quote names that hold another)"
        )
    return splitting[0] if splitting else ","


def csv_rows(text: str, path: Path, delimiter: str) -> Iterator[tuple[int, list[str]]]:
    """(line number where the record starts, fields) of every record; a record that is not valid
    CSV (a NUL byte, a field over the csv module's size limit, ...) is a DataError naming the line."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    while True:
        line = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            reason = str(exc)
            if "field larger than field limit" in reason:
                reason = f"a field is longer than {csv.field_size_limit()} characters"
            elif "NUL" in reason:
                reason = "it holds a NUL byte"
            raise DataError(f"{str(path)!r} line {line}: not a valid CSV record ({reason}); fix that line") from None
        yield line, row


def csv_header(path: Path, what: str = "data file") -> list[str]:
    """The column names on the first line of a csv file (decoded and split as `_load_csv` does)."""
    text = csv_text(path, what)
    for _, row in csv_rows(text, path, csv_delimiter(text, path)):
        if row and any(f.strip() for f in row):
            return [h.strip() for h in row]
    return []


def _load_csv(
    path: Path,
    label_column: str | None,
    key_column: str | None,
    categorical: str = "error",
    categories: dict[str, list[str]] | None = None,
) -> Dataset:
    """A csv table. Numeric columns become features as they are; a text column is one-hot encoded
    (`categorical="auto"`, its categories in natural order, or as recorded in `categories`) or
    refused (`"error"`). A column mixing numbers and text is refused either way. The separator is
    `,`, `;` or tab (`csv_delimiter`); the text UTF-8 or UTF-16 (`csv_text`)."""
    from activebayes.data.features import natural_sorted, one_hot

    text = csv_text(path)
    delimiter = csv_delimiter(text, path)
    records = csv_rows(text, path, delimiter)
    header = None
    header_line = 1
    for header_line, row in records:
        if row and any(f.strip() for f in row):
            header = row
            break
    if not header:
        raise DataError(f"data file {str(path)!r}: empty; expected a header row of column names")
    header = [h.strip() for h in header]
    where_header = f"{str(path)!r} line {header_line}"
    seen: set[str] = set()
    for name in header:
        if name in seen and name:
            raise DataError(f"{where_header}: the column {shown(name)} is named more than once; give every column its own name")
        seen.add(name)
    for name, what in ((label_column, "label_column"), (key_column, "key_column")):
        if name is not None and name not in header:
            raise DataError(f"data file {str(path)!r}: {what} {name!r} is not a column; columns are {[shown(h) for h in header[:20]]}")
    looks_like_data = [h for h in header if _DATA_LIKE.match(h) or h.lower() in ("nan", "inf", "-inf")]
    if looks_like_data:
        raise DataError(
            f"{where_header}: the header holds {shown(looks_like_data[0])}, a value rather than a column name "
            "(is the header missing?); add a first line naming the columns, e.g. key,f0,f1,label"
        )
    special = {label_column, key_column} - {None}
    feature_idx = [i for i, h in enumerate(header) if h not in special]
    if not feature_idx:
        raise DataError(f"data file {str(path)!r}: no feature columns besides the label/key columns")
    li = header.index(label_column) if label_column else None
    ki = header.index(key_column) if key_column else None
    cells: list[list[str]] = []
    lines: list[int] = []
    labels: list[str] = []
    keys: list[str] = []
    key_lines: dict[str, int] = {}
    for line_no, row in records:
        if not row or all(not f.strip() for f in row):
            continue
        if len(row) != len(header):
            raise DataError(
                f"{str(path)!r} line {line_no}: expected {len(header)} fields, got {len(row)} "
                f"(separator {_delimiter_name(delimiter)}); quote a value that holds the separator"
            )
        cells.append([row[i].strip() for i in feature_idx])
        lines.append(line_no)
        if li is not None:
            labels.append(row[li].strip())
        if ki is not None:
            key = row[ki].strip()
            if not key:
                raise DataError(f"{str(path)!r} line {line_no}: empty key in the key column {key_column!r}; give every row a key")
            if key in key_lines:
                raise DataError(
                    f"{str(path)!r} line {line_no}: the key {shown(key)} of column {key_column!r} is also on line "
                    f"{key_lines[key]}; keys must be unique"
                )
            key_lines[key] = line_no
            keys.append(key)
    if not cells:
        raise DataError(f"data file {str(path)!r}: has a header but no rows; add one row per item")
    recorded = categories is not None
    categories = dict(categories or {})
    blocks: list[np.ndarray] = []
    names: list[str] = []
    one_hot_cols: list[int] = []
    found: dict[str, list[str]] = {}
    for j, col in enumerate(feature_idx):
        name = header[col]
        values = [r[j] for r in cells]
        if name in categories:
            encoded = one_hot(values, categories[name], column=name, path=path)
            found[name] = list(categories[name])
        else:
            numeric = [_is_float(v) for v in values]
            if all(numeric):
                column = np.asarray([float(v) for v in values], dtype=np.float64)
                bad = ~np.isfinite(column)
                if bad.any():
                    at = int(np.argmax(bad))
                    raise DataError(
                        f"{str(path)!r} line {lines[at]}: a feature is NaN or infinite (column {name!r}: {shown(values[at])}); "
                        "give a finite number"
                    )
                blocks.append(column.astype(np.float32)[:, None])
                names.append(name)
                continue
            first_text = numeric.index(False)
            comma = next((i for i, v in enumerate(values) if _DECIMAL_COMMA.match(v)), None)
            if comma is not None and delimiter != ",":
                raise DataError(
                    f"{str(path)!r} line {lines[comma]}: column {name!r} holds {shown(values[comma])}, a number with a "
                    "decimal comma; save the file with decimal points (or the column as text in quotes)"
                )
            if categorical != "auto" or recorded or any(numeric):
                where = f"line {lines[first_text]}: column {name!r}"
                if categorical != "auto" or recorded:
                    raise DataError(f"{str(path)!r} {where} is not a number ({shown(values[first_text])})")
                first_num = numeric.index(True)
                raise DataError(
                    f"{str(path)!r} {where} is not a number ({shown(values[first_text])}) but line {lines[first_num]} holds the "
                    f"number {shown(values[first_num])} (a column is either numeric or categorical); correct that value"
                )
            found[name] = natural_sorted(values)
            encoded = one_hot(values, found[name], column=name, path=path)
        one_hot_cols.extend(range(len(names), len(names) + encoded.shape[1]))
        names.extend(f"{name}={c}" for c in found[name])
        blocks.append(encoded)
    x = np.concatenate(blocks, axis=1)
    y = np.asarray(labels) if li is not None else None
    return Dataset(
        x, y, keys if ki is not None else None, path, "csv", feature_names=names,
        categories=found or None, one_hot_columns=tuple(one_hot_cols), lines=tuple(lines),
    )  # fmt: skip


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def load_dataset(
    path: str | Path,
    *,
    format: str | None = None,
    label_column: str | None = None,
    key_column: str | None = None,
    classes: Sequence[Any] | None = None,
    image_layout: str = "flat",
    categorical: str = "error",
    features: dict[str, Any] | None = None,
) -> Dataset:
    """Load a data file; see the module docstring for formats.

    Args:
        path: the file.
        format: one of FORMATS, or None to detect it from the name.
        label_column, key_column: csv column names (ignored for other formats).
        classes: when given, every label must be one of them (compared as text).
        image_layout: "flat" ([N, H*W]) or "chw" ([N, 1, H, W]) for IDX images.
        categorical: a csv text column is one-hot encoded ("auto") or refused ("error").
        features: a spec recorded by `activebayes.data.features.fit_features` (a project's
            settings["features"]): its text columns are encoded with the recorded categories
            (an unseen category is a DataError) and its standardisation is applied (`raw` keeps
            the features before it).
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"data file {str(path)!r} does not exist")
    fmt = format or detect_format(path)
    if fmt == "image-folder":  # images [N, C, H, W] in [0, 1], never standardised; checks the source folder
        from activebayes.data.images import load_image_pool

        return load_image_pool(path, classes=classes)
    if fmt not in FORMATS:
        raise DataError(f"format: expected one of {', '.join(FORMATS)}, got {fmt!r}")
    if image_layout not in ("flat", "chw"):
        raise DataError(f"image_layout: expected 'flat' or 'chw', got {image_layout!r}")
    if categorical not in ("auto", "error"):
        raise DataError(f"categorical: expected 'auto' or 'error', got {categorical!r}")
    if fmt == "npy":
        try:
            x = np.load(path, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise DataError(f"data file {str(path)!r}: cannot read .npy: {exc}") from exc
        data = Dataset(x, None, None, path, "npy")
    elif fmt == "npz":
        data = _load_npz(path)
    elif fmt == "csv":
        recorded = features.get("categorical") if features else None
        data = _load_csv(path, label_column, key_column, categorical, recorded if features else None)
    else:
        data = _load_idx(path, image_layout)
    if data.x.ndim < 2 or data.x.shape[0] == 0:
        raise DataError(f"data file {str(path)!r}: expected features [N, D] with N > 0, got shape {data.x.shape}")
    if not (np.issubdtype(data.x.dtype, np.floating) or np.issubdtype(data.x.dtype, np.integer)):
        raise DataError(f"data file {str(path)!r}: expected numeric features, got dtype {data.x.dtype}")
    check_finite(data.x, path)
    if classes is not None and data.y is not None:
        check_labels(data.y, classes, path, data.lines)
    if features and features.get("standardize") and features.get("mean") is not None:
        from activebayes.data.features import apply_features

        data = dataclasses.replace(data, x=apply_features(data.x, features), raw=data.x)
    return data


def load_labels(path: str | Path, *, format: str | None = None, label_column: str = "label", key_column: str | None = None) -> Dataset:
    """A truth/labels file as a Dataset whose `y` holds the labels: .npy [N], IDX labels [N], .npz
    with `y`, or a csv with a `label_column` (and optional `key_column`). `x` is the row index."""
    path = Path(path)
    fmt = format or detect_format(path)
    if fmt == "csv":
        text = csv_text(path, "labels file")
        records = [(n, row) for n, row in csv_rows(text, path, csv_delimiter(text, path)) if row and any(f.strip() for f in row)]
        header = [h.strip() for h in (records[0][1] if records else [])]
        if label_column not in header:
            raise DataError(f"labels file {str(path)!r}: no column {label_column!r}; columns are {[shown(h) for h in header[:20]]}")
        key_column = key_column if key_column is not None else ("key" if "key" in header else None)
        li, ki = header.index(label_column), (header.index(key_column) if key_column else None)
        for n, row in records[1:]:
            if len(row) != len(header):
                raise DataError(f"{str(path)!r} line {n}: expected {len(header)} fields, got {len(row)}")
        rows = [row for _, row in records[1:]]
        y = np.asarray([r[li].strip() for r in rows])
        keys = [r[ki].strip() for r in rows] if ki is not None else None
        return Dataset(np.arange(len(y))[:, None], y, keys, path, "csv", lines=tuple(n for n, _ in records[1:]))
    if fmt == "npz":
        data = _load_npz(path)
        if data.y is None:
            raise DataError(f"labels file {str(path)!r}: expected an array named 'y'")
        return data
    try:
        arr = read_idx(path) if fmt == "idx" else np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise DataError(f"labels file {str(path)!r}: cannot read it ({' '.join(str(exc).split())[:200]})") from exc
    if not isinstance(arr, np.ndarray) or arr.ndim != 1:
        shape = getattr(arr, "shape", None)
        raise DataError(f"labels file {str(path)!r}: expected labels [N], got {'shape ' + str(shape) if shape is not None else 'an archive'}")
    return Dataset(np.arange(arr.shape[0])[:, None], arr, None, path, fmt)
