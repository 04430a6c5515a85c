"""A csv table as a network's features: which columns, what kind each is, what to do with gaps,
and a scikit-learn pipeline fitted once and recorded as data.

Three steps, each a function:

    plan = plan_table(read_csv_table(path), TableOptions(label_column="y", missing="impute"))
    spec = fit_table_spec(plan, pool_rows, standardize=True)   # table_spec: at `pool add`, on the pool rows
    x, names = apply_table_spec(plan.table, spec)               # table_spec: at every load, [N, D] float32

Columns. The key column is `key_column`, else the first column named `key`, else `id` (any case),
else a first column named rownames or row.names (R's row names), else unnamed row names, else none
(items are keyed by row number): `activebayes.data.key_columns.key_column_of`. A key found by its name that repeats a value or
has an empty cell is a group's id (a subject measured on several rows): the rows are keyed by their
number and the column left out, with a note. The label and key are never features;
`features` keeps only the columns it names and `ignore` leaves columns out. A feature column is

- numeric when every value that is present parses as a number (an infinity is refused), as an
  amount written with a currency sign, a % or thousands separators ("$1,578.50", "53%":
  `activebayes.data.parsed_columns.unit_numbers`), or, in a file not delimited by commas, with
  decimal commas ("3,5", "1.234,5": `decimal_comma_numbers`), as `ColumnPlan.written` says
  (with `pool add --log-skewed`, a heavy-tailed one of counts or amounts is read as log(1 + x):
  `activebayes.data.skewed_columns`, decided on the pool rows and recorded in the spec);
- a date when every value present is an ISO 8601 date, with or without a time ("2024-03-01",
  "2024-03-01 14:30"), or a date written day first or month first ("31/12/2024", "12/31/2024
  2:30 PM": `date_order` settles which from a day over 12; a column where none is stays text,
  categories with a note, or refused with the way to write them as ISO dates), or with the
  month's name ("1-Mar-24", "Mar 1, 2024": `activebayes.data.month_dates`): days since 1970-01-01, and the season, weekday (and time of day) on the circle
  (`written_dates.calendar_features`; `ColumnPlan.clock` when there are times);
- a time of day ("time") when every value present is a clock time without a date ("08:30",
  "7:15 PM"): (sin, cos) of the fraction of a day; a column with an hour over 23 ("95:10"), or
  named as durations (finish_time, lap; Time over values like "02:55:10", all under 6 hours),
  holds durations, numeric hours (`written` "duration"), and one with minutes and seconds with a
  fraction ("1:23.4") a stopwatch's times, numeric seconds (`written` "stopwatch"), and one of
  durations written with units ("1h 30m", "45m", "90 min") numeric hours too:
  `activebayes.data.clock_columns`;
- text to be read as prose when named in `text_columns` (`activebayes.data.text_features`);
- otherwise categorical: one-hot encoded over its levels in natural order ("auto"), or refused
  ("error"). Numbers among its values are levels as spelled (a drive column of f, r and 4) when
  they are fewer than half the values present; a mostly numeric column with some text is refused
  (a typo, or a gap marker for `na_values`) unless its text values are codes of letters and
  digits ('PC 17599' among '113803') or its numbers are a scale's few whole-number levels
  (cylinders 3 to 8 and 'rotary': `activebayes.data.code_columns`), read as categories, and so
  is a mostly-text column whose numbers make over MAX_LEVELS levels. Unless `categorical="force"` (every level encoded), a text column of prose (one that
  would be left out or pooled below, whose median value has PROSE_WORDS words or more) is refused
  in one line naming `text_columns` as the way in; a text column that looks like an
  identifier (at least 20 values, 90 % of them distinct: a key or noise, not a
  category) is left out with a note, and one with more levels than max(50, 5 % of the rows) is
  encoded on its frequent levels, the rare ones sharing one "other" feature, with a note
  (`activebayes.data.frequent_levels`, which gives the rule and its reasons). A numeric column
  whose name ends in the word id or key (customer_id, OrderID) and whose values are whole
  numbers, 90 % of them distinct, is the key when no other is given or found and it is unique
  (`activebayes.data.key_columns.identifier_key`), else left out with a note, unless `features`
  names it: its numbers order the rows, they are not a quantity. So is one of such numbers under
  the name of one of the rows' things or an identifier's number (subject, Student, idno, seqn,
  patnr, caseid), or under a number word (no, nr, num, number, order, obs) when they count up
  down the file (`key_columns.numeric_identifier`); but it never keys the items unasked. A column of distinct whole numbers named as pandas (Unnamed: 0), R (X), readr (...1)
  or reset_index (index, level_0) name a saved index is left out with a note, unless `features`
  names it: row numbers, which order the rows. So, too, is a column of whole numbers written as codes: with a leading zero (a zip
  code, 02134) or beyond a float's exact whole numbers written as digits alone (a 17-digit account
  id; 6.02214E+23 and 1e20 are quantities), unless `features`
  names it (`csv_columns.number_code`). A column of long numbers as Excel shows them, their other
  digits lost ("1.23457E+15": `csv_columns.excel_display`), is left out with a note saying how to
  save them whole, unless `features` names it; as the key it is refused, and never guessed as one.

Gaps: `activebayes.data.table_gaps` (what is missing); `missing="impute"`: the median of a number
column, the most frequent level of a categorical one, and a 0/1 indicator feature after every
column with a gap anywhere in the file; `"drop"`: rows with a gap are no items
(`TablePlan.rows_with_gaps`); `"error"`: refused.

The recorded spec (the fitted scikit-learn pipeline as JSON) and its application at every load
are `activebayes.data.table_spec`'s.

Memory. The table is read column by column (`activebayes.data.csv_table`: numbers as float64,
other cells as codes into their distinct texts) and each transformer is fitted on its own column
alone, as the ColumnTransformer would fit it, so no [N, M] matrix of Python objects is built.
The features [N, D] float32 are made once, each column's block written into them and a
categorical column's one-hot set in place (`table_spec.apply_table_spec`), never assembled from
[N, k] copies.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from activebayes.data.column_plan import ColumnPlan, NotAFeature, first_true, gap_values, plan_column  # noqa: F401 (ColumnPlan, first_true, gap_values re-exported)
from activebayes.data.csv_columns import EXCEL_TEXT_WAY, excel_shortened
from activebayes.data.csv_table import ROW_NAMES, CsvTable, not_a_column, shown
from activebayes.data.key_columns import R_ROW_NAMES, identifier_key, key_column_of, no_key
from activebayes.errors import DataError

MISSING_MODES = ("impute", "drop", "error")
CATEGORICAL_MODES = ("auto", "error", "force")


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
class TablePlan:
    """A table's feature columns, its key and label columns, and notes for the import summary."""

    table: CsvTable
    options: TableOptions
    key_column: str | None
    columns: list[ColumnPlan]
    notes: list[str] = field(default_factory=list)
    left_out: dict[str, str] = field(default_factory=dict)  # column -> why it is no feature ("no values", "a saved index")

    def missing_counts(self) -> dict[str, int]:
        """{column: number of missing values}, for columns with any."""
        return {c.name: int(c.missing.sum()) for c in self.columns if c.missing.any()}

    def rows_with_gaps(self) -> np.ndarray:
        """[R] sorted row indices with at least one missing feature value."""
        if not self.columns:
            return np.zeros(0, dtype=np.int64)
        return np.flatnonzero(np.any([c.missing for c in self.columns], axis=0))


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
                raise not_a_column(where, what, name, table.header)
    for what, names in named[2:]:
        special = {options.label_column, options.key_column} & set(names)
        if special and what != "ignore":
            raise DataError(f"{where}: {what} names {sorted(special)[0]!r}, the label or key column, which is never a feature")


