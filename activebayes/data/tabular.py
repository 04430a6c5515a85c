"""A csv table as a network's features: which columns, what kind each is, what to do with gaps,
and a scikit-learn pipeline fitted once and recorded as data.

Three steps, each a function:

    plan = plan_table(read_csv_table(path), TableOptions(label_column="y", missing="impute"))
    spec = fit_table_spec(plan, pool_rows, standardize=True)   # at `pool add`, on the pool rows
    x, names = apply_table_spec(plan.table, spec)               # at every load: [N, D] float32

Columns. The key column is `key_column`, else the first column named `key`, else `id` (any case),
else none (items are keyed by row number): `key_column_of`. The label and key are never features;
`features` keeps only the columns it names and `ignore` leaves columns out. A feature column is

- numeric when every value that is present parses as a number (an infinity is refused);
- text to be read as prose when named in `text_columns` (`activebayes.data.text_features`);
- otherwise categorical: one-hot encoded over its levels in natural order ("auto"), or refused
  ("error"). A column that looks like an identifier (at least 20 values, 90 % of them distinct)
  or has more levels than max(50, 5 % of the rows) is refused in one line naming it, unless
  `categorical="force"`; it is a key, free text or noise, not a category.

Gaps. A cell that is empty or one of NA_VALUES (or `na_values`; compared case-insensitively) is
missing. `missing="impute"`: the median of a number column, the most frequent level of a
categorical one, and a 0/1 indicator feature after every column with a gap anywhere in the file;
`"drop"`: rows with a gap are no items (`TablePlan.rows_with_gaps`); `"error"`: refused.

The pipeline is scikit-learn's `ColumnTransformer` (one transformer per column, in file order):
`SimpleImputer` then `StandardScaler` (numbers), `SimpleImputer` then `OneHotEncoder`
(categories), `MissingIndicator` (gaps), `TfidfVectorizer` then `TruncatedSVD` (text). Its learnt
statistics are recorded as JSON (the spec, below) and applied by `apply_table_spec`, pure numpy,
equal to the fitted pipeline's `transform` (a test shows it), so no pickle is ever loaded:

    {"version": 2, "standardize": bool, "na_values": [...], "columns": [
        {"name", "kind": "numeric", "fill": median, "mean", "scale", "indicator": bool},
        {"name", "kind": "categorical", "fill": level, "categories": [...], "indicator": bool},
        {"name", "kind": "text", "file", "sha256", "dims", "indicator": false}]}

A column's features: numeric `z = (v − mean) / scale` (or v unscaled); categorical one 0/1 per
level; then its indicator `name (missing)` when it has one; text `name[0..dims)`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from activebayes.data.csv_table import CsvTable, decimal_comma_at, shown
from activebayes.data.features import natural_sorted, one_hot
from activebayes.errors import DataError

SPEC_VERSION = 2
NA_VALUES = ("", "NA", "N/A", "NaN", "null", "?")
MISSING_MODES = ("impute", "drop", "error")
CATEGORICAL_MODES = ("auto", "error", "force")
KEY_NAMES = ("key", "id")
IDENTIFIER_MIN_VALUES = 20  # fewer values than this are never called an identifier
IDENTIFIER_DISTINCT = 0.9  # share of distinct values that makes a text column an identifier
MAX_LEVELS, MAX_LEVEL_SHARE = 50, 0.05  # a categorical column may have max(50, 5 % of rows) levels


@dataclass(frozen=True)
class TableOptions:
    """How `pool add` was asked to read a table (see the module docstring)."""

    label_column: str | None = None
    key_column: str | None = None
    features: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    text_columns: tuple[str, ...] = ()
    categorical: str = "error"
    missing: str = "error"
    na_values: tuple[str, ...] = ()
    find_key: bool = True  # without key_column, take a column named key or id (`key_column_of`)


@dataclass(frozen=True)
class ColumnPlan:
    """One feature column: `kind` numeric | categorical | text; `missing` [N] bool; `numbers`
    [N] float64 (NaN where missing) for a numeric column; `levels` of a categorical column."""

    name: str
    kind: str
    cells: list[str]
    missing: np.ndarray
    numbers: np.ndarray | None = None
    levels: list[str] | None = None


@dataclass(frozen=True)
class TablePlan:
    """A table's feature columns, its key and label columns, and notes for the import summary."""

    table: CsvTable
    options: TableOptions
    key_column: str | None
    columns: list[ColumnPlan]
    notes: list[str] = field(default_factory=list)

    def missing_counts(self) -> dict[str, int]:
        """{column: number of missing values}, for columns with any."""
        return {c.name: int(c.missing.sum()) for c in self.columns if c.missing.any()}

    def rows_with_gaps(self) -> np.ndarray:
        """[R] sorted row indices with at least one missing feature value."""
        if not self.columns:
            return np.zeros(0, dtype=np.int64)
        return np.flatnonzero(np.any([c.missing for c in self.columns], axis=0))


