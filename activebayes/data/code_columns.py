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
"""

from __future__ import annotations

from typing import Sequence

CODE_SPELLINGS = 3  # distinct letter-and-digit spellings a mostly numeric column needs to be read as codes


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
