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
  ("error"). Numbers among its values are levels as spelled (a drive column of f, r and 4) when
  they are fewer than half the values present; a mostly numeric column with some text is refused
  (a typo, or a gap marker for `na_values`), and so is one whose numbers make over MAX_LEVELS
  levels. A column that looks like an identifier (at least 20 values, 90 % of them distinct)
  or has more levels than max(50, 5 % of the rows) is refused in one line naming it, unless
  `categorical="force"`; it is a key, free text or noise, not a category. So is a numeric column
  whose name ends in the word id or key (customer_id, OrderID) and whose values are whole numbers,
  90 % of them distinct, unless `features` names it: its numbers order the rows, they are not a
  quantity.

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

Memory. The table is read column by column (`activebayes.data.csv_table`: numbers as float64,
other cells as codes into their distinct texts) and each transformer is fitted on its own column
alone, as the ColumnTransformer would fit it, so no [N, M] matrix of Python objects is built.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from activebayes.data.csv_table import CsvTable, decimal_comma_at, finite_or_nan, shown
from activebayes.data.features import is_number, natural_sorted, one_hot_codes, unseen_category
from activebayes.errors import DataError

SPEC_VERSION = 2
NA_VALUES = ("", "NA", "N/A", "NaN", "null", "?")
MISSING_MODES = ("impute", "drop", "error")
CATEGORICAL_MODES = ("auto", "error", "force")
KEY_NAMES = ("key", "id")
IDENTIFIER_MIN_VALUES = 20  # fewer values than this are never called an identifier
IDENTIFIER_DISTINCT = 0.9  # share of distinct values that makes a text column an identifier
IDENTIFIER_WORDS = ("id", "key", "uuid", "guid")  # a numeric column whose name ends in one of these may be an identifier
MAX_LEVELS, MAX_LEVEL_SHARE = 50, 0.05  # a categorical column may have max(50, 5 % of rows) levels
MIXED_NUMBER_SHARE = 0.5  # a text column with fewer than this share of numbers is categorical; with more, refused


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


def _tokens(na_values: Sequence[str]) -> set[str]:
    return {v.strip().casefold() for v in (*NA_VALUES, *na_values)}


def missing_mask(cells: Sequence[str], na_values: Sequence[str] = ()) -> np.ndarray:
    """[N] bool: which cells are missing (empty, or in NA_VALUES + na_values, any case)."""
    tokens = _tokens(na_values)
    return np.fromiter((c.casefold() in tokens for c in cells), dtype=bool, count=len(cells))


def column_missing(table: CsvTable, name: str, na_values: Sequence[str] = ()) -> np.ndarray:
    """[N] bool: `missing_mask` of column `name`, decided once per distinct text (a number is
    missing only when an na value spells it exactly, e.g. "-999")."""
    col = table.columns[name]
    if col.cells is not None:
        return missing_mask(col.cells, na_values)
    tokens = _tokens(na_values)
    out = np.zeros(len(table), dtype=bool)
    if col.codes is not None:
        out = np.asarray([t.casefold() in tokens for t in col.texts] + [False])[col.codes]  # code -1: a number
    numeric_tokens = {finite_or_nan(t) for t in tokens if np.isfinite(finite_or_nan(t))}
    for value in numeric_tokens if col.numbers is not None else ():
        for i in np.flatnonzero(col.numbers == value).tolist():
            out[i] = table.cell(i, name).casefold() in tokens
    return out


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


def names_an_identifier(name: str) -> bool:
    """Whether a column's name ends in the word id, key, uuid or guid (customer_id, CustomerID,
    userId, order-key; not paid or valid)."""
    words = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", name)
    return bool(words) and words[-1].lower() in IDENTIFIER_WORDS


def _distinct_whole_numbers(values: np.ndarray) -> bool:
    """At least IDENTIFIER_MIN_VALUES present values, all whole numbers, IDENTIFIER_DISTINCT of them distinct."""
    return (len(values) >= IDENTIFIER_MIN_VALUES and bool(np.all(values == np.round(values)))
            and len(np.unique(values)) >= IDENTIFIER_DISTINCT * len(values))  # fmt: skip


def _first(mask: np.ndarray) -> int:
    return int(np.argmax(mask))