def key_column_of(header: Sequence[str], key_column: str | None = None, ignore: Sequence[str] = ()) -> str | None:
    """The key column: `key_column` when given, else the first column named `key`, else `id`
    (any case, not in `ignore`), else None (rows are keyed by their number)."""
    if key_column is not None:
        return key_column
    for wanted in KEY_NAMES:
        found = next((h for h in header if h.lower() == wanted and h not in ignore), None)
        if found is not None:
            return found
    return None


def missing_mask(cells: Sequence[str], na_values: Sequence[str] = ()) -> np.ndarray:
    """[N] bool: which cells are missing (empty, or in NA_VALUES + na_values, any case)."""
    tokens = {v.strip().casefold() for v in (*NA_VALUES, *na_values)}
    return np.fromiter((c.casefold() in tokens for c in cells), dtype=bool, count=len(cells))


def _check_options(table: CsvTable, options: TableOptions) -> None:
    where = f"data file {str(table.path)!r}"
    if options.missing not in MISSING_MODES:
        raise DataError(f"missing: expected one of {', '.join(MISSING_MODES)}, got {options.missing!r}")
    if options.categorical not in CATEGORICAL_MODES:
        raise DataError(f"categorical: expected one of {', '.join(CATEGORICAL_MODES)}, got {options.categorical!r}")
    named = [("label_column", [options.label_column]), ("key_column", [options.key_column]), ("features", options.features or ()),
             ("ignore", options.ignore), ("text_column", options.text_columns)]  # fmt: skip
    for what, names in named:
        for name in names:
            if name is not None and name not in table.header:
                raise DataError(f"{where}: {what} {name!r} is not a column; columns are {[shown(h) for h in table.header[:20]]}")
    for what, names in named[2:]:
        special = {options.label_column, options.key_column} & set(names)
        if special and what != "ignore":
            raise DataError(f"{where}: {what} names {sorted(special)[0]!r}, the label or key column, which is never a feature")


def plan_table(table: CsvTable, options: TableOptions) -> TablePlan:
    """The feature columns of `table` and their kinds; DataError (one line naming the column and
    the way out) for an identifier-like or too-many-level column, a gap under `missing="error"`,
    an infinity, a column mixing numbers and text, or a column with no values at all."""
    _check_options(table, options)
    key = key_column_of(table.header, options.key_column, options.ignore) if options.find_key else options.key_column
    special = {options.label_column, key} - {None}
    wanted = options.features if options.features is not None else table.header
    names = [h for h in table.header if h in wanted and h not in special and h not in options.ignore]
    if not names:
        raise DataError(f"data file {str(table.path)!r}: no feature columns besides the label/key columns")
    notes = []
    if key is not None and options.key_column is None:
        notes.append(f"using the column {key!r} as item keys (--key-column)")
    columns = [_plan_column(table, name, options, notes) for name in names]
    return TablePlan(table, options, key, columns, notes)


