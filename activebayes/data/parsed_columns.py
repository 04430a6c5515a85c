"""Quantities written as text in a csv column: amounts with units (dates and times are
`activebayes.data.written_dates`', whose names are importable from here too).

`pool add` reads a column as numbers only when every value parses as one; real tables also write
prices as "$1,578.50", shares as "53%" and dates as "2024-03-01". Each function here takes the
distinct texts of a column ([T] strings) and returns [T] float64, NaN where a text is not of its
kind, so a column is of a kind exactly when none of its present values is NaN.

- `unit_numbers`: a number with a currency sign in front ($ € £ ¥, after an optional sign) or
  after it (12 €), a % after it, or thousands separators in groups of three (1,234,567.5; also
  an apostrophe, 1'234'567, as Swiss spreadsheets write them, or a no-break, narrow no-break or
  thin space, 12 345, as spreadsheets of many locales do); the value as written ("53%" is 53,
  "-$1,200" is −1200), and one in parentheses, or with a minus after it as SAP exports write it,
  negative, as accounting writes it ("(1,234)" and "1,234-" are −1234; its zero, "$ -", is 0), and a magnitude after
  it multiplies it (k or K a thousand, M or mn a million, B or bn a billion: "1.2k" is 1200,
  "$3M" 3e6; a lower-case m, a metre or a minute as often, is none; a column is read so when
  `magnitudes_shown`, a fraction before one, else 105B and 106M are courses); an ISO currency code may
  stand for the sign ("USD 1,200.00", "12,50 EUR") and a typeset minus (U+2212) for "-". A plain number passes too, so "0" may stand beside "53%". (In a file not delimited by
  commas, "1,578" is read first as a decimal comma: 1.578.)
- `decimal_comma_numbers`: a number written the European way, with a decimal comma and
  optionally dots or spaces (also no-break and narrow no-break ones, as French spreadsheets write
  them) between groups of three digits (3,5; -1.234,5; 1 234 567; 12,50 €; 53,5 %; negative in
  parentheses, (1.234,50)): the reading
  a file delimited by semicolons (or tabs) implies. A column is read so only when one of its
  values has the comma (tabular); "1.234" alone stays 1.234.
- `common_unit` and `measured_numbers`: numbers followed by one unit word ("59 yrs", "32.1
  kg/m2", "37 °C"), read without it when at least half the values of a column write the same
  unit and the others are plain numbers (one "12.5o" among numbers is a typo, not a unit; a
  magnitude, 1.2k beside 3M, is none); `written` is then UNIT_PREFIX + the unit.
"""

from __future__ import annotations

import math
import re
from typing import Sequence

import numpy as np

from activebayes.data.dataset import label_text
from activebayes.data.features import is_number
from activebayes.data.written_dates import (  # noqa: F401 (re-exported: dates and times were read here)
    CALENDAR_PARTS,
    CLOCK_PARTS,
    DATE_ORDERS,
    DAY_SECONDS,
    EPOCH,
    TWO_DIGIT_YEAR_CUT,
    calendar_features,
    clock_features,
    clock_seconds,
    date_order,
    duration_hours,
    full_year,
    has_times,
    iso_days,
    stopwatch_seconds,
    time_writing,
    written_days,
)