def _plan_column(table: CsvTable, name: str, options: TableOptions, notes: list[str]) -> ColumnPlan:
    path, n, lines = str(table.path), len(table), table.lines
    missing = column_missing(table, name, options.na_values)
    if options.missing == "error" and missing.any():
        at = _first(missing)
        raise DataError(
            f"{path!r} line {lines[at]}: column {name!r} has no value ({shown(table.cell(at, name))}); "
            "fill it in, or pass --missing impute (or drop)"
        )
    if missing.all():
        raise DataError(f"{path!r}: column {name!r} has no values (all {n} missing); leave it out with --ignore {name}")
    if name in options.text_columns:
        return ColumnPlan(name, "text", missing)
    present = ~missing
    numbers = table.numbers(name)
    finite = np.isfinite(numbers)
    codes, texts = table.text_codes(name)
    spelled_number = np.asarray([is_number(t) for t in texts] + [False])[codes]  # inf, -nan: numbers, not finite
    numeric = finite | spelled_number
    if numeric[present].all():
        bad = spelled_number & present
        if bad.any():
            at = _first(bad)
            raise DataError(f"{path!r} line {lines[at]}: a feature is infinite (column {name!r}: {shown(table.cell(at, name))}); give a finite number")
        values = numbers[present]
        if names_an_identifier(name) and name not in (options.features or ()) and _distinct_whole_numbers(values):
            raise DataError(
                f"{path!r}: column {name!r} looks like an identifier, not a feature ({len(np.unique(values))} different whole "
                f"numbers in {len(values)} rows); pass --key-column {name} if it names the items, or --ignore {name} "
                f"(name it in --features to use it as a number all the same)"
            )
        if present.all() and n >= IDENTIFIER_MIN_VALUES and (np.array_equal(values, np.arange(n)) or np.array_equal(values, np.arange(1, n + 1))):
            notes.append(f"column {name!r} counts the rows 1, 2, ...; it is used as a feature (--ignore {name} if it is a row number)")
        return ColumnPlan(name, "numeric", missing, numbers=np.where(missing, np.nan, numbers))
    text = present & ~numeric
    comma_level = np.asarray([decimal_comma_at([t]) is not None for t in texts] + [False])[codes]
    if (comma_level & present).any() and table.delimiter != ",":
        at = _first(comma_level & present)
        raise DataError(
            f"{path!r} line {lines[at]}: column {name!r} holds {shown(table.cell(at, name))}, a number with a "
            "decimal comma; save the file with decimal points (or the column as text in quotes)"
        )
    at = _first(text)
    if options.categorical == "error":
        raise DataError(f"{path!r} line {lines[at]}: column {name!r} is not a number ({shown(table.cell(at, name))})")
    n_present, n_numbers = int(present.sum()), int((numeric & present).sum())
    mixed = None
    if n_numbers:
        num = _first(numeric & present)
        mixed = DataError(
            f"{path!r} line {lines[at]}: column {name!r} is not a number ({shown(table.cell(at, name))}) but line {lines[num]} holds "
            f"the number {shown(table.cell(num, name))} ({n_numbers} of its {n_present} values are numbers; a column is either numeric "
            "or categorical); correct the text, or pass --na-values if it marks a gap"
        )
        if n_numbers >= MIXED_NUMBER_SHARE * n_present:  # mostly numbers: a typo or a gap marker in a numeric column
            raise mixed
        codes, texts = table.category_codes(name)  # mostly text: its numbers are categories too (drive: f, r, 4)
    levels = natural_sorted([texts[k] for k in np.unique(codes[present]).tolist()])
    if mixed is not None and options.categorical != "force" and len(levels) > MAX_LEVELS:
        raise mixed
    if mixed is not None:
        notes.append(f"column {name!r} mixes text and numbers ({n_numbers} of {n_present} values are numbers); its numbers are read as categories")
    if options.categorical != "force":
        ways = f"pass --key-column {name} if it names the items, --text-column {name} if it is prose, or --ignore {name}"
        if n_present >= IDENTIFIER_MIN_VALUES and len(levels) >= IDENTIFIER_DISTINCT * n_present:
            raise DataError(
                f"{path!r}: column {name!r} looks like an identifier, not a feature ({len(levels)} different values in "
                f"{n_present} rows); {ways}"
            )
        limit = max(MAX_LEVELS, int(MAX_LEVEL_SHARE * n))
        if len(levels) > limit:
            raise DataError(
                f"{path!r}: column {name!r} has {len(levels)} categories, more than max({MAX_LEVELS}, 5 % of {n} rows) = {limit}, "
                f"so one-hot encoding it would add {len(levels)} features; {ways}, or --categorical force"
            )
    return ColumnPlan(name, "categorical", missing, levels=levels)