def _plan_column(table: CsvTable, name: str, options: TableOptions, notes: list[str]) -> ColumnPlan:
    path, n = str(table.path), len(table)
    cells = table.column(name)
    missing = missing_mask(cells, options.na_values)
    first_gap = int(np.argmax(missing))
    if options.missing == "error" and missing.any():
        raise DataError(
            f"{path!r} line {table.lines[first_gap]}: column {name!r} has no value ({shown(cells[first_gap])}); "
            "fill it in, or pass --missing impute (or drop)"
        )
    if missing.all():
        raise DataError(f"{path!r}: column {name!r} has no values (all {n} missing); leave it out with --ignore {name}")
    if name in options.text_columns:
        return ColumnPlan(name, "text", cells, missing)
    present = np.flatnonzero(~missing)
    numbers = np.full(n, np.nan)
    numeric = np.zeros(n, dtype=bool)
    for i in present:
        try:
            numbers[i] = float(cells[i])
            numeric[i] = True
        except ValueError:
            pass
    if numeric[present].all():
        bad = np.flatnonzero(numeric & ~np.isfinite(numbers))
        if bad.size:
            at = int(bad[0])
            raise DataError(f"{path!r} line {table.lines[at]}: a feature is infinite (column {name!r}: {shown(cells[at])}); give a finite number")
        values = numbers[present]
        if present.size == n and n >= IDENTIFIER_MIN_VALUES and (np.array_equal(values, np.arange(n)) or np.array_equal(values, np.arange(1, n + 1))):
            notes.append(f"column {name!r} counts the rows 1, 2, ...; it is used as a feature (--ignore {name} if it is a row number)")
        return ColumnPlan(name, "numeric", cells, missing, numbers=numbers)
    text_rows = present[~numeric[present]]
    comma = decimal_comma_at([cells[i] for i in present])
    if comma is not None and table.delimiter != ",":
        at = int(present[comma])
        raise DataError(
            f"{path!r} line {table.lines[at]}: column {name!r} holds {shown(cells[at])}, a number with a "
            "decimal comma; save the file with decimal points (or the column as text in quotes)"
        )
    at = int(text_rows[0])
    if options.categorical == "error":
        raise DataError(f"{path!r} line {table.lines[at]}: column {name!r} is not a number ({shown(cells[at])})")
    if numeric[present].any():
        num = int(present[numeric[present]][0])
        raise DataError(
            f"{path!r} line {table.lines[at]}: column {name!r} is not a number ({shown(cells[at])}) but line {table.lines[num]} holds "
            f"the number {shown(cells[num])} (a column is either numeric or categorical); correct that value, "
            "or pass --na-values if it marks a gap"
        )
    levels = natural_sorted([cells[i] for i in present])
    if options.categorical != "force":
        ways = f"pass --key-column {name} if it names the items, --text-column {name} if it is prose, or --ignore {name}"
        if present.size >= IDENTIFIER_MIN_VALUES and len(levels) >= IDENTIFIER_DISTINCT * present.size:
            raise DataError(
                f"{path!r}: column {name!r} looks like an identifier, not a feature ({len(levels)} different values in "
                f"{present.size} rows); {ways}"
            )
        limit = max(MAX_LEVELS, int(MAX_LEVEL_SHARE * n))
        if len(levels) > limit:
            raise DataError(
                f"{path!r}: column {name!r} has {len(levels)} categories, more than max({MAX_LEVELS}, 5 % of {n} rows) = {limit}, "
                f"so one-hot encoding it would add {len(levels)} features; {ways}, or --categorical force"
            )
    return ColumnPlan(name, "categorical", cells, missing, levels=levels)


def _object_matrix(plan: TablePlan) -> np.ndarray:
    """[N, M] object array for scikit-learn: floats (NaN missing) for numeric columns, text (NaN
    missing) for categorical ones, text ("" missing) for text columns."""
    out = np.empty((len(plan.table), len(plan.columns)), dtype=object)
    for j, c in enumerate(plan.columns):
        if c.kind == "numeric":
            out[:, j] = c.numbers
        else:
            cells = np.asarray(c.cells, dtype=object)
            cells[c.missing] = "" if c.kind == "text" else np.nan
            out[:, j] = cells
    return out


def build_pipeline(plan: TablePlan, *, standardize: bool = True, text_dims: int | None = None) -> Any:
    """The unfitted `ColumnTransformer` for `plan` (module docstring): one transformer per
    column in file order, each gap indicator right after its column."""
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import MissingIndicator, SimpleImputer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from activebayes.data.text_features import text_pipeline

    impute = plan.options.missing == "impute"
    parts: list[tuple[str, Any, Any]] = []
    for j, c in enumerate(plan.columns):
        if c.kind == "numeric":
            scale = StandardScaler() if standardize else "passthrough"
            imputer = SimpleImputer(strategy="median", keep_empty_features=True)
            parts.append((f"{j}:{c.name}", Pipeline([("impute", imputer), ("scale", scale)]), [j]))
        elif c.kind == "categorical":
            imputer = SimpleImputer(strategy="most_frequent", missing_values=np.nan, keep_empty_features=True)
            encoder = OneHotEncoder(categories=[c.levels], handle_unknown="error", sparse_output=False)
            parts.append((f"{j}:{c.name}", Pipeline([("impute", imputer), ("encode", encoder)]), [j]))
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
) -> dict[str, Any]:
    """The recorded spec (module docstring): the pipeline fitted on `rows` (the pool rows; the
    test split excluded). A text column's learnt vocabulary and projection go to a checksummed
    .npz in `text_folder` (required when there is one)."""
    from activebayes.data.text_features import save_text_model

    x = _object_matrix(plan)
    rows = np.asarray(rows, dtype=np.int64)
    if rows.size == 0:
        raise DataError(f"data file {str(plan.table.path)!r}: no rows to fit the features on")
    pipeline = build_pipeline(plan, standardize=standardize, text_dims=text_dims).fit(x[rows])
    fitted = dict(pipeline.named_transformers_)
    columns: list[dict[str, Any]] = []
    for j, c in enumerate(plan.columns):
        step = fitted[f"{j}:{c.name}"]
        entry: dict[str, Any] = {"name": c.name, "kind": c.kind, "indicator": f"{j}:{c.name} (missing)" in fitted}
        if c.kind == "numeric":
            entry["fill"] = float(step.named_steps["impute"].statistics_[0])
            scaler = step.named_steps["scale"]
            scaled = scaler != "passthrough"
            entry["mean"] = float(scaler.mean_[0]) if scaled else 0.0
            entry["scale"] = float(scaler.scale_[0]) if scaled else 1.0
        elif c.kind == "categorical":
            entry["fill"] = str(step.named_steps["impute"].statistics_[0])
            entry["categories"] = [str(v) for v in step.named_steps["encode"].categories_[0]]
        else:
            if text_folder is None:
                raise DataError(f"text column {c.name!r}: no folder to record its text model in")
            entry.update(save_text_model(step, Path(text_folder), plan.table.path, c.name))
        columns.append(entry)
    return {
        "version": SPEC_VERSION,
        "standardize": bool(standardize),
        "missing": plan.options.missing,
        "na_values": list(plan.options.na_values),
        "columns": columns,
    }


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