_CURRENCY = "$€£¥"  # the signs an amount may carry before or after it (and % after it)
_THOUSANDS = r"\d{1,3}(?:,\d{3})+"  # 1,234,567: commas between groups of three digits
_GROUP_MARKS = ",'\u2019\u00a0\u202f\u2009"  # between thousands: comma, (Swiss) apostrophe, no-break, narrow no-break, thin space
# 1.2k, 3M, $4.5bn: thousands, millions, billions (a lower-case m is a metre or a minute as often as a million: no magnitude)
_MAGNITUDES = {"k": 1e3, "K": 1e3, "M": 1e6, "mn": 1e6, "mln": 1e6, "B": 1e9, "bn": 1e9}
_UNIT_NUMBER = re.compile(
    rf"^(?P<sign>[+-]?)(?P<cur>[{_CURRENCY}]?)\s?(?P<sign2>[+-]?)(?P<int>\d{{1,3}}(?P<group>[{_GROUP_MARKS}])\d{{3}}(?:(?P=group)\d{{3}})*|\d+)"
    rf"(?P<frac>\.\d+)?\s?(?P<mag>{'|'.join(_MAGNITUDES)})?\s?(?P<post>[%{_CURRENCY}]?)$"
)
_CURRENCY_CODES = "USD EUR GBP JPY CHF CAD AUD NZD CNY HKD SGD INR KRW SEK NOK DKK PLN CZK HUF BRL MXN ZAR TRY RUB ILS AED"
_CURRENCY_CODE = re.compile(rf"^(?:{'|'.join(_CURRENCY_CODES.split())})\s?(?=[\d(+-])|(?<=[\d)])\s?(?:{'|'.join(_CURRENCY_CODES.split())})$")  # USD 1,200.00
_ACCOUNTING_ZERO = re.compile(rf"^[{_CURRENCY}]\s*-\s*$|^-\s*[{_CURRENCY}]$")  # "$ -": Excel's Accounting format writes a zero so
_ACCOUNTING = re.compile(r"^\((?P<inner>[^()+-]+)\)$|^(?P<trailing>\d[^+-]*)-$")  # (1,234), and 1,234.50- as SAP writes it: negative
_DECIMAL_COMMA_NUMBER = re.compile(
    rf"^(?P<sign>[+-]?)(?P<cur>[{_CURRENCY}]?)\s?(?P<int>\d{{1,3}}(?P<group>[.\u00a0\u202f ])\d{{3}}(?:(?P=group)\d{{3}})*|\d+)(?P<frac>,\d+)?"
    rf"\s?(?P<post>[%{_CURRENCY}]?)$"
)
_GROUPED = re.compile(rf"^[+-]?{_THOUSANDS}(?:\.\d+)?$", re.ASCII)  # 1,234.5 and 1,234,567: no sign of a unit
UNIT_PREFIX = "unit:"  # a column's `written` for numbers with a unit after them: "unit:kg/m2"


def _accounting_amount(text: str) -> str | None:
    """The amount inside accounting's negative `text` ("1,234" of "(1,234)" or "1,234-"), None
    when it is not written so."""
    m = _ACCOUNTING.match(text)
    return None if m is None else (m["inner"] or m["trailing"]).strip()


def _without_code(text: str) -> str:
    """`text` with a typeset minus (U+2212, as Apple's Numbers writes one) as "-" and without an
    ISO currency code before or after its number ("USD 1,200.00", "12,50 EUR")."""
    return _CURRENCY_CODE.sub("", text.replace("\u2212", "-"))


def _unit_number(text: str, magnitudes: bool = True) -> float:
    text = _without_code(text)
    if _ACCOUNTING_ZERO.match(text):
        return 0.0
    if (amount := _accounting_amount(text)) is not None:  # (1,234) is -1234, ($1,234.50) is -1234.5, 1,234.50- is -1234.5
        return -_unit_number(amount, magnitudes)
    m = _UNIT_NUMBER.match(text)
    if m is None or (m["sign"] and m["sign2"]) or (m["cur"] and m["post"]):
        return math.nan
    if m["mag"] and (m["post"] == "%" or not magnitudes):
        return math.nan
    value = float(re.sub(r"\D", "", m["int"]) + (m["frac"] or "")) * _MAGNITUDES.get(m["mag"] or "", 1.0)
    return -value if "-" in (m["sign"] + m["sign2"]) else value


def magnitude_note(texts: Sequence[str]) -> str:
    """The end of a note on a column of amounts, naming the first of `texts` written with a
    magnitude (1.2k, 3M, $4.5bn: `unit_numbers`), "" when none is."""
    written = next((t for t in texts if (m := _UNIT_NUMBER.match(t.strip())) is not None and m["mag"]), None)
    return "" if written is None else f"; {written!r} and the like as thousands (k), millions (M, mn) and billions (B, bn)"


