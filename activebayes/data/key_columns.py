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

Identifiers under other names (`numeric_identifier`), read by the name's words (split on case,
digits, underscores and dots: `name_words`) and the values together, since a name alone does
not tell a case number from a count of cases, nor values alone an id from a year or a time index:

- a name whose last word names one thing of the rows' kind (ENTITY_WORDS: subject, patient,
  student, respondent, case ...) or an identifier's number (ID_NUMBER_WORDS: idno, seqn, seqno,
  serial, uid ...), or whose last word (or last two words run together) is such a thing, or an
  abbreviation of one (ENTITY_STEMS: pat, subj, obs ...), before or after id, no, nr, num or
  number (patnr, caseid, idcase, pupilNR, obs_number), holding
  distinct whole numbers (`distinct_whole_numbers`): NHANES's seqn, the ESS's idno, a Student
  column of numbers, a race's bib or bib_num, an ISO 3166 numeric country code (iso_num) in a
  table of one row per country (repeated, as in a panel, it stays a number: a code read as
  a quantity, not an identifier). Singular words only: subjects, cases or students count things.
  A street number (StreetNum) is none: houses on different streets share it, it is part of
  an address, and its name's words (street, num) name no thing of the rows.
- a name whose last word is a bare number word (NUMBER_WORDS: no, nr, num, number, index, code,
  order, row, and obs, which may be an observed count) holding distinct whole numbers that count
  up down the file (`counts_up`: each row's above the one before, at least COUNTING_STEPS (half)
  of the steps exactly 1): an order number or a row counter, a few skipped. Such a word may also
  end a quantity's name (SSINum, the number of recipients; a life table's number alive), whose
  values do not count up so; a cumulative count rises, but not by ones.

Values alone never make an identifier here: a column counting the rows 1, 2, ... is as often a
year or a time index (a real feature of a series) as a row number; `plan_table` notes it and
keeps it.
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
ENTITY_WORDS = ("subject", "participant", "respondent", "patient", "student", "pupil", "person", "individual", "case", "household")
ENTITY_STEMS = ENTITY_WORDS + ("subj", "resp", "pat", "pers", "stud", "hh", "fam", "sch", "study", "obs", "rec", "doc", "seq", "bib", "iso")  # caseid, patnr, bib_num, iso_num
ID_NUMBER_WORDS = ("idno", "idnum", "seqn", "seqno", "serial", "serialno", "uid", "pid", "bib")  # bib: a race's bib number
NUMBER_WORDS = ("no", "nr", "num", "number", "index", "idx", "code", "order", "row", "obs")  # obs: also "observed"
COUNTING_STEPS = 0.5  # share of a rising column's steps that must be exactly 1 for it to count the rows up
_ENTITY_NUMBER = re.compile(rf"^(?:(?:{'|'.join(ENTITY_STEMS)}|id)(?:id|no|nr|num|number)|id(?:{'|'.join(ENTITY_STEMS)}))$")
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


def name_words(name: str) -> list[str]:
    """A column name's words, lower case: split on case changes, digits, underscores, dots and
    spaces (pupilNR: pupil, nr; Person_ID: person, id; obs.number: obs, number)."""
    return [w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", name)]


def names_an_identifier(name: str) -> bool:
    """Whether a column's name ends in the word id, key, uuid or guid (customer_id, CustomerID,
    userId, order-key; not paid or valid)."""
    words = name_words(name)
    return bool(words) and words[-1] in IDENTIFIER_WORDS


def names_an_entity(name: str) -> bool:
    """Whether a column's name ends in a word naming one of the rows' things or an identifier's
    number, or in such a thing before or after id, no, nr or num (module docstring: idno, seqn,
    Student, caseid, patnr, pupilNR, obs_number; not cases, students or SSINum)."""
    words = name_words(name)
    if not words:
        return False
    last_two = "".join(words[-2:])
    return (words[-1] in ENTITY_WORDS + ID_NUMBER_WORDS or names_an_identifier(name)
            or bool(_ENTITY_NUMBER.match(words[-1]) or _ENTITY_NUMBER.match(last_two)))  # fmt: skip


def names_a_number(name: str) -> bool:
    """Whether a column's name ends in a bare number word (NUMBER_WORDS: No, case_nr, Number, Order)."""
    words = name_words(name)
    return bool(words) and words[-1] in NUMBER_WORDS


def counts_up(values: np.ndarray) -> bool:
    """Whether [n] `values` (a column's present values, in the file's order) each exceed the one
    before, at least COUNTING_STEPS of the n − 1 steps by exactly 1 (1, 2, 3, 5, 6: yes; 3, 9, 27: no)."""
    steps = np.diff(values)
    return len(steps) > 0 and bool(np.all(steps > 0)) and float(np.mean(steps == 1)) >= COUNTING_STEPS


def numeric_identifier(name: str, values: np.ndarray) -> bool:
    """Whether a numeric column `name` of [n] present `values` (in the file's order) holds
    identifiers (module docstring): distinct whole numbers under an identifier's or an entity's
    name, or under a number word when they count up down the file (`counts_up`)."""
    if not distinct_whole_numbers(values):
        return False
    return names_an_entity(name) or (names_a_number(name) and counts_up(values))


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
        if not names_an_identifier(name) or table.columns[name].shortened is not None or column_missing(table, name, na_values).any():
            continue  # an id Excel cut short (1.23457E+15) keys nothing: left out of the features
        numbers = table.numbers(name)
        finite = np.isfinite(numbers)
        whole = finite.all() and bool(np.all(numbers == np.round(numbers)))
        if whole and len(np.unique(numbers)) == len(numbers):
            return name
        coded = whole and table.columns[name].code is not None  # 17-digit ids a float rounds together: told apart as written
        if (coded or not finite.any()) and no_key(table, name) is None:
            return name
    return None


def numeric_identifier_note(name: str, values: np.ndarray) -> str:
    """The note for a numeric identifier (`numeric_identifier`) of [n] present `values` left out of the features."""
    order = ", counting up down the file" if not names_an_entity(name) else ""
    return (f"column {name!r} looks like an identifier ({len(np.unique(values))} different whole numbers in {len(values)} rows{order}): left out of the "
            f"features; pass --key-column {name} if it names the items, or name it in --features to use it as a number")  # fmt: skip