def _column_input(plan: TablePlan, c: ColumnPlan, rows: np.ndarray | None = None) -> np.ndarray:
    """Column `c` of `rows` (all when None) as scikit-learn takes it: numbers [R, 1] float64 (NaN
    missing), a categorical column's text [R, 1] object (NaN missing), a text column [R] object
    ("" missing)."""
    take = slice(None) if rows is None else rows
    if c.kind == "numeric":
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
    test split excluded), one column at a time (each transformer of the ColumnTransformer sees
    only its own column, so this is its fit without the [N, M] object matrix). A text column's
    learnt vocabulary and projection go to a checksummed .npz in `text_folder` (required when
    there is one)."""
    from sklearn.base import clone

    from activebayes.data.text_features import save_text_model

    rows = np.asarray(rows, dtype=np.int64)
    if rows.size == 0:
        raise DataError(f"data file {str(plan.table.path)!r}: no rows to fit the features on")
    fitted: dict[str, Any] = {}
    for part, transformer, where in build_pipeline(plan, standardize=standardize, text_dims=text_dims).transformers:
        c = plan.columns[where if isinstance(where, int) else where[0]]
        fitted[part] = None if part.endswith(" (missing)") else clone(transformer).fit(_column_input(plan, c, rows))  # an indicator learns nothing
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


def _numeric_feature(table: CsvTable, c: dict[str, Any], missing: np.ndarray) -> np.ndarray:
    """[N] float64 z = (v − mean) / scale of a numeric column, gaps filled; DataError naming the
    line of a text or a non-finite number."""
    name, path = c["name"], str(table.path)
    codes, texts = table.text_codes(name)
    unfilled = (codes >= 0) & ~missing
    if unfilled.any():
        spelled = np.asarray([is_number(t) for t in texts] + [False])[codes]
        if (unfilled & ~spelled).any():
            at = _first(unfilled & ~spelled)
            raise DataError(f"{path!r} line {table.lines[at]}: column {name!r} is not a number ({shown(table.cell(at, name))})")
        at = _first(unfilled)
        raise DataError(f"{path!r} line {table.lines[at]}: a feature is NaN or infinite (column {name!r}: {shown(table.cell(at, name))}); give a finite number")
    v = table.numbers(name).copy()
    v[missing] = float(c["fill"]) if c.get("fill") is not None else np.nan
    return (v - float(c["mean"])) / float(c["scale"])


def _category_indices(table: CsvTable, c: dict[str, Any], missing: np.ndarray) -> np.ndarray:
    """[N] the index in c["categories"] of each cell (a gap: of c["fill"]); DataError naming the
    row of a value outside the recorded categories."""
    name = c["name"]
    codes, texts = table.category_codes(name)  # numbers in a categorical column: by their own spelling
    values = [*texts, c["fill"]]
    index = {v: i for i, v in enumerate(c["categories"])}
    picked = np.where(missing, len(texts), codes)
    out = np.asarray([index.get(v, -1) for v in values], dtype=np.int64)[picked]
    if (out < 0).any():
        at = _first(out < 0)
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
    blocks: list[np.ndarray] = []
    names: list[str] = []
    for c in columns:
        name, kind = c["name"], c["kind"]
        if name not in table.header:
            raise DataError(f"data file {str(table.path)!r}: has no column {name!r}, which the recorded features use; import the file into a new project")
        missing = column_missing(table, name, tokens)
        if missing.any() and c.get("fill") is None and kind != "text":
            at = _first(missing)
            raise DataError(f"{str(table.path)!r} line {table.lines[at]}: column {name!r} has no value ({shown(table.cell(at, name))}); fill it in")
        if kind == "numeric":
            blocks.append(_numeric_feature(table, c, missing).astype(np.float32)[:, None])
            names.append(name)
        elif kind == "categorical":
            blocks.append(one_hot_codes(_category_indices(table, c, missing), len(c["categories"])))
            names.extend(f"{name}={level}" for level in c["categories"])
        else:
            cells = table.column(name)
            blocks.append(apply_text_model(c, ["" if gap else v for v, gap in zip(cells, missing)]).astype(np.float32))
            names.extend(f"{name}[{k}]" for k in range(blocks[-1].shape[1]))
        if c.get("indicator"):
            blocks.append(missing.astype(np.float32)[:, None])
            names.append(f"{name} (missing)")
    return (np.concatenate(blocks, axis=1) if blocks else np.zeros((n, 0), dtype=np.float32)), names


def raw_cells(table: CsvTable, columns: list[dict[str, Any]], na_values: Sequence[str] = ()) -> Any:
    """[N, M] text of the M feature columns as a person should see them: as in the file, a
    missing value empty (read from the file row by row when asked for:
    `activebayes.data.table_rows.RawCells`)."""
    from activebayes.data.table_rows import RawCells

    positions = [table.header.index(c["name"]) for c in columns]
    return RawCells(table.path, table.offsets, table.delimiter, positions, len(table), na_values)
