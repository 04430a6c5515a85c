"""The recorded features of a planned table (`activebayes.data.tabular.plan_table`): fitted once
at `pool add` on the pool rows, applied at every load.

The pipeline is scikit-learn's `ColumnTransformer` (one transformer per column, in file order):
`SimpleImputer` then `StandardScaler` (numbers; a heavy-tailed column of counts or amounts,
`"log": true`, has `FunctionTransformer(np.log1p)` between them:
`activebayes.data.skewed_columns`); `SimpleImputer`, the calendar features
(`activebayes.data.written_dates.calendar_features` in a `FunctionTransformer`) then
`StandardScaler` (dates); `SimpleImputer`, `written_dates.clock_features` then `StandardScaler`
(clock times); `SimpleImputer` then `OneHotEncoder` (categories); `MissingIndicator`
(gaps); `TfidfVectorizer` then `TruncatedSVD` (text). Its learnt statistics are recorded as JSON
(the spec, below) and applied by `apply_table_spec`, pure numpy, equal to the fitted pipeline's
`transform` (a test shows it), so no pickle is ever loaded:

    {"version": 2, "standardize": bool, "na_values": [...], "columns": [
        {"name", "kind": "numeric", "fill": median, "mean", "scale", "indicator": bool, "written"?: str, "log"?: true},
        {"name", "kind": "date", "fill": median days, "clock": bool, "mean": [F], "scale": [F], "indicator": bool, "written"?: str},
        {"name", "kind": "time", "fill": median fraction of a day, "mean": [2], "scale": [2], "indicator": bool},
        {"name", "kind": "categorical", "fill": level, "categories": [...], "other"?: int, "indicator": bool},
        {"name", "kind": "text", "file", "sha256", "dims", "indicator": false}]}

`pool add` adds "label_written" ("units" or "decimal comma") when a regression target is
written so; `dataset_from_table` then reads the labels as plain numbers
(`activebayes.data.parsed_columns.written_numbers`); and "label_na" (a formula's error values,
`table_gaps.EXCEL_ERRORS`), label cells read as no label; and "label_spellings" ({spelling: class}, `pool add
--merge-label-spellings`: `activebayes.data.label_spellings`), label cells read as the class they spell.

A column's features: numeric `z = (v − mean) / scale` (or v unscaled), with "log" (recorded
only when true; a spec without it is read as before) `z = (log1p(v) − mean) / scale`, mean and
scale those of log1p over the pool rows, a gap read as the pool median v before the log and a
value below 0 refused (`skewed_columns`), named `name (log)`; v parsed from text as
`written` says ("units": an amount such as $1,578.50; "decimal comma": 3,5; "unit:kg": 70 kg;
"duration": hours written 95:10 or 1h 30m; "stopwatch": seconds written 1:23.4, `activebayes.data.clock_columns`); a date's F = 5 (7
with `clock`) calendar features (of an ISO date, or one written as `written` says: "dmy"
31/12/2024, "mdy" 12/31/2024), each standardised, named `name (days)`, `name (season sin)`,
...; a clock time's 2, (sin, cos) of 2π·(seconds since midnight / 86400), each standardised,
named `name (time sin)`, `name (time cos)`; categorical one 0/1 per level, and with "other" (the number of rare levels of a
many-level column pooled at import: `activebayes.data.frequent_levels`) one more, `name=(other)`,
for every value outside the categories, an appended row's new level too; then its indicator `name (missing)` when it has one; text
`name[0..dims)`.

Memory. Each transformer is fitted on its own column alone, as the ColumnTransformer would fit
it, so no [N, M] matrix of Python objects is built.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Collection, Sequence

import numpy as np

from activebayes.data.clock_columns import DURATION, STOPWATCH, TIME_KIND, time_values
from activebayes.data.csv_table import CsvTable, shown
from activebayes.data.features import is_number, unseen_category
from activebayes.data.frequent_levels import OTHER
from activebayes.data.skewed_columns import negative_value_error
from activebayes.data.parsed_columns import (CALENDAR_PARTS, CLOCK_PARTS, DATE_ORDERS, UNIT_PREFIX, calendar_features, clock_features,
                                             decimal_comma_numbers, measured_numbers, unit_numbers, written_days)
from activebayes.data.table_gaps import column_missing
from activebayes.data.tabular import ColumnPlan, TablePlan, first_true, gap_values
from activebayes.errors import DataError

SPEC_VERSION = 2


def _column_input(plan: TablePlan, c: ColumnPlan, rows: np.ndarray | None = None) -> np.ndarray:
    """Column `c` of `rows` (all when None) as scikit-learn takes it: numbers (a date's days, a
    clock time's fraction of a day) [R, 1] float64 (NaN missing), a categorical column's text [R, 1] object (NaN missing), a text column [R] object
    ("" missing)."""
    take = slice(None) if rows is None else rows
    if c.kind in ("numeric", "date", TIME_KIND):
        return c.numbers[take][:, None]
    if c.kind == "text":
        cells = np.asarray(plan.table.column(c.name), dtype=object)[take]
        cells[c.missing[take]] = ""
        return cells
    codes, texts = plan.table.category_codes(c.name)
    values = np.asarray([*texts, np.nan], dtype=object)  # gaps: NaN
    picked = np.where(c.missing, -1, codes)[take]
    return values[picked][:, None]


def _object_matrix(plan: TablePlan) -> np.ndarray:
    """[N, M] object array for scikit-learn: floats (NaN missing) for numeric columns, text (NaN
    missing) for categorical ones, text ("" missing) for text columns."""
    out = np.empty((len(plan.table), len(plan.columns)), dtype=object)
    for j, c in enumerate(plan.columns):
        x = _column_input(plan, c)
        out[:, j] = x if x.ndim == 1 else x[:, 0]
    return out


def _calendar(days: np.ndarray, clock: bool) -> np.ndarray:
    """[R, F] calendar features of [R, 1] days (the date pipeline's step)."""
    return calendar_features(np.asarray(days, dtype=np.float64)[:, 0], clock)


def _clock(fraction: np.ndarray) -> np.ndarray:
    """[R, 2] time-of-day features of [R, 1] fractions of a day (the clock pipeline's step)."""
    return clock_features(np.asarray(fraction, dtype=np.float64)[:, 0])


def _pooled(values: np.ndarray, levels: tuple[str, ...]) -> np.ndarray:
    """[R, 1] object `values` with each one outside `levels` replaced by OTHER (the "other" step
    of a many-level column's pipeline)."""
    kept = set(levels)
    return np.asarray([[v if v in kept else OTHER] for v in np.asarray(values, dtype=object)[:, 0]], dtype=object)


def build_pipeline(plan: TablePlan, *, standardize: bool = True, text_dims: int | None = None, logged: Collection[str] = ()) -> Any:
    """The unfitted `ColumnTransformer` for `plan` (module docstring): one transformer per
    column in file order, each gap indicator right after its column; the numeric columns named in
    `logged` take log1p between their imputer and scaler."""
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import MissingIndicator, SimpleImputer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, StandardScaler

    from activebayes.data.text_features import text_pipeline

    impute = plan.options.missing == "impute"
    parts: list[tuple[str, Any, Any]] = []
    for j, c in enumerate(plan.columns):
        if c.kind in ("numeric", "date", TIME_KIND):
            scale = StandardScaler() if standardize else "passthrough"
            imputer = SimpleImputer(strategy="median", keep_empty_features=True)
            between = {"date": [("calendar", FunctionTransformer(_calendar, kw_args={"clock": c.clock}))],
                       TIME_KIND: [("clock", FunctionTransformer(_clock))],
                       "numeric": [("log", FunctionTransformer(np.log1p))] if c.name in logged else []}[c.kind]  # fmt: skip
            parts.append((f"{j}:{c.name}", Pipeline([("impute", imputer), *between, ("scale", scale)]), [j]))
        elif c.kind == "categorical":
            imputer = SimpleImputer(strategy="most_frequent", missing_values=np.nan, keep_empty_features=True)
            other = [("other", FunctionTransformer(_pooled, kw_args={"levels": tuple(c.levels)}))] if c.other else []
            encoder = OneHotEncoder(categories=[[*c.levels, *[OTHER] * bool(c.other)]], handle_unknown="error", sparse_output=False)
            parts.append((f"{j}:{c.name}", Pipeline([("impute", imputer), *other, ("encode", encoder)]), [j]))
        else:
            parts.append((f"{j}:{c.name}", text_pipeline(len(plan.table), text_dims), j))
        if impute and c.kind != "text" and c.missing.any():
            parts.append((f"{j}:{c.name} (missing)", MissingIndicator(features="all", missing_values=np.nan), [j]))
    return ColumnTransformer(parts, remainder="drop", sparse_threshold=0.0)


def fit_table_spec(
    plan: TablePlan,
    rows: np.ndarray,
    *,
    standardize: bool = True,
    text_folder: str | Path | None = None,
    text_dims: int | None = None,
    logged: Collection[str] = (),
) -> dict[str, Any]:
    """The recorded spec (module docstring): the pipeline fitted on `rows` (the pool rows; the
    test split excluded), one column at a time (each transformer of the ColumnTransformer sees
    only its own column, so this is its fit without the [N, M] object matrix), the numeric
    columns in blocks (`_numeric_statistics`: the same numbers, bit for bit). The numeric
    columns named in `logged` (`activebayes.data.skewed_columns.logged_columns`, decided by the
    caller on the same rows) are read as log(1 + x). A text column's learnt vocabulary and
    projection go to a checksummed .npz in `text_folder` (required when there is one)."""
    from sklearn.base import clone

    from activebayes.data.text_features import save_text_model

    rows = np.asarray(rows, dtype=np.int64)
    if rows.size == 0:
        raise DataError(f"data file {str(plan.table.path)!r}: no rows to fit the features on")
    fitted: dict[str, Any] = {}
    numeric: list[tuple[str, Any, ColumnPlan]] = []
    for part, transformer, where in build_pipeline(plan, standardize=standardize, text_dims=text_dims, logged=logged).transformers:
        c = plan.columns[where if isinstance(where, int) else where[0]]
        if part.endswith(" (missing)"):
            fitted[part] = None  # an indicator learns nothing
        elif c.kind == "numeric":
            numeric.append((part, transformer, c))
        else:
            fitted[part] = clone(transformer).fit(_column_input(plan, c, rows))
    statistics = _numeric_statistics(numeric, rows)
    columns: list[dict[str, Any]] = []
    for j, c in enumerate(plan.columns):
        part = f"{j}:{c.name}"
        entry: dict[str, Any] = {"name": c.name, "kind": c.kind, "indicator": f"{part} (missing)" in fitted}
        if c.kind == "numeric":
            fill, mean, scale = statistics[part]
            entry.update(fill=fill, mean=mean, scale=scale, **({"written": c.written} if c.written else {}), **({"log": True} if c.name in logged else {}))
        elif c.kind in ("date", TIME_KIND):
            step = fitted[part]
            scaler = step.named_steps["scale"]
            width = len(CALENDAR_PARTS) + len(CLOCK_PARTS) * c.clock if c.kind == "date" else len(CLOCK_PARTS)
            entry.update(fill=float(step.named_steps["impute"].statistics_[0]), **({"clock": c.clock} if c.kind == "date" else {}),
                         mean=[float(v) for v in scaler.mean_] if scaler != "passthrough" else [0.0] * width,
                         scale=[float(v) for v in scaler.scale_] if scaler != "passthrough" else [1.0] * width,
                         **({"written": c.written} if c.written else {}))  # fmt: skip
        elif c.kind == "categorical":
            entry["fill"] = str(fitted[part].named_steps["impute"].statistics_[0])
            entry["categories"] = [str(v) for v in fitted[part].named_steps["encode"].categories_[0]][: len(c.levels)]
            if c.other:
                entry["other"] = c.other
        else:
            if text_folder is None:
                raise DataError(f"text column {c.name!r}: no folder to record its text model in")
            entry.update(save_text_model(fitted[part], Path(text_folder), plan.table.path, c.name))
        columns.append(entry)
    return {
        "version": SPEC_VERSION,
        "standardize": bool(standardize),
        "missing": plan.options.missing,
        "na_values": list(gap_values(plan.options)),  # the user's and EXCEL_ERRORS: what was a gap when fitted
        "columns": columns,
    }


_BLOCK_ELEMENTS = 1 << 23  # numbers fitted at once: 64 MiB of float64


def _numeric_statistics(parts: list[tuple[str, Any, ColumnPlan]], rows: np.ndarray) -> dict[str, tuple[float, float, float]]:
    """(fill, mean, scale) of each numeric column's pipeline (imputer, scaler) fitted on `rows`.
    SimpleImputer and StandardScaler work column by column, so one fit on a block of columns laid
    out column-major (each column contiguous, summed as a column alone is) gives the very numbers
    of a fit per column, at the cost of a few fits instead of one per column of a wide table. The
    logged columns (a log1p step) are fitted in blocks of their own."""
    from sklearn.base import clone

    out: dict[str, tuple[float, float, float]] = {}
    per_block = max(1, _BLOCK_ELEMENTS // max(1, rows.size))
    alike = [[p for p in parts if "log" not in p[1].named_steps], [p for p in parts if "log" in p[1].named_steps]]  # one pipeline a block
    for block in (group[start : start + per_block] for group in alike for start in range(0, len(group), per_block)):
        x = np.empty((rows.size, len(block)), dtype=np.float64, order="F")
        for k, (_, _, c) in enumerate(block):
            x[:, k] = c.numbers[rows]
        step = clone(block[0][1]).fit(x)
        fills, scaler = step.named_steps["impute"].statistics_, step.named_steps["scale"]
        for k, (part, _, _) in enumerate(block):
            mean, scale = (scaler.mean_[k], scaler.scale_[k]) if scaler != "passthrough" else (0.0, 1.0)
            out[part] = (float(fills[k]), float(mean), float(scale))
    return out


def spec_columns(spec: dict[str, Any], header: Sequence[str], label_column: str | None, key_column: str | None) -> list[dict[str, Any]]:
    """The per-column entries of a spec; a version-1 spec (recorded before gaps and kinds were:
    one-hot categories and standardisation over the encoded columns in file order) is read as one."""
    if spec.get("version", 1) >= 2:
        return list(spec["columns"])
    cats = spec.get("categorical") or {}
    mean, scale = spec.get("mean"), spec.get("scale")
    out, pos = [], 0
    for name in header:
        if name in (label_column, key_column):
            continue
        if name in cats:
            out.append({"name": name, "kind": "categorical", "categories": list(cats[name]), "fill": None, "indicator": False})
            pos += len(cats[name])
        else:
            m, s = (mean[pos], scale[pos]) if spec.get("standardize") and mean is not None else (0.0, 1.0)
            out.append({"name": name, "kind": "numeric", "fill": None, "mean": m, "scale": s, "indicator": False})
            pos += 1
    return out


def _numeric_feature(table: CsvTable, c: dict[str, Any], missing: np.ndarray) -> np.ndarray:
    """[N] float64 z = (v − mean) / scale of a numeric column, gaps filled (with "log":
    z = (log1p(v) − mean) / scale); DataError naming the line of a text, a non-finite number, or
    a value below 0 in a logged column."""
    name, path = c["name"], str(table.path)
    codes, texts = table.text_codes(name)
    v = table.numbers(name).copy()
    unfilled = (codes >= 0) & ~missing
    if c.get("written") == "units":  # amounts written as text: "$1,578.50", "53%"
        v[codes >= 0] = unit_numbers(texts)[codes[codes >= 0]]
        unfilled &= ~np.isfinite(v)
    elif str(c.get("written", "")).startswith(UNIT_PREFIX):  # 59 yrs, 32.1 kg/m2: one unit
        v[codes >= 0] = measured_numbers(texts, c["written"][len(UNIT_PREFIX) :])[codes[codes >= 0]]
        unfilled &= ~np.isfinite(v)
    elif c.get("written") in (DURATION, STOPWATCH):  # 95:10, hours and minutes: 95.1667 hours; 1:23.4 on a stopwatch: 83.4 seconds
        v[codes >= 0] = time_values(texts, c["written"])[codes[codes >= 0]]
        unfilled &= ~np.isfinite(v)
    elif c.get("written") == "decimal comma":  # 3,5 and 1.234,5; a plain 1.234 too is read so
        spelled_codes, spellings = table.category_codes(name)
        v = decimal_comma_numbers(spellings)[spelled_codes]
        unfilled = ~missing & ~np.isfinite(v)
    if unfilled.any():
        spelled = np.asarray([is_number(t) for t in texts] + [False])[codes]
        if (unfilled & ~spelled).any():
            at = first_true(unfilled & ~spelled)
            raise DataError(f"{path!r} line {table.lines[at]}: column {name!r} is not a number ({shown(table.cell(at, name))})")
        at = first_true(unfilled)
        raise DataError(f"{path!r} line {table.lines[at]}: a feature is NaN or infinite (column {name!r}: {shown(table.cell(at, name))}); give a finite number")
    v[missing] = float(c["fill"]) if c.get("fill") is not None else np.nan
    if c.get("log"):
        if (v < 0).any():
            at = first_true(v < 0)
            raise DataError(negative_value_error(path, table.lines[at], name, shown(table.cell(at, name))))
        v = np.log1p(v)
    return (v - float(c["mean"])) / float(c["scale"])


def _parsed_features(table: CsvTable, c: dict[str, Any], missing: np.ndarray) -> np.ndarray:
    """[N, F] standardised features of a date column (calendar features of its days) or a clock
    column (time-of-day features of its fraction of a day), gaps filled; DataError naming the
    line of a value that is not written as the others are."""
    name = c["name"]
    codes, texts = table.text_codes(name)
    if c["kind"] == TIME_KIND:
        what, how, features = "a clock time", "HH:MM, HH:MM:SS or H:MM AM/PM, with an hour of 0-23", clock_features
        values = time_values([*texts, ""], "clock")[codes]  # code -1, a plain number: no clock time
    else:
        order = c.get("written", "ymd")
        what, how, features = "a date", DATE_ORDERS[order], lambda days: calendar_features(days, bool(c["clock"]))
        values = written_days([*texts, ""], order)[codes]  # code -1, a plain number: no date
    bad = ~missing & ~np.isfinite(values)
    if bad.any():
        at = first_true(bad)
        raise DataError(f"{str(table.path)!r} line {table.lines[at]}: column {name!r} is not {what} written as the others are "
                        f"({shown(table.cell(at, name))}); write it as {how}")  # fmt: skip
    values[missing] = float(c["fill"]) if c.get("fill") is not None else np.nan
    return (features(values) - np.asarray(c["mean"])) / np.asarray(c["scale"])


def _category_indices(table: CsvTable, c: dict[str, Any], missing: np.ndarray) -> np.ndarray:
    """[N] the index in c["categories"] of each cell (a gap: of c["fill"]); a value outside them
    is len(c["categories"]), the "other" feature, when the column has one, else a DataError
    naming its row."""
    name = c["name"]
    codes, texts = table.category_codes(name)  # numbers in a categorical column: by their own spelling
    values = [*texts, c["fill"]]
    index = {v: i for i, v in enumerate(c["categories"])}
    picked = np.where(missing, len(texts), codes)
    outside = len(c["categories"]) if c.get("other") else -1
    out = np.asarray([index.get(v, outside) for v in values], dtype=np.int64)[picked]
    if (out < 0).any():
        at = first_true(out < 0)
        raise unseen_category(at, values[int(picked[at])], c["categories"], column=name, path=table.path)
    return out


def apply_table_spec(table: CsvTable, spec: dict[str, Any], columns: list[dict[str, Any]] | None = None) -> tuple[np.ndarray, list[str]]:
    """(x [N, D] float32, D feature names): the recorded spec applied to every row of `table`
    (module docstring), column by column. A value the spec cannot take
    (text in a number column, an unseen category, a gap where none was recorded) is a DataError
    naming its line."""
    from activebayes.data.text_features import apply_text_model

    columns = columns if columns is not None else list(spec["columns"])
    tokens = spec.get("na_values", ())
    n = len(table)
    blocks: list[np.ndarray | tuple[np.ndarray, int]] = []  # [N, k] float32, or a categorical's (indices [N], K): `_side_by_side`
    names: list[str] = []
    for c in columns:
        name, kind = c["name"], c["kind"]
        if name not in table.header:
            raise DataError(f"data file {str(table.path)!r}: has no column {name!r}, which the recorded features use; import the file into a new project")
        missing = column_missing(table, name, tokens)
        if missing.any() and c.get("fill") is None and kind != "text":
            at = first_true(missing)
            raise DataError(f"{str(table.path)!r} line {table.lines[at]}: column {name!r} has no value ({shown(table.cell(at, name))}); fill it in")
        if kind == "numeric":
            blocks.append(_numeric_feature(table, c, missing).astype(np.float32)[:, None])
            names.append(f"{name} (log)" if c.get("log") else name)
        elif kind in ("date", TIME_KIND):
            blocks.append(_parsed_features(table, c, missing).astype(np.float32))
            parts = (*CALENDAR_PARTS, *CLOCK_PARTS[: 2 * bool(c["clock"])]) if kind == "date" else CLOCK_PARTS
            names.extend(f"{name} ({part})" for part in parts)
        elif kind == "categorical":
            blocks.append((_category_indices(table, c, missing), len(c["categories"]) + bool(c.get("other"))))
            names.extend(f"{name}={level}" for level in [*c["categories"], *[OTHER] * bool(c.get("other"))])
        else:
            cells = table.column(name)
            blocks.append(apply_text_model(c, ["" if gap else v for v, gap in zip(cells, missing)]).astype(np.float32))
            names.extend(f"{name}[{k}]" for k in range(blocks[-1].shape[1]))  # type: ignore[union-attr]
        if c.get("indicator"):
            blocks.append(missing.astype(np.float32)[:, None])
            names.append(f"{name} (missing)")
    return _side_by_side(blocks, n), names


def _side_by_side(blocks: list[np.ndarray | tuple[np.ndarray, int]], n: int) -> np.ndarray:
    """[N, D] float32: the blocks side by side, D the sum of their widths, written into one
    array made once; a categorical block (indices [N] in 0..K-1, K) as its one-hot [N, K],
    out[i, start + index[i]] = 1, set in place, so no [N, K] block of its own is ever made."""
    widths = [block[1] if isinstance(block, tuple) else block.shape[1] for block in blocks]
    out = np.zeros((n, sum(widths)), dtype=np.float32)
    start = 0
    for block, width in zip(blocks, widths):
        if isinstance(block, tuple):
            out[np.arange(n), start + block[0]] = 1.0
        else:
            out[:, start : start + width] = block
        start += width
    return out


def raw_cells(table: CsvTable, columns: list[dict[str, Any]], na_values: Sequence[str] = ()) -> Any:
    """[N, M] text of the M feature columns as a person should see them: as in the file, a
    missing value empty (read from the file row by row when asked for:
    `activebayes.data.table_rows.RawCells`)."""
    from activebayes.data.table_rows import RawCells

    positions = [table.header.index(c["name"]) for c in columns]
    return RawCells(table.path, table.offsets, table.delimiter, positions, len(table), na_values, table.encoding)
