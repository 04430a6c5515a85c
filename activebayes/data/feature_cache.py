"""A project's features, computed once at `pool add` and kept beside the database as a
checksummed binary that every later load memory-maps instead of parsing the data file again.

A csv table is parsed, planned and transformed (`activebayes.data.tabular`) and an image folder
decoded and scaled to [0, 1] (`activebayes.data.images`) only at `pool add`; what the network
sees is written to `activebayes-cache/` (the folder next to a SQLite database, else the current
folder, as for text models), under a name unique to the import, `<project>-<random>`:

    .features.npy   float32 [N, D] (an image folder: [N, C, H, W]), the transformed features
    .rows.npy       a csv table only: one record per data row with its key, its label and the
                    byte offset where it starts in the data file (to show the row as written)

The project's settings record both, with what they were made from:

    settings["feature_cache"] = {"version": 1, "data_sha256": the data file's sha256,
        "spec_sha256": sha256 of the recorded loading settings and feature spec (`spec_sha256`),
        "features": {"file", "sha256", "shape"}, "rows": {"file", "sha256"} or None,
        "table": {"names", "raw_columns", "positions", "delimiter", "encoding", "na_values",
                  "categories", "one_hot_columns"} or None}

Every load (`cached_dataset`, reached through `load_project_data` after the store has checked
the data file's sha256, so a changed data file is refused before anything here runs) checks the
record against the project (same data sha256, same spec; a text column's model, part of the
spec, is refused when changed, as without a cache) and each file against its own sha256;
then x is `np.load(..., mmap_mode="r")`. A file that is missing or changed, or a record that no
longer matches, is never used: the features are rebuilt from the (verified) data file exactly as
`pool add` made them, written back, and a one-line note says so (logged as a warning on the
`activebayes` logger; the CLI prints it). A rebuild of the same data with the same spec gives the
same bytes, so the rebuilt file matches its recorded sha256 again.

Two projects on one data file each have their own files (the random part of the name), so
neither's rebuild or deletion touches the other's.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import re
import secrets
from pathlib import Path
from typing import Any

import numpy as np

from activebayes.data.dataset import Dataset, sha256_file
from activebayes.errors import DataError

VERSION = 1
CACHED_FORMATS = ("csv", "image-folder")
FEATURES_SUFFIX = ".features.npy"
ROWS_SUFFIX = ".rows.npy"
_CHUNK_BYTES = 1 << 24  # bytes of .npy written at a time
_log = logging.getLogger(__name__)


def spec_sha256(data_format: str | None, settings: dict[str, Any]) -> str:
    """sha256 of what the features are made from besides the data file: its format, label, key
    and image layout, and the recorded feature spec (canonical JSON)."""
    made_from = {
        "format": data_format,
        **{k: settings.get(k) for k in ("label_column", "key_column", "image_layout", "features")},
    }
    return hashlib.sha256(json.dumps(made_from, sort_keys=True, default=str).encode()).hexdigest()


def _write_npy(path: Path, array: np.ndarray, dtype: Any = None) -> str:
    """Write `array` as .npy of `dtype` (default its own), a block of about _CHUNK_BYTES at a
    time, through a temporary file renamed when whole; returns its sha256, taken on the way.
    Neither a converted copy of the array nor a mapping of the file is made, so writing takes
    one block's memory (a memory-mapped output keeps every page written resident)."""
    dtype = np.dtype(array.dtype if dtype is None else dtype)
    header = _npy_header(dtype, array.shape)
    digest = hashlib.sha256(header)
    step = max(1, _CHUNK_BYTES // max(1, dtype.itemsize * int(np.prod(array.shape[1:]))))  # rows a block
    tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        with tmp.open("wb") as fh:
            fh.write(header)
            for start in range(0, array.shape[0], step):
                block = np.ascontiguousarray(array[start : start + step], dtype=dtype)
                digest.update(block)
                fh.write(block)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return digest.hexdigest()


def _npy_header(dtype: np.dtype, shape: tuple[int, ...]) -> bytes:
    """The .npy header of a C-ordered array, as `np.save` and `open_memmap` write it: format 1.0,
    or 2.0 for a header over 64 KiB (a structured dtype of very many fields)."""
    fields = {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": tuple(shape)}
    out = io.BytesIO()
    try:
        np.lib.format.write_array_header_1_0(out, fields)
    except ValueError:
        out = io.BytesIO()
        np.lib.format.write_array_header_2_0(out, fields)
    return out.getvalue()


def _rows_of(data: Dataset) -> np.ndarray | None:
    """[N] records (key, label, offset) of a csv table's rows; None for other pools."""
    if data.format != "csv":
        return None
    fields: list[tuple[str, np.ndarray]] = []
    if data.keys is not None:
        fields.append(("key", np.asarray(data.keys, dtype=str)))
    if data.y is not None:
        fields.append(("label", np.asarray(data.y, dtype=str)))
    offsets = getattr(data.raw, "offsets", None)
    if offsets is not None:
        fields.append(("offset", np.asarray(offsets, dtype=np.int64)))
    if not fields:
        return None
    rows = np.empty(len(data), dtype=[(name, values.dtype) for name, values in fields])
    for name, values in fields:
        rows[name] = values
    return rows


def _table_of(data: Dataset) -> dict[str, Any] | None:
    """What a csv table's Dataset needs besides x and the rows (names, categories, raw columns)."""
    if data.format != "csv":
        return None
    raw = data.raw
    return {
        "names": list(data.feature_names or []),
        "raw_columns": list(data.raw_columns or []),
        "positions": list(getattr(raw, "positions", [])),
        "delimiter": getattr(raw, "delimiter", ","),
        "encoding": getattr(raw, "encoding", "utf-8"),
        "na_values": list(getattr(raw, "na_values", ())),
        "categories": data.categories or {},
        "one_hot_columns": list(data.one_hot_columns),
    }


def _write_files(data: Dataset, features_path: Path, rows_path: Path) -> tuple[str, str | None]:
    rows = _rows_of(data)
    features_sha = _write_npy(features_path, data.x, np.float32)  # an image folder's pixels are float32 in [0, 1] already
    rows_sha = _write_npy(rows_path, rows) if rows is not None else None
    return features_sha, rows_sha


def write_feature_cache(data: Dataset, folder: Path, *, stem: str, data_format: str, settings: dict[str, Any],
                        data_sha256: str) -> dict[str, Any]:  # fmt: skip
    """Write the features of a pool being added (`data`, loaded as `pool add` loads it) to
    `folder`; returns the record for settings["feature_cache"] (module docstring). `settings`:
    the project's loading settings and feature spec as they will be recorded."""
    folder = Path(folder)
    base = f"{re.sub(r'[^A-Za-z0-9._-]+', '_', stem).strip('._') or 'pool'}-{secrets.token_hex(4)}"
    features_path, rows_path = ((folder / f"{base}{suffix}").resolve() for suffix in (FEATURES_SUFFIX, ROWS_SUFFIX))
    try:
        folder.mkdir(parents=True, exist_ok=True)
        features_sha, rows_sha = _write_files(data, features_path, rows_path)
    except BaseException as exc:
        remove_feature_cache({"features": {"file": str(features_path)}, "rows": {"file": str(rows_path)}})
        if isinstance(exc, OSError):
            raise DataError(
                f"feature cache {str(folder)!r}: cannot write {features_path.name} ({exc.strerror or exc}); "
                "free some disk space (or make the folder writable) and run the command again"
            ) from exc
        raise
    return {
        "version": VERSION,
        "data_sha256": data_sha256,
        "spec_sha256": spec_sha256(data_format, settings),
        "features": {"file": str(features_path), "sha256": features_sha, "shape": [int(s) for s in data.x.shape]},
        "rows": {"file": str(rows_path), "sha256": rows_sha} if rows_sha is not None else None,
        "table": _table_of(data),
    }


def remove_feature_cache(record: dict[str, Any] | None) -> None:
    """Delete a record's files (a `pool add` that records nothing leaves none behind)."""
    for part in ("features", "rows"):
        entry = (record or {}).get(part)
        if entry:
            Path(entry["file"]).unlink(missing_ok=True)


def _problem(info: Any, record: dict[str, Any]) -> str | None:
    """Why the cache cannot be used as it is, or None when its record and files check out."""
    if record.get("version") != VERSION:
        return f"the feature cache was written in format {record.get('version')!r}, not {VERSION}"
    if record.get("data_sha256") != info.data_sha256 or record.get("spec_sha256") != spec_sha256(info.data_format, info.settings):
        return "the feature cache was made from another data file or feature spec"
    for part in ("features", "rows"):
        entry = record.get(part)
        if entry is None:
            continue
        path = Path(entry["file"])
        if not path.is_file():
            return f"the feature cache file {str(path)!r} is missing"
        if sha256_file(path) != entry["sha256"]:
            return f"the feature cache file {str(path)!r} changed since `pool add` (its sha256 differs)"
    return None


def cached_dataset(info: Any, path: Path) -> Dataset | None:
    """The project's Dataset from its feature cache, or None when it has none (projects added
    before the cache, and formats other than CACHED_FORMATS: the caller parses the data file).
    `info`: the project (`data_format`, `data_sha256`, `settings`); `path`: its data file, whose
    sha256 the caller has just checked. A cache that does not check out is rebuilt (module
    docstring)."""
    record = info.settings.get("feature_cache")
    if not record or info.data_format not in CACHED_FORMATS:
        return None
    from activebayes.data.text_features import load_text_model

    for column in (info.settings.get("features") or {}).get("columns", ()):
        if column.get("kind") == "text":
            load_text_model(column)  # part of the spec: refused (DataError) when missing or changed
    problem = _problem(info, record)
    if problem is not None:
        return _rebuild(info, path, record, problem)
    return _open(info, path, record)


def _open(info: Any, path: Path, record: dict[str, Any]) -> Dataset:
    x = np.load(record["features"]["file"], mmap_mode="r", allow_pickle=False)  # read-only: rows are read from the file (`mapped_rows`)
    if info.data_format == "image-folder":
        return _image_folder(path, x)
    rows = np.load(record["rows"]["file"], mmap_mode="r", allow_pickle=False) if record.get("rows") else None
    return _table(path, x, rows, record["table"])


def _table(path: Path, x: np.ndarray, rows: np.ndarray | None, table: dict[str, Any]) -> Dataset:
    from activebayes.data.table_rows import RawCells

    fields = rows.dtype.names if rows is not None else ()
    offsets = np.asarray(rows["offset"]) if "offset" in fields else None
    return Dataset(
        x, np.asarray(rows["label"]) if "label" in fields else None, rows["key"].tolist() if "key" in fields else None,
        path, "csv", feature_names=list(table["names"]), categories=dict(table["categories"]) or None,
        one_hot_columns=tuple(table["one_hot_columns"]), lines=None, raw_columns=list(table["raw_columns"]),
        raw=RawCells(path, offsets, table["delimiter"], table["positions"], x.shape[0], table["na_values"],
                     table.get("encoding", "utf-8")),  # a cache written before Windows-1252 was read
    )  # fmt: skip


def _image_folder(path: Path, x: np.ndarray) -> Dataset:
    """An image folder's Dataset with cached pixels, after checking the folder against the
    manifest in its converted file (as `load_image_pool` does, without decoding the pixels)."""
    from activebayes.data.images import check_folder, image_dataset, read_manifest

    manifest, _ = read_manifest(path)
    check_folder(manifest.folder, manifest.files, manifest.sha256, manifest.left_out, follow_links=manifest.follows_links)
    return image_dataset(path, x, manifest)


def parse_pool(info: Any, path: Path) -> Dataset:
    """The project's data file parsed and transformed as `pool add` did it (no cache involved)."""
    settings = info.settings
    if info.data_format == "csv":
        from activebayes.data.csv_table import read_csv_table
        from activebayes.data.loaders import dataset_from_table

        label, key = settings.get("label_column"), settings.get("key_column")
        spec = settings["features"]
        text = [c["name"] for c in spec.get("columns", ()) if c.get("kind") == "text"]
        table = read_csv_table(path, text_columns=tuple(n for n in (label, key, *text) if n is not None))
        return dataset_from_table(table, spec, label, key)
    from activebayes.data.images import load_image_pool

    return load_image_pool(path)


def _rebuild(info: Any, path: Path, record: dict[str, Any], problem: str) -> Dataset:
    data = parse_pool(info, path)
    features_path = Path(record["features"]["file"])
    rows_path = Path(record["rows"]["file"]) if record.get("rows") else features_path.with_name(features_path.name.replace(FEATURES_SUFFIX, ROWS_SUFFIX))
    try:
        features_path.parent.mkdir(parents=True, exist_ok=True)
        features_sha, rows_sha = _write_files(data, features_path, rows_path)
    except OSError as exc:
        _log.warning(f"{problem}; rebuilt the features from {str(path)!r} (its sha256 checked), "
                     f"but could not write them back ({exc.strerror or exc})")  # fmt: skip
        return data
    same = features_sha == record["features"]["sha256"] and rows_sha == (record.get("rows") or {}).get("sha256")
    _log.warning(
        f"{problem}; rebuilt it from {str(path)!r} (its sha256 checked)"
        + ("" if same else ", but the rebuilt features differ from those recorded at `pool add`, so every load rebuilds them")
    )
    return _open(info, path, record) if same else data
