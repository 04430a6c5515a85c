"""A csv table's columns kept compact while it is read (`activebayes.data.csv_table`): a cell
that parses as a finite number as a float64, any other as an int32 code into the column's
distinct stripped texts, and a column read as text (keys, labels, prose) as its stripped cells.
While it is read, a column's numbers are checked for what their spelling shows: codes written in
digits (`number_code`: 02134, a 17-digit id; not 6.02214E+23, a quantity) and long numbers as Excel shows them, their other
digits lost (`excel_display`: 1.23457E+15).

    builder = ColumnBuilder(keep_text=False)
    builder.add(["3.5", "red", "", "7"])      # a chunk of one column's cells, chunk after chunk
    builder.finish()    # CsvColumn(numbers=[3.5, nan, nan, 7.0], codes=[-1, 0, 1, -1], texts=["red", ""], cells=None)
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np


FLOAT_EXACT = 2.0**53  # whole numbers from here on are not all exact as float64: 9007199254740993 reads ...992
DIGIT_STRING = re.compile(r"[+-]?\d+")  # a whole number written as digits alone: no point, no power of ten
# a number of 12 digits or more as Excel's General format shows it, and saves it to CSV: 6 significant digits at most and a
# power of ten of 11 or more, 123456789012345 as 1.23457E+14 (an account or order id so saved has lost its other digits)
EXCEL_DISPLAY = re.compile(r"\d(?:\.(\d{1,5}))?E\+(?:1[1-9]|[2-9]\d|\d{3})")
EXCEL_DIGITS = 5  # decimals of a mantissa with Excel's 6 significant digits (fewer when they end in zeros: 1.2E+15)


# how to save a column of long numbers whole from Excel (`excel_shortened`)
EXCEL_TEXT_WAY = ("to keep them whole, open the source file in Excel with Data > From Text/CSV, set the column's type to Text, then save "
                  "as CSV (or export the column from its source as text)")  # fmt: skip


def excel_shortened(name: str, example: str) -> str:
    """What Excel did to column `name`'s long numbers (`example` one); EXCEL_TEXT_WAY says how to save them whole."""
    return f"column {name!r} holds long numbers as Excel shows them ({example!r}: 6 digits and a power of ten), the rest of their digits lost"


def excel_display(cells: Sequence[str]) -> tuple[int, int] | None:
    """(cells, cells with 6 significant digits) when every one of `cells` (stripped, non-empty:
    numbers) is a long number as Excel displays it (EXCEL_DISPLAY: 1.23457E+15, 1.2E+11); else None."""
    full = 0
    for cell in cells:
        m = EXCEL_DISPLAY.fullmatch(cell)
        if m is None:
            return None
        full += len(m[1] or "") == EXCEL_DIGITS
    return len(cells), full


def number_code(cells: Sequence[str], values: np.ndarray) -> str | None:
    """The first of a chunk's `cells` that is a code written in digits rather than a quantity,
    when its finite `values` [n] are all whole numbers: a string of digits (DIGIT_STRING) with a
    leading zero ("02134", a zip code) or beyond a float's exact whole numbers (a 17-digit account
    id); else None. A number written with a decimal point or a power of ten (6.02214E+23, 1e20,
    12.0) is a quantity, however large."""
    finite = np.flatnonzero(np.isfinite(values))
    if not finite.size or not np.all(values[finite] == np.floor(values[finite])):
        return None
    big = finite[np.abs(values[finite]) >= FLOAT_EXACT].tolist()
    written = (cells[i].strip() for i in big)
    code = next((c for c in written if DIGIT_STRING.fullmatch(c)), None)
    if code is not None:
        return code
    return next((c.strip() for c in cells if c[:1] == "0" and c[1:2].isdigit() and DIGIT_STRING.fullmatch(c.strip())), None)


def finite_or_nan(cell: str) -> float:
    """float(cell) when that is a finite number, else NaN (text, a gap, inf, nan)."""
    try:
        value = float(cell)
    except ValueError:
        return math.nan
    return value if math.isfinite(value) else math.nan


