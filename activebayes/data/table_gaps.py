"""Gaps in a csv table: which cells are missing.

A cell is missing when it is empty or one of NA_VALUES, EXCEL_ERRORS (a formula's #DIV/0!, #N/A,
..., with a note: `note_excel_errors`) or the user's `na_values`, compared case-insensitively
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


def note_excel_errors(table: CsvTable, name: str, notes: list[str]) -> None:
    """A note for a column holding Excel's error values (#DIV/0!, #N/A, ...), which are read as gaps."""
    codes, texts = table.text_codes(name) if table.columns[name].cells is None else (None, [])
    errors = np.flatnonzero(formula_errors(texts))
    if codes is None or not errors.size:
        return
    where = np.isin(codes, errors)
    at = int(np.argmax(where))
    notes.append(f"column {name!r} holds Excel's error values ({shown(texts[int(codes[at])])} on line {table.lines[at]}; "
                 f"{int(where.sum())} cells in all): read as gaps")  # fmt: skip


def label_gap_markers(classes: Sequence[Any] | None, na_values: Sequence[str] = ()) -> list[str]:
    """The label cells read as no label (a row still to label): a formula's error values
    (EXCEL_ERRORS), the gap markers of NA_VALUES and the user's `na_values`, as in the features,
    less any that the project's fixed `classes` name (a class called "NA" stays one)."""
    named = {str(c).strip().casefold() for c in classes or ()}
    markers = dict.fromkeys(m.strip() for m in (*EXCEL_ERRORS, *NA_VALUES, *na_values) if m.strip())
    return [m for m in markers if m.casefold() not in named]
