"""Gaps in a csv table: which cells are missing.

A cell is missing when it is empty or one of NA_VALUES, EXCEL_ERRORS (a formula's #DIV/0!, #N/A,
..., with a note: `note_excel_errors`), WRITTEN_GAPS (the dashes, words and dots other tools and
people write for "no value": -, —, None, missing, SAS's ., with a note naming them) or the user's
`na_values`, compared case-insensitively
(`missing_mask`; `column_missing` decides once per distinct text of a column, and a number is
missing only when an na value spells it exactly, e.g. "-999"). What a table does with its gaps
(impute, drop, error) is `activebayes.data.tabular`'s.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from activebayes.data.csv_table import CsvTable, finite_or_nan, shown

NA_VALUES = ("", "NA", "N/A", "NaN", "null", "?")
EXCEL_ERRORS = ("#N/A", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#NULL!", "#SPILL!", "#CALC!")  # a formula's failure: a gap
# "no value" as people and other tools write it: a dash (hyphen, double hyphen, en and em dash), Python's None (pandas
# reads it as a gap too), the word missing, pandas' <NA> and SAS's lone dot. Recorded with a spec's na_values, as
# EXCEL_ERRORS are, so a spec fitted before these were gaps is applied as it was fitted.
WRITTEN_GAPS = ("-", "--", "\u2013", "\u2014", "None", "missing", "<NA>", ".")


def _tokens(na_values: Sequence[str]) -> set[str]:
    return {v.strip().casefold() for v in (*NA_VALUES, *na_values)}


def formula_errors(cells: Sequence[Any], markers: Sequence[str] = EXCEL_ERRORS) -> np.ndarray:
    """[N] bool: which cells are a formula's error value (`markers`, EXCEL_ERRORS by default;
    case and surrounding spaces ignored)."""
    wanted = {m.strip().upper() for m in markers}
    return np.fromiter((str(c).strip().upper() in wanted for c in cells), dtype=bool, count=len(cells))


def missing_mask(cells: Sequence[str], na_values: Sequence[str] = ()) -> np.ndarray:
    """[N] bool: which cells are missing (empty, or in NA_VALUES + na_values, any case; `gap_values`
    gives a plan's na_values, the formula errors included)."""
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


def note_excel_errors(table: CsvTable, name: str, notes: list[str], written_gaps: Sequence[str] = WRITTEN_GAPS) -> None:
    """A note for a column holding Excel's error values (#DIV/0!, #N/A, ...), and one for a column
    holding `written_gaps` (-, None, ...), which are read as gaps."""
    codes, texts = table.text_codes(name) if table.columns[name].cells is None else (None, [])
    if codes is None:
        return
    for markers, what in ((EXCEL_ERRORS, "Excel's error values"), (written_gaps, "gap markers")):
        found = np.flatnonzero(formula_errors(texts, markers)) if markers else np.zeros(0, dtype=np.int64)
        if not found.size:
            continue
        where = np.isin(codes, found)
        at = int(np.argmax(where))
        spelled = ", ".join(shown(texts[k]) for k in found.tolist()) if what == "gap markers" else shown(texts[int(codes[at])])
        notes.append(f"column {name!r} holds {what} ({spelled} on line {table.lines[at]}; "
                     f"{int(where.sum())} cells in all): read as gaps")  # fmt: skip


MERGED_MIN_GROUPS = 3  # values, each the first of its run of empty cells, that make a column of merged cells


def merged_cells_note(table: CsvTable, name: str, missing: np.ndarray) -> str | None:
    """A note for a text column laid out as merged cells are saved (a group's name on its first
    row, the rows below it empty): the first row holds a value, at least MERGED_MIN_GROUPS values,
    each different and each followed by an empty cell, and half the rows or more empty. Its gaps
    would be filled with the most frequent value, not the one above them; None for any other column."""
    col = table.columns[name]
    if col.codes is None or col.numbers is not None or missing[0] or missing.mean() < 0.5:
        return None
    at = np.flatnonzero(~missing)
    values = col.codes[at]
    if at.size < MERGED_MIN_GROUPS or np.unique(values).size < at.size or (np.diff(at) < 2).any() or missing.size - 1 in at:
        return None
    return (f"column {name!r} holds a value only on the first row of each run of empty cells ({shown(col.texts[int(values[0])])} on line "
            f"{table.lines[0]}, then {int(at[1] - 1)} empty), as merged cells are saved; if each value holds for the rows below it, "
            "fill it down in the sheet before `pool add` (its gaps are filled with the most frequent value, not the one above them)")  # fmt: skip


def label_gap_markers(classes: Sequence[Any] | None, na_values: Sequence[str] = ()) -> list[str]:
    """The label cells read as no label (a row still to label): a formula's error values
    (EXCEL_ERRORS), the gap markers of NA_VALUES and WRITTEN_GAPS and the user's `na_values`, as
    in the features, less any that the project's fixed `classes` name (a class called "NA" or
    "None" stays one)."""
    named = {str(c).strip().casefold() for c in classes or ()}
    markers = dict.fromkeys(m.strip() for m in (*EXCEL_ERRORS, *NA_VALUES, *WRITTEN_GAPS, *na_values) if m.strip())
    return [m for m in markers if m.casefold() not in named]
