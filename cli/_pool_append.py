"""`activebayes pool add MORE.csv --append`: a new batch of rows of the same table added to a
project's pool, keeping every item, label, round, query and score.

The encoding is frozen: the new rows are read with the feature spec recorded at the first import
(categories, medians, means and scales, text models), so every existing item keeps exactly the
features its rounds were scored on, a later `round` encodes old and new rows alike, and the
same seed still gives the same queries on the old rows. A category first seen in the new rows
goes to the "other" feature of a column encoded on its frequent levels
(`activebayes.data.frequent_levels`). A value the frozen spec cannot take (a category first seen
in the new rows of a column encoded on all its levels, text in a number column, a gap in a
column that had none under --missing error) is refused in one line naming the new file's line:
such a batch needs a new project (or its values mapped to the known ones).

Steps, so that a process killed at any instant leaves either the old project or the whole
appended one:
  1. check the new file whole against the project (same columns as the import reads them, same
     separator and encoding, keys new, labels among the classes) — nothing written yet;
  2. write the combined data file (the project's data file byte for byte, then the new file's
     records) into the cache folder under a new name, through a temporary file renamed when
     whole, read it back and check that it gives the old rows' and the new rows' features;
  3. write its feature cache (new names too);
  4. ONE transaction (`activebayes.store.pool_append.append_pool`) records the new data file,
     its sha256, the settings and the new items and labels.
Files of a run killed before step 4 commits are unreferenced and harmless; after the commit the
previous cache files (and a previous combined file) are removed.

Rows without a key column are keyed by their row number in the combined table: the new rows
continue the numbering after the project's last row, so their keys never collide.
"""

from __future__ import annotations

import os
import secrets
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from activebayes_cli._app import CliError

APPENDED = "-appended-"  # in the name of a combined data file written by an append


def refuse_unappendable(name: str, info: Any, file: Path, *, image_folder: bool = False) -> None:
    """CliError unless project `name` has a pool that takes more of the same: a csv table recorded
    with a feature spec, or (`image_folder`) a folder of images; neither with a separate truth file."""
    if info.data_path is None:
        raise CliError(f"--append: project {name!r} has no pool yet", f"add the first file with `activebayes pool add {file}` (without --append)")
    if (info.data_format == "image-folder") != image_folder:
        what = "an image folder" if info.data_format == "image-folder" else f"a .{info.data_format} file"
        given = "a folder of images" if image_folder else "a table's rows"
        raise CliError(f"--append: project {name!r} holds {what}; {given} cannot be appended to it",
                       "append data of the project's kind, or add the combined data to a new project (`activebayes init --name NAME`)")  # fmt: skip
    if not image_folder and (info.data_format != "csv" or not (info.settings or {}).get("features")):
        raise CliError(f"--append: project {name!r} holds a .{info.data_format} file; only rows of a csv table can be appended",
                       "add the combined data to a new project (`activebayes init --name NAME`)")  # fmt: skip
    if info.settings.get("truth_path"):
        raise CliError(f"--append: project {name!r} reads its truth from a separate file ({info.settings['truth_path']})",
                       "add all the images to a new project with --truth FILE covering them" if image_folder else
                       "put the labels in a column of both files, or add the combined data to a new project")  # fmt: skip


def _same_columns(old_path: Path, file: Path) -> None:
    """CliError unless `file`'s header names the project's columns, in order (as written, stripped)."""
    from activebayes.data.csv_table import csv_header

    old, new = csv_header(old_path, name_row_names=False), csv_header(file, "file", name_row_names=False)
    if old == new:
        return
    missing, extra = [c for c in old if c and c not in new], [c for c in new if c and c not in old]
    nameless = old.count("") - new.count("")  # empty columns without a name: separators at the ends of the lines
    what = "; ".join(part for part in (
        f"it lacks {', '.join(map(repr, missing))}" if missing else "",
        f"it has {', '.join(map(repr, extra))} too" if extra else "",
        f"it lacks {nameless} of the project's empty columns without a name, separators at the ends of its lines" if nameless > 0 else
        f"it has {-nameless} more empty columns without a name, separators at the ends of its lines" if nameless else "",
        "its columns are in another order" if not missing and not extra and not nameless else "") if part)  # fmt: skip
    shown_old = ", ".join(c or "''" for c in old[:8]) + (", ..." if len(old) > 8 else "")
    raise CliError(f"--append: the columns of {file} differ from those of the project's table ({what})",
                   f"save it with the project's columns in their order ({shown_old})")


