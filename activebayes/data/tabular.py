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
  (`parsed_columns.calendar_features`; `ColumnPlan.clock` when there are times);
- a time of day ("time") when every value present is a clock time without a date ("08:30",
  "7:15 PM"): (sin, cos) of the fraction of a day; a column with an hour over 23 ("95:10"), or
  named as durations (finish_time, lap; Time over values like "02:55:10", all under 6 hours),
  holds durations, numeric hours (`written` "duration"), and one with minutes and seconds with a
  fraction ("1:23.4") a stopwatch's times, numeric seconds (`written` "stopwatch"):
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
  code, 02134) or beyond a float's exact whole numbers (a 17-digit account id), unless `features`
  names it (`csv_columns.number_code`).

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
from typing import Any

import numpy as np

from activebayes.data.clock_columns import read_times
from activebayes.data.code_columns import codes_note, scale_levels, scale_note, written_as_codes
from activebayes.data.csv_table import ROW_NAMES, CsvTable, not_a_column, shown
from activebayes.data.features import is_number, natural_sorted
from activebayes.data.frequent_levels import (IDENTIFIER_MIN_VALUES, MAX_LEVELS, MIN_LEVEL_ROWS, PROSE_WORDS, frequent_levels, identifier_note, level_limit,
                                              looks_like_identifier, median_words, other_note, rare_note)
from activebayes.data.key_columns import (R_ROW_NAMES, ROW_INDEX_NAME, distinct_whole_numbers, identifier_key, key_column_of, no_key,
                                          numeric_identifier, numeric_identifier_note)
from activebayes.data.table_gaps import EXCEL_ERRORS, WRITTEN_GAPS, column_missing, merged_cells_note, note_excel_errors
from activebayes.data.parsed_columns import DATE_ORDERS, UNIT_PREFIX, accounting_note, magnitude_note, common_unit, date_order, percent_scale_note, measured_numbers, decimal_comma_numbers, surely_decimal_comma, has_times, iso_days, unit_numbers, written_days
from activebayes.errors import DataError

MISSING_MODES = ("impute", "drop", "error")
CATEGORICAL_MODES = ("auto", "error", "force")
MIXED_NUMBER_SHARE = 0.5  # a text column with fewer than this share of numbers is categorical; with more, refused unless codes
AMBIGUOUS_DATES_CHECKED = 10_000  # levels looked at to tell a categorical column of dates no day settles


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
    """One feature column: `kind` numeric | date | time | categorical | text; `missing` [N] bool;
    `numbers` [N] float64 (NaN where missing) for a numeric column (`written`: "units" for
    amounts written as text, "decimal comma" for 3,5, "duration" for hours written 95:10 or
    named a duration, "stopwatch" for seconds written 1:23.4), a
    time column (the fraction of a day since midnight) or a date column (days since 1970-01-01;
    `clock`: some values have a time; `written`: "dmy" or "mdy" for 31/12/2024 or 12/31/2024,
    None for ISO 8601); `levels` of a categorical column, and `other`: how many of its levels
    (rare ones of a many-level column: `frequent_levels`) share one "other" feature, 0 none."""

    name: str
    kind: str
    missing: np.ndarray
    numbers: np.ndarray | None = None
    levels: list[str] | None = None
    written: str | None = None
    clock: bool = False
    other: int = 0


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


def gap_values(options: TableOptions) -> tuple[str, ...]:
    """The gap markers a table is planned with besides NA_VALUES: the user's `na_values`,
    EXCEL_ERRORS and WRITTEN_GAPS (recorded in the spec as its "na_values", so a spec fitted
    before they were gaps is applied as it was fitted)."""
    return (*options.na_values, *(e for e in (*EXCEL_ERRORS, *WRITTEN_GAPS) if e not in options.na_values))


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
            column = _plan_column(table, name, options, notes, left_out)
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


class NotAFeature(DataError):
    """A column that is a key, free text or noise as it stands (`reason`), refused unless the user
    says otherwise; `plan_table` names every such column in one line."""

    def __init__(self, path: str, column: str, reason: str, ways: str, *, prose: bool = False) -> None:
        super().__init__(f"{path!r}: column {column!r} {reason}; {ways}")
        self.column, self.reason, self.prose = column, reason, prose

    def __reduce__(self) -> tuple:  # across processes, the plain DataError with its line
        return DataError, (str(self),)


def first_true(mask: np.ndarray) -> int:
    """The index of the first True in [N] bool `mask` (a row to name in a message)."""
    return int(np.argmax(mask))


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


