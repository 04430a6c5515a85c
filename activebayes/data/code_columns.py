"""Mostly numeric columns whose text values are codes, not typos or gap markers
(`activebayes.data.tabular.plan_table`, under `--categorical auto`).

A column whose values are mostly numbers (at least half of those present) with some text is one
of two things:

- a numeric quantity with a typo ('12.5o') or a gap marker ('unknown', 'n/a', '-', '?'): a
  handful of distinct spellings, gap markers without a digit; refused, with `--na-values` as the
  way in, since reading it as categories would turn every number into a level of its own;
- a column of codes, most of them written in digits alone: Kaggle's Titanic tickets ('113803',
  'A/5 21171', 'PC 17599', 'STON/O2. 3101282'), Galton's family ids ('136A'), part numbers.
  Its numbers name things, they do not measure them, so it is categorical, each value as
  spelled ('0113' and '113' two levels), and goes through the identifier-like and many-levels
  rules of `activebayes.data.frequent_levels` like any text column.

The rule that tells them apart reads the distinct text spellings S of the values that are not
numbers (the numbers themselves say nothing: both kinds are mostly numbers):

    codes  ⇔  |{s ∈ S : s holds a letter and a digit}| ≥ CODE_SPELLINGS (3)
              and those are more than half of S

Why a letter and a digit: a code mixes them ('PC 17599', '136A'); a gap marker has no digit;
text with digits and no letter ('1 234', '3-4', '2024-01-05', '12..5') is a quantity written
another way, a range, a date or a typo, never named a code here, so it is still refused with
its line. Why three: one or two odd spellings with letters ('12.5o', '1O') are what a typo
looks like, while a column of codes repeats its pattern over many values. Why more than half:
a few codes among more plain words ('none', 'unknown', 'missing', 'LINE') is a quantity with
gap markers more than a code column. Titanic's Ticket column (its text spellings nearly all
letters and digits, 'LINE' the exception) is codes; a numeric column with '-' and 'n/a' is not; nor, with a
single '136A', are Galton's family ids: one spelling is a typo's evidence as much as a code's,
and the refusal names `--ignore`.

A third kind: the levels of a scale or a small count with a level that is not a number, Cars93's
cylinders (3, 4, 5, 6, 8 and 'rotary'), a survey's number of incomes (1, 2, 3 and '>3'), a rating
(1 to 10 and "don't know"). Refusing it leaves its user no way in but to drop the column or edit
the file, while its numbers are few levels already, so reading the column as categories costs no
quantity its order beyond those few. The rule reads the distinct numbers D among its values:

    scale levels  ⇔  |D| ≤ MAX_SCALE_LEVELS (12), every d ∈ D a whole number,
                     and at least SCALE_MIN_VALUES (20) values present

Why 12: a month (1 to 12) and a 0 to 10 rating fit, a count of cylinders or children too, while a
quantity (an age, a price, a measurement) takes more values than that on 20 rows, and its typo is
still refused as above. Why whole numbers: levels are counted, not measured (0.5 and 1.5 are a
quantity's values). Why 20 values: on fewer, few distinct numbers are what any column shows. The
column is read as categories, each value as spelled, with a note naming its text values (so a
typo or a gap marker read as a level shows: correct it, or `--na-values`).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

CODE_SPELLINGS = 3  # distinct letter-and-digit spellings a mostly numeric column needs to be read as codes
MAX_SCALE_LEVELS = 12  # the most distinct whole numbers of a mostly numeric column read as a scale's levels
SCALE_MIN_VALUES = 20  # the fewest values present for that reading


def is_code(text: str) -> bool:
    """Whether `text` holds at least one letter and one digit ('PC 17599', '136A'; not 'n/a', '3-4')."""
    return any(ch.isalpha() for ch in text) and any(ch.isdigit() for ch in text)


def written_as_codes(spellings: Sequence[str]) -> bool:
    """Whether the distinct text `spellings` (those not numbers) of a mostly numeric column make it a
    column of codes (module docstring): at least CODE_SPELLINGS of them hold a letter and a digit,
    and those are more than half of them.

    >>> written_as_codes(["A/5 21171", "PC 17599", "C.A. 175428", "LINE"]), written_as_codes(["n/a", "-", "12.5o"])
    (True, False)
    """
    n_codes = sum(map(is_code, spellings))
    return n_codes >= CODE_SPELLINGS and 2 * n_codes > len(spellings)


def codes_note(name: str, n_numbers: int, n_present: int, spellings: Sequence[str]) -> str:
    """The note for a mostly numeric column read as codes: categories, each value as spelled."""
    examples = ", ".join(repr(s) for s in [s for s in spellings if is_code(s)][:2])
    return (f"column {name!r} mixes numbers and codes ({n_numbers} of its {n_present} values are numbers; the others, {len(spellings)} "
            f"different spellings, include {examples}): read as categories, each value as spelled; --ignore {name} leaves it out")  # fmt: skip


def scale_levels(numbers: np.ndarray, n_present: int) -> bool:
    """Whether the [M] `numbers` among a mostly numeric column's `n_present` values make it the
    levels of a scale (module docstring): at most MAX_SCALE_LEVELS distinct whole numbers, and
    at least SCALE_MIN_VALUES values present.

    >>> scale_levels(np.array([4.0, 6, 8, 4, 3, 5] * 5), 31), scale_levels(np.arange(30.0), 31)
    (True, False)
    """
    distinct = np.unique(numbers)
    return n_present >= SCALE_MIN_VALUES and len(distinct) <= MAX_SCALE_LEVELS and bool(np.all(distinct == np.floor(distinct)))


def scale_note(name: str, numbers: np.ndarray, spellings: Sequence[str], text_rows: int) -> str:
    """The note for a mostly numeric column read as a scale's levels: categories, each value as spelled."""
    shown = ", ".join(repr(s) for s in spellings[:3]) + (f" and {len(spellings) - 3} more" if len(spellings) > 3 else "")
    return (f"column {name!r} holds {len(np.unique(numbers))} different whole numbers and the text {shown} (on {text_rows} row{'s' if text_rows > 1 else ''}): read as "
            f"categories, each value as spelled; correct the text if it is a typo, pass --na-values if it marks a gap, --ignore {name} leaves it out")  # fmt: skip
