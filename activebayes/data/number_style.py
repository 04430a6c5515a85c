"""How a project writes its numbers, from what `pool add` recorded: the round file writes its
numbers so, and a person's regression answer is read so.

- `project_writing(settings)`: "decimal comma" when the pool's regression target was written
  with decimal commas (`151,5`), or, when the target shows no decimal mark of its own (no target,
  or plain numbers), when a feature column was (`28,0;2,0;19,2` in a file delimited by `;`);
  "units" when the target was written as amounts with thousands commas (`$1,200`); else
  "plain" (decimal points).
- `written_number(value, writing)`: a float as a round file writes it, with `digits`
  significant digits (what a float32 prediction holds, not its noise: 90.12002563476562 is
  90.12), no exponent between 1e-4 and 1e15, and a decimal comma in a "decimal comma" project,
  as a spreadsheet of that locale reads it; `fixed_number(value, decimals, writing)` with a
  fixed number of decimals (a probability, 0.6250 or 0,6250); `marked(text, writing)` a stored
  label's text so (`export`).
- `answer_number(text, writing)`: a person's regression answer read as a number. Either mark is
  read wherever only one reading is possible, whatever the project's writing: `151,5` and
  `151.5` are 151.5 in every project; `1.234,5` (a decimal comma project) and `1,234.5` (any
  other) are 1234.5, and so are numbers grouped by a space (`1 234,5`) in a decimal comma
  project. A single group of three digits after the other mark is ambiguous and refused, naming
  both ways to write it: `1,500` in a project written with decimal points may be 1500 or 1.5,
  `1.500` in a decimal comma project 1500 or 1,5; except that in a project whose target was
  written with thousands commas ("units") `1,500` is 1500, and a leading 0, four digits
  before the mark or an exponent (`0,500`, `1234,567`, `1,500e3`) make it a decimal.
  In a project whose target was written with a unit after its numbers (`70 kg`: "unit:kg",
  `project_unit(settings)` is "kg"), the answer may carry that unit (`parsed_columns.unit_after`),
  after any number the answer could be without it: `12.5 kg` and `12.5kg` are 12.5, and so is
  `12,5 kg` (`1,500 kg` is as ambiguous as `1,500`); the unit's letters may differ in case only
  where that names no other unit (`same_unit`: `12.5 Kg` is 12.5 kg, `mL` is `ml`, but `MPa` is
  no `mPa`, nor `S` an `s`); another unit (`12.5 lb`, `12.5 KG`) is refused naming the project's
  own, never converted.
  `AnswerError` says what is wrong and how to write it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from activebayes.data.parsed_columns import (
    UNIT_PREFIX, decimal_comma_numbers, grouped_thousands, has_unit_sign, unit_after, unit_numbers,
)  # fmt: skip
from activebayes.errors import DataError

DIGITS = 6  # significant digits of a prediction, sd or score in a round file
_PLAIN = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$", re.ASCII)
_ONE_MARK = re.compile(r"^(?P<sign>[+-]?)(?P<int>\d+)(?P<mark>[.,])(?P<frac>\d+)(?P<exp>[eE][+-]?\d+)?$", re.ASCII)  # 151,5, 1.500, 2,5e-05


class AnswerError(DataError):
    """A regression answer that is no number, or one that could be read two ways: `what` is
    wrong with it (said of the answer: "is not a finite number"), `fix` how to write it."""

    def __init__(self, what: str, fix: str) -> None:
        super().__init__(f"{what}; {fix}")
        self.what = what
        self.fix = fix


def project_writing(settings: Mapping[str, Any] | None) -> str:
    """"decimal comma", "units" or "plain": how the project's numbers were written (module
    docstring), from its settings as `pool add` recorded them (settings["features"]:
    "label_written" and each column's "written")."""
    spec = (settings or {}).get("features") or {}
    label = spec.get("label_written")
    if label in ("decimal comma", "units"):
        return str(label)
    columns = spec.get("columns") or ()
    return "decimal comma" if any(c.get("written") == "decimal comma" for c in columns) else "plain"


def project_unit(settings: Mapping[str, Any] | None) -> str | None:
    """The unit written after the pool's regression target ("kg" of `70 kg`, recorded by `pool
    add` as settings["features"]["label_written"] "unit:kg"); None when it had none."""
    label = str(((settings or {}).get("features") or {}).get("label_written") or "")
    return label[len(UNIT_PREFIX) :] if label.startswith(UNIT_PREFIX) else None


def same_unit(written: str, unit: str) -> bool:
    """Whether the unit `written` after an answer is the project's `unit`: spelled alike, or
    differing only in the case of letters whose case names no other unit: a kilo prefix k in
    front (K is no SI prefix: Kg is kg, KW is kW; not before b or B, where KB may be 1024 bytes),
    a litre's l ending the unit or before a / (L is the litre's other symbol: mL, mmol/L, L/min),
    and the scale after ° (°c is °C). Any other letter's case may name another unit, so it
    counts: m milli or M mega (mPa, MPa), s second or S siemens, g gram or G giga or gauss, K
    kelvin alone or k (a thousand), KG (kilogauss is kG)."""
    if written == unit:
        return True
    if len(written) != len(unit) or written.lower() != unit.lower():
        return False
    for i, (mine, theirs) in enumerate(zip(written, unit)):
        after = unit[i + 1 : i + 2]
        kilo = i == 0 and theirs.lower() == "k" and after not in ("", "b", "B")
        litre = theirs.lower() == "l" and after in ("", "/")
        scale = i > 0 and unit[i - 1] == "°"
        if mine != theirs and not (kilo or litre or scale):
            return False
    return True


def marked(text: str, writing: str) -> str:
    """A plain number's text ("151.5", "1.5e-05", as the store keeps a regression label) with the
    project's decimal mark: "151,5" in a "decimal comma" project."""
    return text.replace(".", ",") if writing == "decimal comma" else text


def written_number(value: float, writing: str = "plain", digits: int = DIGITS) -> str:
    """`value` with `digits` significant digits, trailing zeros dropped, an exponent only below
    1e-4 or from 1e15, and the project's decimal mark: 90.12002563476562 -> "90.12" (or
    "90,12"); a value that is not finite as Python writes it ("nan")."""
    value = float(value)
    if not math.isfinite(value):
        return repr(value)
    if value == 0.0:
        return "0"
    size = abs(value)
    if 1e-4 <= size < 1e15:
        text = f"{value:.{max(0, digits - 1 - math.floor(math.log10(size)))}f}"
        text = text.rstrip("0").rstrip(".") if "." in text else text
    else:
        text = f"{value:.{digits}g}"
    return marked(text, writing)


def fixed_number(value: float, decimals: int, writing: str = "plain") -> str:
    """`value` with `decimals` decimals and the project's decimal mark: 0.625 -> "0.6250" or "0,6250"."""
    return marked(f"{float(value):.{decimals}f}", writing)


def _like_thousands(match: re.Match[str]) -> bool:
    """Whether a number with one mark could be grouped thousands: one to three digits before it
    (not a lone 0 or a leading one), three after, no exponent (1,500 but not 0,500, 1234,567, 1,5e3)."""
    return len(match["int"]) <= 3 and not match["int"].startswith("0") and len(match["frac"]) == 3 and not match["exp"]


def _ambiguous(match: re.Match[str], writing: str) -> AnswerError:
    """The refusal of `1,500` (or `1.500`): one group of three digits after the other mark."""
    sign = "-" if match["sign"] == "-" else ""
    whole = f"{sign}{int(match['int'] + match['frac'])}"
    decimal = written_number(float(f"{sign}{match['int']}.{match['frac']}"), writing)
    mark = "comma" if match["mark"] == "," else "point"
    own = "commas" if writing == "decimal comma" else "points"
    return AnswerError(f"could be {whole} or {decimal} (a {mark} between thousands, or a decimal {mark}, in a project whose "
                       f"numbers are written with decimal {own})", f"write {whole} or {decimal}")  # fmt: skip


def answer_number(text: str, writing: str = "plain", unit: str | None = None) -> float:
    """A person's regression answer `text` as a finite float, read in a project written as
    `writing` says ("decimal comma", "units", "plain"; module docstring) whose target's unit is
    `unit` (`project_unit`: `12.5 kg` is 12.5 when it is "kg"); AnswerError when it is no finite
    number, could be read two ways, or carries another unit."""
    text = str(text).strip()
    other = "." if writing == "decimal comma" else ","  # the mark that is not the project's own
    one = _ONE_MARK.match(text)
    if one is not None and one["mark"] == other and _like_thousands(one):
        if writing != "units":  # 1,500: one group of three digits, after a thousands separator or a decimal mark
            raise _ambiguous(one, writing)
        one = None  # amounts written with thousands commas: 1,500 is 1500
    if one is not None:  # one mark between digits: a decimal mark, whichever
        value = float(f"{one['sign']}{one['int']}.{one['frac']}{one['exp'] or ''}")
    elif _PLAIN.match(text):
        value = float(text)
    elif unit is not None and (split := unit_after(text)) is not None:  # 12.5 kg (after _PLAIN: 1.5e3 is no unit "e3")
        number, written = split
        if not same_unit(written, unit):
            raise AnswerError(f"is in {written}, but this project's numbers are in {unit}",
                              f"write the value converted to {unit}, with or without the unit after it")  # fmt: skip
        value = answer_number(number, writing, unit)  # 12,5 kg and 1.234,5 kg: the number read as it is without the unit
    elif writing == "decimal comma" and not has_unit_sign(text):
        value = float(decimal_comma_numbers([text])[0])  # 1.234,5 and 1 234,5
    elif writing == "units" or grouped_thousands(text):
        value = float(unit_numbers([text])[0])  # 1,234.5 and 1,234,567 (and $1,200 in a project of amounts)
    else:
        value = math.nan
    if not math.isfinite(value):
        example = "151,5 or 151.5" if writing == "decimal comma" else f"151.5 or 151.5 {unit}" if unit else "151.5 or 151,5"
        raise AnswerError("is not a finite number", f"a regression label is a number, such as {example}")
    return value