def plan_table(table: CsvTable, options: TableOptions) -> TablePlan:
    """The feature columns of `table` and their kinds; DataError (one line naming the column and
    the way out) for a gap under `missing="error"`, an infinity, or a column mixing numbers and
    text. A column with no values is left out with a note, unless `features` names it; an
    identifier-like column too (text, or whole numbers under a name like customer_id, unless
    it keys the items: `identifier_key`),
    and a many-level one is encoded on its frequent levels with a note, unless
    `categorical="force"`; one
    with one value in every row gets a note; so does a named key found by `key_column_of` that
    is not unique, left out (module docstring)."""
    _check_options(table, options)
    key = key_column_of(table.header, options.key_column, options.ignore, table.row_names) if options.find_key else options.key_column
    notes = [_encoding_note(table)] if table.fallback is not None else []
    left_out: dict[str, str] = {}
    # a guessed key named so (id, key, rownames) that repeats is a group's id, as in long tables of subjects measured
    # again; unnamed row names that repeat are refused at load (`loaders._csv_keys`) with their way out, as before
    if key is not None and (shortened := table.columns[key].shortened) is not None:  # 1.23457E+15: ids Excel cut short
        raise DataError(f"{str(table.path)!r}: the key {excel_shortened(key, shortened)}, so they cannot name the items; {EXCEL_TEXT_WAY}")
    guessed = key is not None and options.key_column is None and key not in (options.label_column, ROW_NAMES)
    if guessed and (repeated := no_key(table, key)):
        kept = key in (options.features or ())
        fate = "a feature, as --features asks" if kept else "left out (a group's id, not a quantity; name it in --features to keep it)"
        notes.append(f"column {key!r} {repeated}, so it does not name the items: they are keyed by their row number "
                     f"(--key-column names another key); {key!r} is {fate}")  # fmt: skip
        if not kept:
            left_out[key] = "not unique, so no key"
        key = key_column_of(table.header, None, (*options.ignore, key), table.row_names)  # R's row names beside a subject id
        key = key if key in R_ROW_NAMES + (ROW_NAMES,) and not no_key(table, key) else None
    if key is None and options.find_key and options.key_column is None:  # Kaggle's PassengerId, a customer_id
        unnamed = {options.label_column, *options.ignore, *left_out, *(options.features or ()), *options.text_columns}
        key = identifier_key(table, [h for h in table.header if h and h not in unnamed], gap_values(options))
    special = {options.label_column, key, *left_out} - {None}
    wanted = options.features if options.features is not None else table.header[table.row_names :]  # row names are no feature
    names = [h for h in table.header if h and h in wanted and h not in special and h not in options.ignore]
    if not names:
        raise DataError(f"data file {str(table.path)!r}: no feature columns besides the label/key columns ({', '.join(repr(h) for h in table.header if h in special)}); "
                        "add the columns that describe each item, or name a column of prose with --text-column")  # fmt: skip
    if "" in table.header:  # read_csv_table refuses one with values
        notes.append(f"left out {table.header.count('')} empty column(s) without a name (separators at the start or end of the lines)")
    if table.row_names:
        notes.append(_row_names_note(table, key, options))
    elif key is not None and options.key_column is None:
        notes.append(f"using the column {key!r} as item keys (--key-column)")
    columns, refused = [], []
    for name in names:
        try:
            column = plan_column(table, name, options, notes, left_out)
        except NotAFeature as exc:
            refused.append(exc)
            continue
        one = _one_value(table, column)
        if one is not None and name not in (options.features or ()):
            notes.append(f"column {name!r} holds {one} in every row: it tells no rows apart (--ignore {name} leaves it out)")
        if column is not None:
            columns.append(column)
    if len(refused) == 1:
        raise refused[0]
    if refused:
        reasons = "; ".join(f"{e.column!r} {e.reason}" for e in refused)
        prose = " ".join(f"--text-column {e.column}" for e in refused if e.prose)
        leave_out = " ".join(f"--ignore {e.column}" for e in refused if not e.prose)
        ways = [f"read the free text with {prose}"] if prose else []
        ways += [f"leave {'the others' if prose else 'them'} out with {leave_out}"] if leave_out else []
        raise DataError(f"{str(table.path)!r}: {len(refused)} columns are not features as they stand: {reasons}; {'; '.join(ways)}"
                        + (", take one as --key-column, or name it in --features to use it as a number" if leave_out else ""))  # fmt: skip
    if not columns:
        why = "; ".join(f"{name!r} {reason}" for name, reason in left_out.items())
        raise DataError(f"data file {str(table.path)!r}: no feature columns besides the label/key columns (left out: {why}); "
                        "name the ones to use with --features, or see the ways in the notes")  # fmt: skip
    return TablePlan(table, options, key, columns, notes, left_out)


