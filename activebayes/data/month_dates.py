"""Dates written with the month's name, as spreadsheets and other tools show them: Excel's
`d-mmm-yy` (1-Mar-24) and long date (Friday, March 1, 2024), SAS's DATE9 (01MAR2024), and
people's 1 March 2024, Mar 1, 2024 or 1st Mar. 2024, with an optional time (14:30[:05], 2:30 PM)
after them. The month is English, its full name or first three letters (Sept too), in any case;
the name settles which number is the day, so no order is guessed. A year has four digits, or
two in the day-first form (Excel's 1-Mar-24), read as `written_dates.full_year` reads them.

    month_name_date("1-Mar-24")          # MonthDate(year=2024, month=3, day=1, ...)
    month_name_date("March 1, 2024")     # the same date
    month_name_date("Mar-24")            # None: a month without a day is no date here
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december")
_MONTH_NUMBER = {**{m: k + 1 for k, m in enumerate(MONTHS)}, **{m[:3]: k + 1 for k, m in enumerate(MONTHS)}, "sept": 9}
_WEEKDAY = r"(?:(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)(?:day|nesday|sday|urday|rsday)?\.?,?\s+)?"  # Friday, / Fri,
_MONTH = r"(?P<mon>[a-z]{3,9})\.?"
_DAY = r"(?P<d>\d{1,2})(?:st|nd|rd|th)?"
_TIME = r"(?:,?\s+(?P<H>\d{1,2}):(?P<M>\d{2})(?::(?P<S>\d{2}(?:\.\d+)?))?\s?(?P<ampm>[ap]\.?m\.?)?)?"
_DAY_FIRST = re.compile(rf"^{_WEEKDAY}{_DAY}(?P<sep>[-\s/]?){_MONTH}(?P=sep),?(?P<y>\d{{4}}|\d{{2}}){_TIME}$")  # 1-Mar-24, 01MAR2024
_MONTH_FIRST = re.compile(rf"^{_WEEKDAY}{_MONTH}[-\s]{_DAY},?[-\s](?P<y>\d{{4}}){_TIME}$")  # Mar 1, 2024; March 1st 2024


@dataclass(frozen=True)
class MonthDate:
    """A date read from its month's name: the year (four digits, a two-digit one as written
    plus `short_year`), month 1-12, day, and the time's hours, minutes, seconds and AM/PM as
    written (None where the text has no time)."""

    year: str
    month: int
    day: int
    hours: str | None
    minutes: str | None
    seconds: str | None
    ampm: str | None


def month_name_date(text: str) -> MonthDate | None:
    """The date `text` writes with its month's name (module docstring); None when it writes
    none so (no month's name, a month without a day). The day is not checked against the month:
    the caller's calendar does that."""
    lowered = text.strip().casefold()
    m = _DAY_FIRST.match(lowered) or _MONTH_FIRST.match(lowered)
    if m is None or m["mon"] not in _MONTH_NUMBER:
        return None
    return MonthDate(m["y"], _MONTH_NUMBER[m["mon"]], int(m["d"]), m["H"], m["M"], m["S"], m["ampm"])