def accounting_note(texts: Sequence[str]) -> str:
    """The end of a note on a column of numbers, naming the first of `texts` in parentheses, as
    accounting writes a negative amount ("" when none is)."""
    negative = next((t for t in texts if accounting_negative(t)), None)
    how = "in parentheses" if negative is None or negative.startswith("(") else "with a minus after it"
    return "" if negative is None else f"; {negative!r} {how} is negative, as accounting writes it"


def accounting_negative(text: str) -> bool:
    """Whether `text` is an amount in parentheses or with a minus after it, accounting's negative:
    (1,234), ($12.50), (1.234,50), 1,234.50-."""
    text = text.strip()
    return _accounting_amount(text) is not None and (math.isfinite(_unit_number(text)) or math.isfinite(_decimal_comma_number(text)))


def _decimal_comma_number(text: str) -> float:
    text = _without_code(text)
    if (amount := _accounting_amount(text)) is not None:  # (1.234,50) and 1.234,50- are -1234.5
        return -_decimal_comma_number(amount)
    m = _DECIMAL_COMMA_NUMBER.match(text)
    if m is None or (m["cur"] and m["post"]):
        return math.nan
    value = float(re.sub(r"\D", "", m["int"]) + (m["frac"] or "").replace(",", "."))
    return -value if m["sign"] == "-" else value


_UNIT_WORD = r"(?P<unit>°?[^\W\d_]\S{0,11})"  # kg, yrs, kg/m2, °C: a letter first, no space
_MEASURED = re.compile(rf"^(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+))\s?{_UNIT_WORD}$")
_AFTER_DIGITS = re.compile(rf"^(?P<num>.*\d)\s?{_UNIT_WORD}$")  # 12,5 kg, 1.234,5 kg: any number's text before the unit


def common_unit(texts: Sequence[str]) -> str | None:
    """The unit that every one of `texts` writes after a plain number ("59 yrs", "32.1 kg/m2",
    "37 °C"), when it is one and the same; None otherwise (no text, a text without a unit, or
    two units: "1st", "2nd" are no measurements)."""
    units = {m["unit"] if (m := _MEASURED.match(t.strip())) else None for t in texts}
    unit = units.pop() if len(units) == 1 else None
    return unit if unit is not None and not (unit in _MAGNITUDES and magnitudes_shown(texts)) else None  # 1.2k: a magnitude, `unit_numbers`


def unit_after(text: str) -> tuple[str, str] | None:
    """(number's text, unit) of `text` written as a unit word after text ending in a digit, the
    unit spelled as `common_unit` reads it ("12,5 kg": ("12,5", "kg")); None without one. The
    number's text is for the caller to read (a plain, decimal-comma or grouped number)."""
    m = _AFTER_DIGITS.match(text.strip())
    return (m["num"].strip(), m["unit"]) if m is not None else None


def measured_numbers(texts: Sequence[str], unit: str) -> np.ndarray:
    """[T] float64: the number of each text written as a plain number followed by `unit` ("32.1
    kg/m2" with unit "kg/m2": 32.1), or a plain number alone; NaN elsewhere."""
    out = np.full(len(texts), np.nan)
    for i, t in enumerate(texts):
        m = _MEASURED.match(t.strip())
        if m is not None and m["unit"] == unit:
            out[i] = float(m["num"])
        elif is_number(t) and math.isfinite(float(t)):
            out[i] = float(t)
    return out


def unit_numbers(texts: Sequence[str], magnitudes: bool | None = True) -> np.ndarray:
    """[T] float64: each text's value as an amount (module docstring), NaN where it is none; with
    `magnitudes` False a text with a magnitude (1.2k) is none, with None only when the texts show
    magnitudes (`magnitudes_shown`)."""
    magnitudes = magnitudes_shown(texts) if magnitudes is None else magnitudes
    return np.asarray([_unit_number(t, magnitudes) for t in texts], dtype=np.float64)