def _ambiguous_dates(levels: list[str]) -> bool:
    """Whether every level is a date written day first or month first, and none says which."""
    readable = np.isfinite(written_days(levels, "dmy")) | np.isfinite(written_days(levels, "mdy"))
    return bool(readable.all()) and date_order(levels) == "either"


def _plan_column(table: CsvTable, name: str, options: TableOptions, notes: list[str], left_out: dict[str, str]) -> ColumnPlan | None:
    path, n, lines = str(table.path), len(table), table.lines
    missing = column_missing(table, name, gap_values(options))
    if options.missing == "error" and missing.any():
        at = first_true(missing)
        raise DataError(
            f"{path!r} line {lines[at]}: column {name!r} has no value ({shown(table.cell(at, name))}); "
            "fill it in, or pass --missing impute (or drop)"
        )
    if missing.all() and name in (options.features or ()):
        raise DataError(f"{path!r}: column {name!r} has no values (all {n} missing); leave it out of --features")
    if missing.all():
        notes.append(f"column {name!r} has no values (all {n} missing): left out")
        left_out[name] = "no values"
        return None
    note_excel_errors(table, name, notes, [g for g in WRITTEN_GAPS if g not in options.na_values])
    notes.extend(n for n in [merged_cells_note(table, name, missing)] if n)
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
            at = first_true(bad)
            raise DataError(f"{path!r} line {lines[at]}: a feature is infinite (column {name!r}: {shown(table.cell(at, name))}); give a finite number")
        values = numbers[present]
        if ROW_INDEX_NAME.match(name) and name not in (options.features or ()) and distinct_whole_numbers(values):
            notes.append(f"column {name!r} holds row numbers, as pandas (Unnamed: 0), R (X) and readr (...1) write an index read with a file "
                         "and saved again: left out (name it in --features to keep it)")  # fmt: skip
            left_out[name] = "a saved index"
            return None
        if name not in (options.features or ()) and numeric_identifier(name, values):
            notes.append(numeric_identifier_note(name, values))
            left_out[name] = f"looks like an identifier: {len(np.unique(values))} different whole numbers in {len(values)} rows"
            return None
        code = table.columns[name].code
        if code is not None and name not in (options.features or ()) and np.all(values == np.floor(values)):
            why = "a leading zero" if code[:1] == "0" else f"{len(code.lstrip('+-'))} digits, more than a float holds exactly"
            raise NotAFeature(
                path, name, f"holds codes written in digits, not quantities ({shown(code)}: {why})",
                f"pass --key-column {name} if it names the items, or --ignore {name} (name it in --features to use it as a number all the same)",
            )
        if present.all() and n >= IDENTIFIER_MIN_VALUES and (np.array_equal(values, np.arange(n)) or np.array_equal(values, np.arange(1, n + 1))):
            notes.append(f"column {name!r} counts the rows 1, 2, ...; it is used as a feature (--ignore {name} if it is a row number)")
        return ColumnPlan(name, "numeric", missing, numbers=np.where(missing, np.nan, numbers))
    text = present & ~numeric
    comma_level = np.asarray([*("," in t for t in texts), False])[codes] & np.isfinite(decimal_comma_numbers([*texts, ""])[codes])
    written = [texts[k] for k in np.unique(codes[comma_level & present]).tolist()]
    surely = table.delimiter == "," and (comma_level | numeric)[present].all() and any(map(surely_decimal_comma, written))
    if surely:  # as a regression target so written (`dataset.check_labels`): refused, never guessed
        raise DataError(f"{path!r}: column {name!r} is written with decimal commas ({shown(table.cell(first_true(comma_level & present), name))}) "
                        "in a file whose cells are separated by commas; save it separated by ';' or tabs (Google Sheets: "
                        "Download, Tab-separated values), as spreadsheets in comma-decimal locales do, or write the numbers with a point")  # fmt: skip
    if (comma_level & present).any() and table.delimiter != ",":
        spelled_codes, spellings = table.category_codes(name)
        european = decimal_comma_numbers(spellings)[spelled_codes]
        example = shown(table.cell(first_true(comma_level & present), name))
        if np.isfinite(european[present]).all():  # 3,5 and 1.234,5 in a ;-file
            notes.append(f"column {name!r} is written with decimal commas ({example}): read as numbers{accounting_note(spellings)}")
            return ColumnPlan(name, "numeric", missing, numbers=np.where(missing, np.nan, european), written="decimal comma")
        at = first_true(present & ~np.isfinite(european))
        raise DataError(
            f"{path!r} line {lines[at]}: column {name!r} is written with a decimal comma ({example}) but holds {shown(table.cell(at, name))}, "
            "not a number written so; correct it, or pass --na-values if it marks a gap"
        )
    written = _written_quantity(table, name, missing, numeric, notes)
    if written is not None:
        return written
    at = first_true(text)
    if options.categorical == "error":
        raise DataError(f"{path!r} line {lines[at]}: column {name!r} is not a number ({shown(table.cell(at, name))})")
    n_present, n_numbers = int(present.sum()), int((numeric & present).sum())
    mixed, coded, scale = None, False, False
    if n_numbers:
        num = first_true(numeric & present)
        mixed = DataError(
            f"{path!r} line {lines[at]}: column {name!r} is not a number ({shown(table.cell(at, name))}) but line {lines[num]} holds "
            f"the number {shown(table.cell(num, name))} ({n_numbers} of its {n_present} values are numbers; a column is either numeric "
            f"or categorical); correct the text, pass --na-values if it marks a gap, or --ignore {name} if the column is a code"
        )
        spellings = [texts[k] for k in np.unique(codes[text]).tolist()]
        mostly = n_numbers >= MIXED_NUMBER_SHARE * n_present
        coded = mostly and written_as_codes(spellings)  # ticket numbers, part numbers
        scale = mostly and not coded and scale_levels(numbers[finite & present], n_present)  # cylinders 3, 4, 6, 8 and 'rotary'
        if mostly and not (coded or scale):  # a typo or a gap marker in a numeric column
            raise mixed
        codes, texts = table.category_codes(name)  # mostly text: its numbers are categories too (drive: f, r, 4)
    levels = natural_sorted([texts[k] for k in np.unique(codes[present]).tolist()])
    number_levels = 0 if mixed is None else len(np.unique(codes[numeric & present]))  # a quantity's values, not names like 500 or 911
    if mixed is not None and not coded and options.categorical != "force" and number_levels > MAX_LEVELS:
        raise mixed
    if coded:
        notes.append(codes_note(name, n_numbers, n_present, spellings))
    elif scale:
        notes.append(scale_note(name, numbers[finite & present], spellings, int(text.sum())))
    elif mixed is not None:
        notes.append(f"column {name!r} mixes text and numbers ({n_numbers} of {n_present} values are numbers); its numbers are read as categories")
    either = f"its values are dates that read as well day-first as month-first ({shown(levels[0])}; no day is over 12)"
    either = either if _ambiguous_dates(levels[:AMBIGUOUS_DATES_CHECKED]) else None
    if options.categorical != "force":
        words = median_words(levels) if looks_like_identifier(len(levels), n_present) or len(levels) > level_limit(n) else 0
        if words >= PROSE_WORDS:  # prose, the features of a text pool: a decision for the user, not a column to drop or pool
            raise NotAFeature(path, name, f"looks like free text, not a category ({len(levels)} different values in {n_present} rows, "
                              f"{words:g} words in the median one)", f"pass --text-column {name} to read it as prose, or --ignore {name}", prose=True)  # fmt: skip
    if options.categorical != "force" and looks_like_identifier(len(levels), n_present):
        notes.append(identifier_note(name, len(levels), n_present, either))
        left_out[name] = f"looks like an identifier: {len(levels)} different values in {n_present} rows"
        return None
    if either is not None:
        notes.append(f"column {name!r}: {either}, so they are taken as categories; write them as YYYY-MM-DD to read them as dates")
    if options.categorical != "force" and len(levels) > level_limit(n):
        code_of = {t: k for k, t in enumerate(texts)}
        counts = np.bincount(codes[present], minlength=len(texts))[[code_of[v] for v in levels]]
        kept = frequent_levels(levels, counts, level_limit(n))
        if not kept:
            notes.append(rare_note(name, len(levels), n))
            left_out[name] = f"{len(levels)} categories, each on under {MIN_LEVEL_ROWS} rows"
            return None
        pooled = n_present - int(counts[np.isin(levels, kept)].sum())
        notes.append(other_note(name, len(levels), n, len(kept), pooled))
        return ColumnPlan(name, "categorical", missing, levels=kept, other=len(levels) - len(kept))
    return ColumnPlan(name, "categorical", missing, levels=levels)


