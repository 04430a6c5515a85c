"""One column of a csv table as a feature (`plan_column`): its kind (numeric, date, time, text
or categorical) and how its values are written, or why it is left out or refused, by the rules
`activebayes.data.tabular`'s docstring writes out. `ColumnPlan` is the decision, with the
column's parsed values [N] or its levels; `tabular.plan_table` gathers one for each feature column.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from activebayes.data.clock_columns import read_spelled_durations, read_times
from activebayes.data.code_columns import codes_note, scale_levels, scale_note, written_as_codes
from activebayes.data.csv_columns import EXCEL_TEXT_WAY, excel_shortened
from activebayes.data.csv_table import CsvTable, shown
from activebayes.data.features import is_number, natural_sorted
from activebayes.data.frequent_levels import (IDENTIFIER_MIN_VALUES, MAX_LEVELS, MIN_LEVEL_ROWS, PROSE_WORDS, frequent_levels, identifier_note, level_limit,
                                              looks_like_identifier, median_words, other_note, rare_note)
from activebayes.data.key_columns import ROW_INDEX_NAME, distinct_whole_numbers, numeric_identifier, numeric_identifier_note
from activebayes.data.table_gaps import EXCEL_ERRORS, WRITTEN_GAPS, column_missing, merged_cells_note, note_excel_errors
from activebayes.data.parsed_columns import DATE_ORDERS, UNIT_PREFIX, accounting_note, magnitude_note, common_unit, date_order, percent_scale_note, measured_numbers, decimal_comma_numbers, surely_decimal_comma, has_times, iso_days, unit_numbers, written_days
from activebayes.errors import DataError

if TYPE_CHECKING:
    from activebayes.data.tabular import TableOptions

MIXED_NUMBER_SHARE = 0.5  # a text column with fewer than this share of numbers is categorical; with more, refused unless codes
AMBIGUOUS_DATES_CHECKED = 10_000  # levels looked at to tell a categorical column of dates no day settles


@dataclass(frozen=True)
class ColumnPlan:
    """One feature column: `kind` numeric | date | time | categorical | text; `missing` [N] bool;
    `numbers` [N] float64 (NaN where missing) for a numeric column (`written`: "units" for
    amounts written as text, "decimal comma" for 3,5, "duration" for hours written 95:10 or 1h 30m or
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


def gap_values(options: TableOptions) -> tuple[str, ...]:
    """The gap markers a table is planned with besides NA_VALUES: the user's `na_values`,
    EXCEL_ERRORS and WRITTEN_GAPS (recorded in the spec as its "na_values", so a spec fitted
    before they were gaps is applied as it was fitted)."""
    return (*options.na_values, *(e for e in (*EXCEL_ERRORS, *WRITTEN_GAPS) if e not in options.na_values))


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


def _ambiguous_dates(levels: list[str]) -> bool:
    """Whether every level is a date written day first or month first, and none says which."""
    readable = np.isfinite(written_days(levels, "dmy")) | np.isfinite(written_days(levels, "mdy"))
    return bool(readable.all()) and date_order(levels) == "either"


def plan_column(table: CsvTable, name: str, options: TableOptions, notes: list[str], left_out: dict[str, str]) -> ColumnPlan | None:
    """Feature column `name` of `table` as `options` ask: its ColumnPlan, or None when it is left
    out (the reason added to `left_out` and a note to `notes`); DataError (NotAFeature for a key,
    free text or noise) when it is refused."""
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
        shortened = table.columns[name].shortened
        if shortened is not None and name not in (options.features or ()):  # 1.23457E+15: an id Excel cut short
            notes.append(f"{excel_shortened(name, shortened)}: left out of the features (name it in --features to use it as a number all "
                         f"the same); {EXCEL_TEXT_WAY}")  # fmt: skip
            left_out[name] = "long numbers as Excel shows them, their other digits lost"
            return None
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
    parses as one (`activebayes.data.parsed_columns`, `activebayes.data.written_dates`); DataError naming the first value that does
    not when at least half do (a typo, or a gap marker); else None."""
    codes, texts = table.text_codes(name)
    present = ~missing
    used = np.unique(codes[present & ~numeric])
    example = shown(texts[int(used[0])])
    amounts = unit_numbers(texts, magnitudes=None)
    days, order = iso_days(texts), "ymd"
    if np.isfinite(days[used]).mean() < 0.5:  # dates as spreadsheets write them (31/12/2024, 12/31/2024, 31.12.2024, 1-Mar-24), a few ISO ones among them
        order = date_order([texts[k] for k in used.tolist()]) or "ymd"
        if order == "either":  # never guessed: categories as before, with a word on it (`plan_column`)
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
    times = read_times(table, name, missing, numeric) or read_spelled_durations(table, name, missing, numeric)  # 08:30, 95:10, 1h 30m
    if times is not None:
        notes.append(times.note)
        return ColumnPlan(name, times.kind, missing, numbers=times.values, written=times.written)
    return None