def magnitudes_shown(texts: Sequence[str]) -> bool:
    """Whether `texts` write magnitudes rather than a letter after a number: a fraction before one
    (1.2k, 3.5M). Course numbers 105B and 106M, a race's 5k beside half-marathon and 12K beside
    14K write none."""
    return any((m := _UNIT_NUMBER.match(_without_code(t.strip()))) is not None and m["mag"] and m["frac"] for t in texts)


def percent_scale_note(name: str, percents: Sequence[str], plain: np.ndarray) -> str | None:
    """A note for an amount column that mixes percentages over 1 % (`percents`, texts with %)
    with plain numbers (`plain` [P] float64) that all lie within [−1, 1], not all 0: "0.5" beside
    "53%" is likely a share of 1 (50 %), yet it is read as written, 0.5; None otherwise."""
    shares = [float(v) for v in unit_numbers(percents).tolist() if math.isfinite(v)]
    if not shares or max(map(abs, shares)) <= 1 or plain.size == 0 or np.abs(plain).max() > 1 or not plain.any():
        return None
    fraction = float(plain[np.flatnonzero(plain)[0]])
    return (f"column {name!r} writes some values with % ({percents[0]!r}) and others as plain numbers no bigger than 1 "
            f"({label_text(fraction)}): each is read as written, {label_text(fraction)} not {label_text(fraction * 100)} %; "
            "if the plain ones are shares of 1, write them as percentages")


def grouped_thousands(text: str) -> bool:
    """Whether `text` is a number with commas between thousands and nothing else of an amount
    (1,234.5, -1,234,567; not $1,200 or 1,200 %): `unit_numbers` reads it."""
    return _GROUPED.match(text) is not None


def has_unit_sign(text: str) -> bool:
    """Whether `text` holds a currency sign or a %, as the amounts of `unit_numbers` may."""
    return any(c in _CURRENCY or c == "%" for c in text)


def decimal_comma_numbers(texts: Sequence[str]) -> np.ndarray:
    """[T] float64: each text read with a decimal comma and dots between thousands (module
    docstring), NaN where it is not such a number."""
    return np.asarray([_decimal_comma_number(t) for t in texts], dtype=np.float64)


def surely_decimal_comma(text: str) -> bool:
    """Whether `text` is a number that only a decimal comma explains: a comma followed by other
    than three digits ("3,5", "12,50 €"), or after groups of digits set off by dots or spaces
    ("1 234,50"); "1,234" may be thousands, so it is not."""
    m = _DECIMAL_COMMA_NUMBER.match(text.strip())
    return m is not None and m["frac"] is not None and (len(m["frac"]) != 4 or m["group"] is not None) and not (m["cur"] and m["post"])


def number_writing(texts: Sequence[str], delimiter: str) -> str | None:
    """How a column of numbers written as text is written, when not every non-empty text is a
    plain finite number: "decimal comma" (a file not delimited by commas) or "units", when every
    one reads so; None otherwise (plain numbers, or not numbers at all)."""
    present = [t for t in texts if t.strip()]
    if all(is_number(t) and math.isfinite(float(t)) for t in present):
        return None
    if delimiter != "," and np.isfinite(decimal_comma_numbers(present)).all():
        return "decimal comma"
    if np.isfinite(unit_numbers(present)).all():
        return "units"
    measured = [t for t in present if not is_number(t)]
    unit = common_unit(measured) if len(measured) >= 0.5 * len(present) else None  # most values: not a typo among numbers
    return f"{UNIT_PREFIX}{unit}" if unit is not None else None


def written_numbers(texts: Sequence[str], writing: str | None) -> list[str]:
    """`texts` with each number written as `writing` says ("units", "decimal comma") rewritten as
    a plain one (3,5 -> "3.5", $1,200 -> "1200"); empty and unreadable texts are kept as they are."""
    if writing is None:
        return list(texts)
    stripped = [t.strip() for t in texts]
    if writing.startswith(UNIT_PREFIX):
        parsed = measured_numbers(stripped, writing[len(UNIT_PREFIX) :])
    else:
        parsed = (decimal_comma_numbers if writing == "decimal comma" else unit_numbers)(stripped)
    return [label_text(v) if math.isfinite(v) else t for t, v in zip(texts, parsed.tolist())]
