"""Columns that name the rows rather than measure them: which column keys the items, and the
rules that tell a numeric column of identifiers or row numbers from a quantity
(`activebayes.data.tabular.plan_table` applies them; `activebayes.data.frequent_levels` holds
the rule for identifier-like text columns).

The key column (`key_column_of`): the one given, else the first column named `key`, else `id`
(any case), else a first column named as R's row names (rownames, row.names), else unnamed row
names, else none (items are keyed by their row number). A column keys the items only when no
value repeats and no cell is empty (`no_key` says why not).

A numeric identifier: a column whose name ends in the word id, key, uuid or guid
(`names_an_identifier`) holding at least IDENTIFIER_MIN_VALUES values, all whole numbers,
IDENTIFIER_DISTINCT (90 %) of them distinct (`distinct_whole_numbers`): its numbers order the
rows, they are not a quantity. A saved index: distinct whole numbers under a name pandas
(Unnamed: 0), R (X), readr (...1) or reset_index (index, level_0) give the index of a file read
and saved again (ROW_INDEX_NAME).
"""

from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from activebayes.data.csv_table import ROW_NAMES, CsvTable, shown
from activebayes.data.frequent_levels import IDENTIFIER_DISTINCT, IDENTIFIER_MIN_VALUES

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