def _same_writing(old: Any, table: Any, file: Path) -> None:
    """CliError unless the new table is separated and encoded as the project's (its records are
    appended as written) and has byte offsets for its records."""
    from activebayes.data.csv_table import delimiter_name

    if table.delimiter != old.raw.delimiter:
        raise CliError(f"--append: {file} is separated by {delimiter_name(table.delimiter)}, the project's table by "
                       f"{delimiter_name(old.raw.delimiter)}", f"save it with {delimiter_name(old.raw.delimiter)} as the separator")  # fmt: skip
    from activebayes.data.csv_encoding import WINDOWS_1252

    utf8 = ("utf-8", "utf-8-sig")
    same = table.encoding == old.raw.encoding or (table.encoding in utf8 and old.raw.encoding in utf8)
    if not same and old.raw.encoding == WINDOWS_1252 and table.encoding in utf8 and table.offsets is not None:
        same = file.read_bytes()[int(table.offsets[0]):].isascii()  # plain ASCII records read the same in Windows-1252
    if not same or table.offsets is None or old.raw.offsets is None or table.encoding == "utf-16":
        raise CliError(f"--append: {file} is written as {table.encoding}, the project's table as {old.raw.encoding}; "
                       "their records cannot be put one after the other", "save it as 'CSV UTF-8' with line feeds, as the first file")  # fmt: skip


def _kept_rows(table: Any, spec: dict[str, Any], file: Path) -> np.ndarray:
    """The rows of the new table that become items: all, less those with a gap under the first
    import's --missing drop; under --missing error a gap is refused."""
    from activebayes.data.csv_table import shown
    from activebayes.data.table_gaps import column_missing

    n = len(table)
    gaps = np.zeros(n, dtype=bool)
    for c in spec["columns"]:
        missing = column_missing(table, c["name"], spec.get("na_values", ()))
        if spec.get("missing") == "error" and missing.any():
            at = int(np.argmax(missing))
            raise CliError(f"{str(file)!r} line {table.lines[at]}: column {c['name']!r} has no value ({shown(table.cell(at, c['name']))})",
                           "fill it in: the project was imported with --missing error")  # fmt: skip
        gaps |= missing
    kept = np.flatnonzero(~gaps) if spec.get("missing") == "drop" else np.arange(n)
    if kept.size == 0:
        raise CliError(f"--append: every row of {file} has a missing value, and the project leaves such rows out (--missing drop)",
                       "fill them in")  # fmt: skip
    return kept


def _new_keys(store: Any, name: str, old: Any, new: Any, table: Any, key_column: str | None, file: Path) -> list[str]:
    """The new rows' keys: the key column's, refused when one is already a row of the project's
    table or an item; without a key column the row numbers after the project's last row."""
    n_old = len(old)
    if key_column is None:
        return [str(n_old + j) for j in range(len(new))]
    taken = set(old.keys or ()) | store.item_keys(name)
    clash = [j for j, key in enumerate(new.keys) if key in taken]
    if clash:
        at = clash[0]
        raise CliError(f"{str(file)!r} line {table.lines[at]}: the key {new.keys[at]!r} of column {key_column!r} is already a row of "
                       f"project {name!r} ({len(clash)} of its {len(new)} keys are)", "give the new rows keys of their own, or leave those rows out")  # fmt: skip
    return list(new.keys)