@dataclass
class ColumnBuilder:
    """One column's cells, gathered chunk by chunk (see `CsvColumn`)."""

    keep_text: bool
    cells: list[str] = field(default_factory=list)
    numbers: list[np.ndarray] = field(default_factory=list)
    codes: list[np.ndarray | None] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)  # raw cell -> code
    code: str | None = None  # the first cell that is a code written in digits (`number_code`)
    shown: list[int] | None = field(default_factory=lambda: [0, 0])  # `excel_display` so far; None once a cell is not so
    first: str | None = None  # the first number's cell, as written

    def add(self, col: Sequence[str]) -> None:
        if self.keep_text:
            self.cells.extend(c.strip() for c in col)
            return
        n = len(col)
        try:  # the common case: every cell a number (numpy parses as float() does, spaces allowed)
            values = np.array(col, dtype=np.float64)
        except ValueError:
            values = self._numbers_among_texts(col)
        if self.code is None:
            self.code = number_code(col, values)
        is_finite = np.isfinite(values)
        finite = np.flatnonzero(is_finite)
        if self.shown is not None and finite.size:  # the first number settles it for most columns: 1 regex match a chunk
            self.first = self.first or col[int(finite[0])].strip()
            seen = excel_display([col[int(finite[0])].strip()]) and excel_display([col[i].strip() for i in finite.tolist()])
            self.shown = [self.shown[0] + seen[0], self.shown[1] + seen[1]] if seen else None
        text_at = np.flatnonzero(~is_finite)  # texts, gaps, and inf / nan spelled out
        codes = None
        if text_at.size:
            values[text_at] = np.nan
            index = self.index
            codes = np.full(n, -1, dtype=np.int32)
            codes[text_at] = [index.setdefault(col[i], len(index)) for i in text_at.tolist()]
        self.numbers.append(values)
        self.codes.append(codes)

    def _numbers_among_texts(self, col: Sequence[str]) -> np.ndarray:
        """[n] finite numbers of a chunk holding some text, NaN elsewhere. Texts seen in earlier
        chunks (a column's gaps, its categories) are set aside first, so that numpy parses the
        rest at once; otherwise each distinct cell (few in a categorical column) or each cell is
        parsed on its own."""
        n = len(col)
        if self.index:
            known = np.fromiter(map(self.index.__contains__, col), dtype=bool, count=n)
            if known.all():
                return np.full(n, np.nan)
            if known.any():
                patched = list(col)
                for i in np.flatnonzero(known).tolist():
                    patched[i] = "nan"
                try:
                    return np.array(patched, dtype=np.float64)
                except ValueError:
                    pass
        distinct = set(col)
        if len(distinct) <= max(64, n // 4):
            parsed = {c: finite_or_nan(c) for c in distinct}
            return np.fromiter(map(parsed.__getitem__, col), dtype=np.float64, count=n)
        return np.fromiter(map(finite_or_nan, col), dtype=np.float64, count=n)

    def finish(self) -> CsvColumn:
        if self.keep_text:
            seen = excel_display([c for c in self.cells if c]) if self.cells and EXCEL_DISPLAY.fullmatch(self.cells[0]) else None
            return CsvColumn(None, None, [], self.cells, shortened=_shortened(self.cells[0] if self.cells else None, seen))
        numbers = np.concatenate(self.numbers) if self.numbers else np.zeros(0)
        shortened = _shortened(self.first, self.shown)
        if not self.index:
            return CsvColumn(numbers, None, [], None, self.code, shortened)
        texts: list[str] = []
        where: dict[str, int] = {}
        lut = np.asarray([where.setdefault(raw.strip(), len(where)) for raw in self.index], dtype=np.int32)
        texts = list(where)
        codes = np.concatenate([lut[c] if c is not None else np.full(v.shape[0], -1, np.int32) for c, v in zip(self.codes, self.numbers)])
        codes[np.isfinite(numbers)] = -1  # lut of -1 picked the last text
        return CsvColumn(numbers if np.isfinite(numbers).any() else None, codes, texts, None, self.code, shortened)


def _shortened(first: str | None, seen: Sequence[int] | None) -> str | None:
    """`first`, a column's first number, when `seen` (`excel_display` of all its numbers) says
    they are long numbers as Excel shows them, half or more with its 6 significant digits (a
    quantity written so in every row is rare); else None."""
    return first if seen and seen[0] and 2 * seen[1] >= seen[0] else None


@dataclass(frozen=True)
class CsvColumn:
    """One column. numbers: [N] float64, NaN where a cell is not a finite number (None when no
    cell is one); codes: [N] int32, the index of a cell's stripped text in `texts`, -1 where the
    cell is a finite number (None when every cell is one); cells: every stripped cell, for a column
    read as text (then the other fields are empty); code: a cell that shows its numbers to be codes
    written in digits, not quantities (`number_code`), when one does; shortened: its first number
    when every number is a long one as Excel shows it, its other digits lost (`excel_display`)."""

    numbers: np.ndarray | None
    codes: np.ndarray | None
    texts: list[str]
    cells: list[str] | None
    code: str | None = None
    shortened: str | None = None