def _written_quantity(table: CsvTable, name: str, missing: np.ndarray, numeric: np.ndarray, notes: list[str]) -> ColumnPlan | None:
    """Column `name` as amounts written with units, as dates, or as times (`clock_columns`), when every value present
    parses as one (`activebayes.data.parsed_columns`); DataError naming the first value that does
    not when at least half do (a typo, or a gap marker); else None."""
    codes, texts = table.text_codes(name)
    present = ~missing
    used = np.unique(codes[present & ~numeric])
    example = shown(texts[int(used[0])])
    amounts = unit_numbers(texts, magnitudes=None)
    days, order = iso_days(texts), "ymd"
    if np.isfinite(days[used]).mean() < 0.5:  # dates as spreadsheets write them (31/12/2024, 12/31/2024, 31.12.2024, 1-Mar-24), a few ISO ones among them
        order = date_order([texts[k] for k in used.tolist()]) or "ymd"
        if order == "either":  # never guessed: categories as before, with a word on it (`_plan_column`)
            return None
        if order == "mixed":
            dmy, mdy = (np.append(np.isfinite(written_days(texts, o)), False)[codes] for o in ("dmy", "mdy"))
            at_day, at_month = first_true(dmy & ~mdy), first_true(mdy & ~dmy)
            raise DataError(f"{str(table.path)!r}: column {name!r} holds dates written day first ({shown(table.cell(at_day, name))}, line "
                            f"{table.lines[at_day]}) and month first ({shown(table.cell(at_month, name))}, line {table.lines[at_month]}); "
                            "write them all one way, best as YYYY-MM-DD")  # fmt: skip
        days = written_days(texts, order)
    as_amount = numeric | np.isfinite(np.append(amounts, np.nan)[codes])
    as_date = ~numeric & np.isfinite(np.append(days, np.nan)[codes])
    for kind, parsed, unit_seen in (("amounts", as_amount, (as_amount & ~numeric & present).any()), ("dates", as_date, True)):
        share = parsed[present].mean()
        if unit_seen and 0.5 <= share < 1:
            at = first_true(present & ~parsed)
            stray = table.cell(at, name)
            shown_kind = f"{kind} ({shown(table.cell(first_true(present & parsed & ~numeric), name))})"
            if kind == "dates" and any(np.isfinite(written_days([stray], o))[0] for o in DATE_ORDERS):  # a date, written another way
                raise DataError(f"{str(table.path)!r} line {table.lines[at]}: column {name!r} holds {shown_kind} but also {shown(stray)}, "
                                "a date written another way; write them all one way, best as YYYY-MM-DD")  # fmt: skip
            raise DataError(
                f"{str(table.path)!r} line {table.lines[at]}: column {name!r} holds {shown_kind} but also {shown(stray)}, "
                f"which is not one ({int((present & ~parsed).sum())} of {int(present.sum())} values); correct it, or pass --na-values if it marks a gap"
            )
    unit = common_unit([texts[k] for k in used.tolist()]) if (present & ~numeric).sum() >= 0.5 * present.sum() else None
    if unit is not None:  # 59 yrs, 32.1 kg/m2: one unit, on most values (not 12.5o, a typo among numbers)
        numbers = table.numbers(name).copy()
        numbers[codes >= 0] = measured_numbers(texts, unit)[codes[codes >= 0]]
        notes.append(f"column {name!r} holds numbers with the unit {unit!r} ({example}): read as numbers")
        return ColumnPlan(name, "numeric", missing, numbers=np.where(missing, np.nan, numbers), written=f"{UNIT_PREFIX}{unit}")
    if np.isfinite(amounts[used]).all():
        numbers = table.numbers(name).copy()
        numbers[codes >= 0] = amounts[codes[codes >= 0]]
        written = [texts[k] for k in used.tolist()]
        notes.append(f"column {name!r} holds amounts written as text ({example}): read as numbers, without currency signs, % and thousands "
                     f"separators{accounting_note(written)}{magnitude_note(written)}")  # fmt: skip
        percent = np.append(np.char.find(np.asarray(texts, dtype=str), "%") >= 0, False)[codes] & present
        notes.extend(n for n in [percent_scale_note(name, [texts[k] for k in used.tolist() if "%" in texts[k]], numbers[present & ~percent])] if n)
        return ColumnPlan(name, "numeric", missing, numbers=np.where(missing, np.nan, numbers), written="units")
    if not numeric[~missing].any() and np.isfinite(days[used]).all():
        clock = has_times([texts[k] for k in used.tolist()])
        parts = "season, weekday and time of day" if clock else "season and weekday"
        written = {"dmy": ", day first", "mdy": ", month first"}.get(order, "")
        notes.append(f"column {name!r} holds dates ({example}{written}): read as days since 1970-01-01, with the {parts}")
        return ColumnPlan(name, "date", missing, numbers=np.where(missing, np.nan, days[codes]), clock=clock, written=None if order == "ymd" else order)
    times = read_times(table, name, missing, numeric)  # 08:30, 7:15 PM: the time of day; 95:10: hours
    if times is not None:
        notes.append(times.note)
        return ColumnPlan(name, times.kind, missing, numbers=times.values, written=times.written)
    return None
