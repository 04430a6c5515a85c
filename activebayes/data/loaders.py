"""Loading a pool's features (and optional labels and keys) from a file.

Formats (detected from the name, or given): `npy` (memory-mapped, x only), `npz` (arrays `x` and
optional `y`, `keys`), `csv` (a header row; numeric feature columns; optional label and key
columns by name), `idx` (MNIST IDX, raw or .gz; images become float32 in [0, 1], flattened to
[N, H*W] or kept as [N, 1, H, W]). Every problem raises DataError naming the file and, for text
files, the line.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from activebayes.data.csv_table import (  # noqa: F401 (re-exported: csv helpers lived here)
    CSV_DELIMITERS,
    ROW_NAMES,
    csv_delimiter,
    csv_header,
    csv_rows,
    csv_text,
    delimiter_name,
    not_a_column,
    read_csv_table,
    shown,
)
from activebayes.data.dataset import (  # noqa: F401 (re-exported: they lived here)
    Dataset,
    check_finite,
    check_labels,
    label_text,
    sha256_file,
)
from activebayes.data.images import load_image_pool
from activebayes.errors import DataError

FORMATS = ("npy", "npz", "csv", "idx")
_IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


# Tables saved by other tools: what they are, and how their own tool writes them as CSV.
_PANDAS = "in Python: pandas.{how}('{{path}}').to_csv('{{stem}}.csv', index=False)"
OTHER_TABLES = {
    (".parquet", ".pq"): ("Parquet", _PANDAS.format(how="read_parquet")),
    (".feather", ".arrow"): ("Feather/Arrow", _PANDAS.format(how="read_feather")),
    (".jsonl", ".ndjson"): ("JSON lines", "in Python: pandas.read_json('{path}', lines=True).to_csv('{stem}.csv', index=False)"),
    (".json",): ("JSON", "in Python: pandas.read_json('{path}').to_csv('{stem}.csv', index=False)"),
    (".rds",): ("R data", "in R: write.csv(readRDS('{path}'), '{stem}.csv', row.names = FALSE)"),
    (".rdata", ".rda"): ("R data", "in R: load('{path}'), then write.csv(THE_TABLE, '{stem}.csv', row.names = FALSE)"),
    (".dta",): ("Stata data", _PANDAS.format(how="read_stata")),
    (".sav",): ("SPSS data", _PANDAS.format(how="read_spss")),
    (".sql", ".dump"): ("a database dump", "load it, then in psql: \\copy TABLE to '{stem}.csv' csv header; in sqlite3: .mode csv, .headers on, .once {stem}.csv"),
}


def detect_format(path: str | Path) -> str:
    """The format of a data file from its name: npy, npz, csv (also .tsv and .txt: the separator
    is read from the header) or idx (MNIST `*-ubyte[.gz]`); a spreadsheet workbook is refused with
    the way to save it as csv."""
    name = Path(path).name.lower()
    if name.endswith(".image-folder.npz"):  # a folder of images converted by `pool add FOLDER` (data/images.py)
        return "image-folder"
    if name.endswith(".gz"):
        name = name[:-3]
        if name.endswith((".csv", ".tsv", ".txt")):  # a table is read (and its rows re-read) by byte offset
            raise DataError(f"data file {str(path)!r} is compressed; decompress it (gunzip) and add the {name.rsplit('.', 1)[1]} file")
    for ext in ("npy", "npz", "csv"):
        if name.endswith("." + ext):
            return ext
    if name.endswith((".tsv", ".txt")):
        return "csv"
    if name.endswith(".idx") or "-idx" in name or name.endswith("ubyte"):
        return "idx"
    if name.endswith((".xlsx", ".xlsm", ".xls", ".ods", ".numbers")):
        raise DataError(f"data file {str(path)!r} is a spreadsheet workbook; save its sheet as 'CSV UTF-8' and add that file")
    for exts, (kind, reader) in OTHER_TABLES.items():
        if name.endswith(exts):
            stem = Path(path).name.rsplit(".", 1)[0]
            raise DataError(f"data file {str(path)!r} is {kind}, which pool add does not read; write it as CSV ({reader.format(path=Path(path).name, stem=stem)}) "
                            "and add that file")  # fmt: skip
    from activebayes.data.images import EXTENSIONS

    if name.endswith(EXTENSIONS):  # one picture of a folder of them
        raise DataError(f"data file {str(path)!r} is one image; give the folder that holds the pool's images "
                        "(with --labels-from-folders where its sub-folders name the classes)")  # fmt: skip
    raise DataError(f"data file {str(path)!r}: unknown format; expected .npy, .npz, .csv (.tsv, .txt) or MNIST IDX (*-ubyte[.gz])")


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


def _csv_keys(table: Any, key_column: str) -> list[str]:
    """The key of every record: present and unique (DataError naming the line otherwise)."""
    keys = table.column(key_column)
    seen: dict[str, int] = {}
    numbered = f" (or --ignore {ROW_NAMES}, and the rows are keyed by their number)" if key_column == ROW_NAMES else ""
    another = numbered or " (or leave --key-column out, and the rows are keyed by their number)"
    for key, line in zip(keys, table.lines):
        if not key:
            raise DataError(f"{str(table.path)!r} line {line}: empty key in the key column {key_column!r}; give every row a key{numbered}")
        if key in seen:
            raise DataError(f"{str(table.path)!r} line {line}: the key {shown(key)} of column {key_column!r} is also on line {seen[key]}; "
                            f"keys must be unique: pass a --key-column of unique values{another}")  # fmt: skip
        seen[key] = line
    return keys


def _load_csv(
    path: Path,
    label_column: str | None,
    key_column: str | None,
    categorical: str = "error",
    features: dict[str, Any] | None = None,
) -> Dataset:
    """A csv table (`activebayes.data.tabular`). With `features` (a recorded spec) the spec is
    applied; without, the table is planned with `categorical` and no gaps allowed, and encoded
    unscaled over all its rows."""
    from activebayes.data.table_spec import fit_table_spec
    from activebayes.data.tabular import TableOptions, plan_table

    table = read_csv_table(path)
    for name, what in ((label_column, "label_column"), (key_column, "key_column")):
        if name is not None and name not in table.header:
            raise not_a_column(f"data file {str(path)!r}", what, name, table.header)
    if features is None:
        options = TableOptions(label_column=label_column, key_column=key_column, categorical=categorical, find_key=False)
        features = fit_table_spec(plan_table(table, options), np.arange(len(table)), standardize=False)
    return dataset_from_table(table, features, label_column, key_column)


def dataset_from_table(table: Any, features: dict[str, Any], label_column: str | None, key_column: str | None) -> Dataset:
    """A read csv table (`activebayes.data.csv_table.CsvTable`) as a Dataset with the recorded
    spec applied; `raw` holds the feature columns' cells as text ([N, M], `raw_columns`)."""
    from activebayes.data.table_spec import apply_table_spec, raw_cells, spec_columns

    columns = spec_columns(features, table.header, label_column, key_column)
    x, names = apply_table_spec(table, features, columns)
    y = np.asarray(table.column(label_column)) if label_column is not None else None
    if y is not None and features.get("label_na"):  # a formula's error value (#N/A) in the label column: no label
        from activebayes.data.table_gaps import formula_errors

        y = np.where(formula_errors(y, features["label_na"]), "", y.astype(str))
    if y is not None and features.get("label_spellings"):  # 'yes ' read as 'Yes' (`pool add --merge-label-spellings`)
        from activebayes.data.label_spellings import spelled_as

        y = spelled_as(y, features["label_spellings"])
    if y is not None and features.get("label_written"):  # regression targets written as "$1,200" or "3,5"
        from activebayes.data.parsed_columns import written_numbers

        y = np.asarray(written_numbers(y.tolist(), features["label_written"]))
    keys = _csv_keys(table, key_column) if key_column is not None else None
    found = {c["name"]: list(c["categories"]) for c in columns if c["kind"] == "categorical"}
    one_hot_cols = tuple(j for j, n in enumerate(names) if "=" in n and n.split("=", 1)[0] in found)
    return Dataset(
        x, y, keys, table.path, "csv", feature_names=names, categories=found or None, one_hot_columns=one_hot_cols,
        raw=raw_cells(table, columns, features.get("na_values", ())), lines=tuple(table.lines),
        raw_columns=[c["name"] for c in columns],
    )  # fmt: skip


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
        categorical: a csv text column is one-hot encoded ("auto"; "force" lifts the refusal of
            identifier-like and many-level columns) or refused ("error").
        features: a project's recorded settings["features"]: for a csv, the table spec of
            `activebayes.data.table_spec.fit_table_spec` (columns, gaps, categories, scaling), applied
            as recorded; for an npz table, `activebayes.data.features.fit_features`'
            standardisation (`raw` keeps the features before it).
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"data file {str(path)!r} does not exist")
    fmt = format or detect_format(path)
    if fmt == "image-folder":  # images [N, C, H, W] in [0, 1], never standardised; checks the source folder
        return load_image_pool(path, classes=classes)
    if fmt not in FORMATS:
        raise DataError(f"format: expected one of {', '.join(FORMATS)}, got {fmt!r}")
    if image_layout not in ("flat", "chw"):
        raise DataError(f"image_layout: expected 'flat' or 'chw', got {image_layout!r}")
    if categorical not in ("auto", "error", "force"):
        raise DataError(f"categorical: expected 'auto', 'error' or 'force', got {categorical!r}")
    if fmt == "npy":
        try:
            x = np.load(path, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise DataError(f"data file {str(path)!r}: cannot read .npy: {exc}") from exc
        data = Dataset(x, None, None, path, "npy")
    elif fmt == "npz":
        data = _load_npz(path)
    elif fmt == "csv":
        data = _load_csv(path, label_column, key_column, categorical, features)
    else:
        data = _load_idx(path, image_layout)
    if data.x.ndim < 2 or data.x.shape[0] == 0:
        raise DataError(f"data file {str(path)!r}: expected features [N, D] with N > 0, got shape {data.x.shape}")
    if not (np.issubdtype(data.x.dtype, np.floating) or np.issubdtype(data.x.dtype, np.integer)):
        raise DataError(f"data file {str(path)!r}: expected numeric features, got dtype {data.x.dtype}")
    check_finite(data.x, path)
    if classes is not None and data.y is not None:
        check_labels(data.y, classes, path, data.lines)
    if fmt != "csv" and features and features.get("standardize") and features.get("mean") is not None:
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
            raise not_a_column(f"labels file {str(path)!r}", "label_column", label_column, header)
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