def _labels(info: Any, new: Any, table: Any, kept: np.ndarray, file: Path) -> list[str] | None:
    """The new rows' labels as text ("" none), checked as the first import checked them: among
    the classes (a regression's: numbers); an empty one only where labels are known."""
    from activebayes.data.dataset import check_labels
    from activebayes.data.project import label_texts

    if new.y is None:
        return None
    labels = label_texts(new.y)
    known = info.settings.get("truth") == "known"
    unlabelled = [j for j in kept.tolist() if not labels[j]]
    if unlabelled and not known:
        at = unlabelled[0]
        raise CliError(f"{str(file)!r}: row {at} has an empty label (line {table.lines[at]})",
                       "fill it in: the project holds its labels back as the truth, so every row needs one")  # fmt: skip
    check_labels(np.asarray(labels, dtype=object)[kept], info.classes if info.task == "classification" else None, file,
                 table.lines[kept], numeric=info.task == "regression", empty_ok=known)  # fmt: skip
    return labels


def _write_combined(old_path: Path, file: Path, first_record: int, folder: Path, stem: str) -> Path:
    """The project's data file then `file`'s records from byte `first_record` on, written to a
    new file in `folder` through a temporary one renamed when whole."""
    import re

    folder.mkdir(parents=True, exist_ok=True)
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("._") or "pool"
    path = (folder / f"{base}{APPENDED}{secrets.token_hex(4)}{old_path.suffix or '.csv'}").resolve()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        with tmp.open("wb") as out:
            with old_path.open("rb") as src:
                shutil.copyfileobj(src, out)
                src.seek(max(src.tell() - 1, 0))
                if src.tell() and src.read(1) != b"\n":
                    out.write(b"\n")
            with file.open("rb") as src:
                src.seek(first_record)
                shutil.copyfileobj(src, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def _read_combined(path: Path, old: Any, new: Any, keys: list[str], spec: dict[str, Any], label: str | None, key: str | None,
                   text: tuple[str, ...], file: Path) -> Any:  # fmt: skip
    """The combined file read as every later load reads it, checked to give the old rows' and the
    new rows' features, keys and labels; CliError otherwise."""
    from activebayes.data.csv_table import read_csv_table
    from activebayes.data.loaders import dataset_from_table
    from activebayes.errors import DataError

    n_old = len(old)
    try:
        data = dataset_from_table(read_csv_table(path, text_columns=text), spec, label, key)
    except DataError as exc:
        data, problem = None, str(exc)
    if data is not None:
        problem = "" if len(data) == n_old + len(new) else f"{len(data)} rows, not {n_old} + {len(new)}"
    if not problem:
        same = np.array_equal(data.x[:n_old], old.x) and np.array_equal(data.x[n_old:], new.x)
        same = same and (data.keys is None or list(data.keys[n_old:]) == keys)
        same = same and (data.y is None or list(map(str, data.y[n_old:])) == list(map(str, new.y)))
        problem = "" if same else "its rows read differently after the project's"
    if problem:
        raise CliError(f"--append: {file} cannot be appended as written ({problem})",
                       "save it as the first file was saved (same separator, encoding and quoting)")  # fmt: skip
    return data


def split_new_rows(kept: np.ndarray, labels: list[str] | None, test_fraction: float, seed: int, *,
                   known: bool) -> tuple[np.ndarray, np.ndarray, list[int]]:  # fmt: skip
    """(pool rows, test rows, rows whose labels are recorded) among the new rows `kept` (indices
    into `labels`, "" where a row has none): a seeded `test_fraction` of the labelled ones is the
    test split; their labels are recorded, and the pool rows' too where the labels are `known`."""
    from activebayes_cli._pool_import import split_rows

    candidates = kept[[bool(labels[j]) for j in kept.tolist()]] if labels is not None else kept[:0]
    test_j = candidates[split_rows(candidates.size, test_fraction, seed)[1]] if test_fraction > 0 else kept[:0]
    pool_j = np.setdiff1d(kept, test_j)
    observed = [j for j in [*test_j.tolist(), *(pool_j.tolist() if known else ())] if labels[j]] if labels is not None else []
    return pool_j, test_j, observed


def append_table(store: Any, name: str, file: Path, *, test_fraction: float, seed: int, folder: Path, who: str = "import") -> dict[str, Any]:
    """Append the rows of csv `file` to project `name`'s pool (module docstring); returns the
    summary `pool add` prints. `test_fraction`: a seeded share of the new labelled rows that
    becomes test items (0: every new row is a pool item)."""
    from activebayes.data import sha256_file
    from activebayes.data.csv_table import read_csv_table
    from activebayes.data.feature_cache import remove_feature_cache, write_feature_cache
    from activebayes.data.loaders import dataset_from_table
    from activebayes.data.project import load_project_data
    from activebayes.store.pool_append import append_pool

    info = store.project(name)
    refuse_unappendable(name, info, file)
    old = load_project_data(store, name)  # a changed data file is refused here, as at `round` (its sha256 read once)
    old_path = Path(info.data_path)
    settings = info.settings
    spec, label, key = settings["features"], settings.get("label_column"), settings.get("key_column")
    _same_columns(old_path, file)
    text = tuple(n for n in (label, key, *(c["name"] for c in spec["columns"] if c["kind"] == "text")) if n is not None)
    table = read_csv_table(file, text_columns=text)
    _same_writing(old, table, file)
    kept = _kept_rows(table, spec, file)
    new = dataset_from_table(table, spec, label, key)  # the frozen spec: an unseen category is refused here (or "other")
    keys = _new_keys(store, name, old, new, table, key, file)
    labels = _labels(info, new, table, kept, file)
    if test_fraction > 0 and labels is None:
        raise CliError(f"--test-fraction: {file} has no labels", "leave --test-fraction out")
    pool_j, test_j, observed = split_new_rows(kept, labels, test_fraction, seed, known=settings.get("truth") == "known")
    n_old = len(old)
    appended = [*settings.get("appended", []), {
        "file": str(file.resolve()), "sha256": sha256_file(file), "rows": len(new), "pool_items": int(pool_j.size),
        "test_items": int(test_j.size), "left_out": int(len(new) - kept.size), "labels": len(observed),
        "at": datetime.now(timezone.utc).isoformat(timespec="seconds")}]  # fmt: skip
    combined, cache = None, None
    try:
        combined = _write_combined(old_path, file, int(table.offsets[0]), folder, name)
        data = _read_combined(combined, old, new, keys, spec, label, key, text, file)
        digest = sha256_file(combined)
        changes = {"appended": appended, "first_data_path": settings.get("first_data_path", info.data_path)}
        cache = write_feature_cache(data, folder, stem=name, data_format="csv", settings={**settings, **changes}, data_sha256=digest)
        changes["feature_cache"] = cache
        append_pool(
            store, name, combined, data_sha256=digest, replaces_sha256=info.data_sha256, settings=changes,
            pool_rows=n_old + pool_j, pool_keys=[keys[j] for j in pool_j], test_rows=n_old + test_j,
            test_keys=[keys[j] for j in test_j], observations=[(keys[j], labels[j]) for j in observed], who=who,
        )  # fmt: skip
    except BaseException:
        remove_feature_cache(cache)
        if combined is not None:
            combined.unlink(missing_ok=True)
        raise
    remove_feature_cache(settings.get("feature_cache"))  # the previous files: no longer referenced
    remove_appended_data(info)  # a previous combined file, written by an append
    return {
        "project": name, "file": str(file.resolve()), "format": "csv", "appended": True, "rows": len(new),
        "pool_items": int(pool_j.size), "test_items": int(test_j.size), "left_out": int(len(new) - kept.size),
        "labels": len(observed), "truth": settings.get("truth", "none"),
        "total_pool_items": store.count_items(name, split="pool"), "total_test_items": store.count_items(name, split="test"),
        "data_path": str(combined),
    }  # fmt: skip


def remove_appended_data(info: Any) -> None:
    """Delete the combined data file of a project whose rows were appended (`delete`): it was
    written by `append_table` into the cache folder; the user's own files stay."""
    if (info.settings or {}).get("appended") and info.data_path and APPENDED in Path(info.data_path).name:
        Path(info.data_path).unlink(missing_ok=True)