def apply_table_spec(table: CsvTable, spec: dict[str, Any], columns: list[dict[str, Any]] | None = None) -> tuple[np.ndarray, list[str]]:
    """(x [N, D] float32, D feature names): the recorded spec applied to every row of `table`
    (module docstring). A value the spec cannot take (text in a number column, an unseen
    category, a gap where none was recorded) is a DataError naming its line."""
    from activebayes.data.text_features import apply_text_model

    columns = columns if columns is not None else list(spec["columns"])
    tokens = spec.get("na_values", ())
    blocks: list[np.ndarray] = []
    names: list[str] = []
    for c in columns:
        name, kind = c["name"], c["kind"]
        if name not in table.header:
            raise DataError(f"data file {str(table.path)!r}: has no column {name!r}, which the recorded features use; import the file into a new project")
        cells = table.column(name)
        missing = missing_mask(cells, tokens)
        if missing.any() and c.get("fill") is None and kind != "text":
            at = int(np.argmax(missing))
            raise DataError(f"{str(table.path)!r} line {table.lines[at]}: column {name!r} has no value ({shown(cells[at])}); fill it in")
        if kind == "numeric":
            v = np.full(len(cells), float(c["fill"]) if c.get("fill") is not None else np.nan)
            for i in np.flatnonzero(~missing):
                try:
                    v[i] = float(cells[i])
                except ValueError:
                    raise DataError(f"{str(table.path)!r} line {table.lines[i]}: column {name!r} is not a number ({shown(cells[i])})") from None
            if not np.isfinite(v).all():
                at = int(np.argmax(~np.isfinite(v)))
                raise DataError(f"{str(table.path)!r} line {table.lines[at]}: a feature is NaN or infinite (column {name!r}: {shown(cells[at])}); give a finite number")
            blocks.append(((v - float(c["mean"])) / float(c["scale"]))[:, None])
            names.append(name)
        elif kind == "categorical":
            values = [c["fill"] if gap else v for v, gap in zip(cells, missing)]
            blocks.append(one_hot(values, c["categories"], column=name, path=table.path).astype(np.float64))
            names.extend(f"{name}={level}" for level in c["categories"])
        else:
            blocks.append(apply_text_model(c, ["" if gap else v for v, gap in zip(cells, missing)]))
            names.extend(f"{name}[{k}]" for k in range(blocks[-1].shape[1]))
        if c.get("indicator"):
            blocks.append(missing.astype(np.float64)[:, None])
            names.append(f"{name} (missing)")
    return np.concatenate(blocks, axis=1).astype(np.float32), names


def raw_cells(table: CsvTable, columns: list[dict[str, Any]], na_values: Sequence[str] = ()) -> np.ndarray:
    """[N, M] text of the M feature columns as a person should see them: as in the file, a
    missing value empty."""
    out = np.empty((len(table), len(columns)), dtype=object)
    for j, c in enumerate(columns):
        cells = np.asarray(table.column(c["name"]), dtype=object)
        cells[missing_mask(list(cells), na_values)] = ""
        out[:, j] = cells
    return out