def _one_value(table: CsvTable, column: ColumnPlan | None) -> str | None:
    """The value, quoted, of a column that holds the same one in every row (no gaps, 2 rows or
    more); else None."""
    if column is None or column.kind == "text" or column.missing.any() or len(table) < 2:
        return None
    if column.kind == "categorical":
        return shown(column.levels[0]) if len(column.levels) == 1 and not column.other else None
    return shown(table.cell(0, column.name)) if np.all(column.numbers == column.numbers[0]) else None


def _row_names_note(table: CsvTable, key: str | None, options: TableOptions) -> str:
    """What became of a table's row names (a first column without a name: `named_header`)."""
    what = f"the first column has no name: row names, as R's write.csv and pandas' to_csv write them, called {ROW_NAMES!r}"
    if key == ROW_NAMES:
        return f"{what}; they are the item keys"
    if ROW_NAMES in (options.features or ()):
        return f"{what}; a feature, as --features asks"
    return f"{what}; left out"


def _encoding_note(table: CsvTable) -> str:
    """The note for a file read as Windows-1252, quoting the first cell that is not ASCII."""
    where = table.fallback
    return (f"{str(table.path)!r} is not UTF-8: read as Windows-1252 (Excel's 'CSV'); line {where.line} holds "
            f"{shown(where.example)} (if that reads wrong, save the file as 'CSV UTF-8')")  # fmt: skip
