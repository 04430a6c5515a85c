"""Dates and times written as text in a csv column. Each function that reads a column takes its
distinct texts ([T] strings) and returns [T] float64, NaN where a text is not of its kind, so a
column is of a kind exactly when none of its present values is NaN (as
`activebayes.data.parsed_columns` reads amounts with units).

- `iso_days`: an ISO 8601 date, 2024-03-01 or 2024/03/01, with an optional time after a T or a
  space (14:30, 14:30:05, 14:30:05.25) and zone (Z, +01:00, -0500): days since 1970-01-01 UTC,
  the time as the fraction of a day.
- `date_order` and `written_days`: dates written day-first or month-first, as spreadsheets in
  most countries save them (31/12/2024, 12/31/2024, 31.12.2024, 31-12-2024, a four-digit year,
  or a two-digit one after slashes as in spreadsheets' short dates, 8/6/20, where 00-29 are
  2000-2029 and 30-99 are 1930-1999 (`full_year`, Excel's rule); an optional time 14:30[:05] or 2:30 PM after a space): the order is "dmy" when some first
  number is over 12 or the separator is a dot, "mdy" when some second number is over 12, and
  "either" when no value settles it (every value reads both ways: refused, never guessed); and
  "named" for dates written with the month's name (1-Mar-24, Mar 1, 2024, 01MAR2024:
  `activebayes.data.month_dates`), where the name settles the order.
- `calendar_features`: [N, F] what a network is given for a date: the days themselves (a trend),
  the season as (sin, cos) of 2π·day-of-year/365.25, the weekday as (sin, cos) of 2π·w/7 (w = 0
  on Monday), and, for a column with times, the time of day as (sin, cos) of 2π·(days mod 1), so
  that December meets January and Sunday meets Monday.
- `clock_seconds`, `duration_hours` and `time_writing`: a column of times alone, without a date
  (08:30, 14:05:10, 7:15 PM, 23:59): `clock_features` gives the time of day as (sin, cos) of
  2π·(seconds since midnight / 86400), the CLOCK_PARTS of a date with a time, so 23:59 meets
  00:00. A column with an hour over 23 (95:10, 36:00:00) is no clock: it holds durations, read
  as hours (95:10 is 95 h 10 min), a plain number. H:MM is read as hours and minutes in both, so
  one column is never read two ways (95:10 could be minutes and seconds; a clock's 14:05 never
  is). A column whose every hour is 23 or less is read as clock times, 1:23:45 as 01:23:45: its
  values alone cannot tell a duration of 1 h 23 min from a time of 1.23 am, and a clock on the
  circle still orders durations within a day (a race's 2:09:37 to 5:50:00), where hours would
  wrongly tie 23:59 and 00:01 far apart (`activebayes.data.clock_columns` reads such a column as
  durations when its name says so). `stopwatch_seconds`: times as a stopwatch writes them, M:SS.f
  (1:23.4, a lap) beside H:MM:SS[.f]: a column with minutes and seconds and a fraction is no
  clock (a clock writes no fraction of a second without the hour), read as seconds, its two-part
  values as minutes and seconds.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Sequence

import numpy as np

from activebayes.data.month_dates import month_name_date

_ISO_DATE = re.compile(
    r"^(?P<y>\d{4})(?P<sep>[-/])(?P<m>\d{1,2})(?P=sep)(?P<d>\d{1,2})"
    r"(?:[T ](?P<H>\d{1,2}):(?P<M>\d{2})(?::(?P<S>\d{2}(?:\.\d+)?))?)?"
    r"\s?(?P<tz>Z|[+-]\d{2}:?\d{2})?$"
)
_LOCAL_DATE = re.compile(
    r"^(?P<a>\d{1,2})(?P<sep>[/.-])(?P<b>\d{1,2})(?P=sep)(?P<y>\d{4}|\d{2})"
    r"(?:,?\s(?P<H>\d{1,2}):(?P<M>\d{2})(?::(?P<S>\d{2}(?:\.\d+)?))?\s?(?P<ampm>[AaPp]\.?[Mm]\.?)?)?$"
)
_CLOCK = re.compile(r"^(?P<H>\d{1,2}):(?P<M>\d{2})(?::(?P<S>\d{2}(?:\.\d+)?))?(?:\s?(?P<ampm>[AaPp]\.?[Mm]\.?))?$")
_DURATION = re.compile(r"^(?P<H>\d+):(?P<M>\d{2})(?::(?P<S>\d{2}(?:\.\d+)?))?$")
_STOPWATCH = re.compile(r"^(?:(?P<H>\d+):(?=\d{2}:))?(?P<M>\d+):(?P<S>\d{2}(?:\.\d+)?)$")  # 1:23.4, 59:12, 2:05:31.2
_LAP = re.compile(r"^\d+:\d{2}\.\d+$")  # minutes and seconds with a fraction: a stopwatch's, never a clock's
DATE_ORDERS = {"ymd": "YYYY-MM-DD", "dmy": "DD/MM/YYYY", "mdy": "MM/DD/YYYY", "named": "D Mon YYYY"}
EPOCH = dt.date(1970, 1, 1).toordinal()
TWO_DIGIT_YEAR_CUT = 30  # a two-digit year below this is 20yy, else 19yy (`full_year`)
YEAR_DAYS, WEEK_DAYS, DAY_SECONDS = 365.25, 7.0, 86400.0
CALENDAR_PARTS = ("days", "season sin", "season cos", "weekday sin", "weekday cos")
CLOCK_PARTS = ("time sin", "time cos")


def _day(year: int, month: int, day: int, hours: int, minutes: int, seconds: float, offset: int = 0) -> float:
    """Days since 1970-01-01 UTC of a date and time (`offset` minutes ahead of UTC); NaN for a
    date or time that does not exist (2024-02-30, month 13, 25:00)."""
    try:
        whole = dt.date(year, month, day).toordinal() - EPOCH
    except ValueError:
        return math.nan
    if hours > 23 or minutes > 59 or seconds >= 61:
        return math.nan
    return whole + (hours * 3600 + minutes * 60 + seconds - offset * 60) / 86400.0


def _iso_day(text: str) -> float:
    m = _ISO_DATE.match(text)
    if m is None:
        return math.nan
    tz = (m["tz"] or "Z").replace(":", "")
    offset = 0 if tz == "Z" else (1 if tz[0] == "+" else -1) * (int(tz[1:3]) * 60 + int(tz[3:5]))
    return _day(int(m["y"]), int(m["m"]), int(m["d"]), int(m["H"] or 0), int(m["M"] or 0), float(m["S"] or 0), offset)


def iso_days(texts: Sequence[str]) -> np.ndarray:
    """[T] float64 days since 1970-01-01 UTC of ISO 8601 dates (module docstring), NaN elsewhere."""
    return np.asarray([_iso_day(t) for t in texts], dtype=np.float64)


def _local_day(text: str, order: str) -> float:
    m = _LOCAL_DATE.match(text)
    if m is None or (m["sep"] == "." and order != "dmy") or (len(m["y"]) == 2 and m["sep"] != "/"):  # 1.2.10: a version, not a date
        return math.nan
    day, month = (int(m["a"]), int(m["b"])) if order == "dmy" else (int(m["b"]), int(m["a"]))
    hours = _hour_of_day(int(m["H"] or 0), m["ampm"])
    if hours is None:
        return math.nan
    return _day(full_year(m["y"]), month, day, hours, int(m["M"] or 0), float(m["S"] or 0))


def _named_day(text: str) -> float:
    """Days since 1970-01-01 of a date written with its month's name (`month_dates`), NaN elsewhere."""
    m = month_name_date(text)
    hours = None if m is None else _hour_of_day(int(m.hours or 0), m.ampm)
    if m is None or hours is None:
        return math.nan
    return _day(full_year(m.year), m.month, m.day, hours, int(m.minutes or 0), float(m.seconds or 0))


def _hour_of_day(hours: int, ampm: str | None) -> int | None:
    """The 24-hour hour of `hours` written with `ampm` (AM, p.m., ...: 12 AM is 0, 7 PM is 19),
    `hours` itself without one; None for an hour outside 1-12 beside AM/PM."""
    if not ampm:
        return hours
    return hours % 12 + 12 * (ampm[0] in "Pp") if 1 <= hours <= 12 else None


def full_year(written: str) -> int:
    """The year of a date written with four digits, or with two as spreadsheets' short dates
    write it (8/6/20): 00-29 are 2000-2029 and 30-99 are 1930-1999, Excel's rule."""
    year = int(written)
    return year if len(written) == 4 else year + (2000 if year < TWO_DIGIT_YEAR_CUT else 1900)


def date_order(texts: Sequence[str]) -> str | None:
    """How the dates among `texts` written 31/12/2024 or 12/31/2024 order day and month (module
    docstring): "dmy" or "mdy" when some value exists in that order alone, "either" when every
    one that exists does in both, "mixed" when some exist in one order alone and some in the
    other, "named" when none exists in either but some are written with the month's name
    (`month_dates`), None when none is a date so written. A text that is no date in either order (a typo, a
    gap marker) settles nothing."""
    day_first = month_first = both = False
    for t in texts:
        dmy, mdy = math.isfinite(_local_day(t, "dmy")), math.isfinite(_local_day(t, "mdy"))
        day_first, month_first, both = day_first or (dmy and not mdy), month_first or (mdy and not dmy), both or (dmy and mdy)
    if day_first != month_first:
        return "dmy" if day_first else "mdy"
    if day_first or both:
        return "mixed" if day_first else "either"
    return "named" if any(math.isfinite(_named_day(t)) for t in texts) else None


def written_days(texts: Sequence[str], order: str = "ymd") -> np.ndarray:
    """[T] float64 days since 1970-01-01 of dates written in `order` (DATE_ORDERS: "ymd" is ISO
    8601, `iso_days`; "dmy", "mdy" and "named" as `date_order` finds them), NaN where a text is not one."""
    if order == "ymd":
        return iso_days(texts)
    if order == "named":
        return np.asarray([_named_day(t) for t in texts], dtype=np.float64)
    return np.asarray([_local_day(t, order) for t in texts], dtype=np.float64)


def has_times(texts: Sequence[str]) -> bool:
    """Whether any of the dates `texts` (ISO, or day- or month-first) carries a time of day."""
    return any((m := _ISO_DATE.match(t) or _LOCAL_DATE.match(t)) is not None and m["H"] is not None
               or (named := month_name_date(t)) is not None and named.hours is not None for t in texts)


def calendar_features(days: np.ndarray, clock: bool = False) -> np.ndarray:
    """[N, 5] (or [N, 7] with `clock`) float64 of [N] days since 1970-01-01 (no NaN): days,
    season sin/cos, weekday sin/cos (then time-of-day sin/cos); the names are CALENDAR_PARTS
    (+ CLOCK_PARTS)."""
    days = np.asarray(days, dtype=np.float64).reshape(-1)
    whole = np.floor(days)
    year_start = whole.astype("datetime64[D]").astype("datetime64[Y]").astype("datetime64[D]").astype(np.float64)  # 1 January, in days
    season = 2 * np.pi * (days - year_start) / YEAR_DAYS
    weekday = 2 * np.pi * np.mod(whole + 3, WEEK_DAYS) / WEEK_DAYS  # 1970-01-01 was a Thursday (w = 3)
    parts = [days, np.sin(season), np.cos(season), np.sin(weekday), np.cos(weekday)]
    stacked = np.stack(parts, axis=1)
    return np.concatenate([stacked, clock_features(days - whole)], axis=1) if clock else stacked


def _clock_second(text: str) -> float:
    m = _CLOCK.match(text.strip())
    if m is None:
        return math.nan
    hours, minutes, seconds = _hour_of_day(int(m["H"]), m["ampm"]), int(m["M"]), float(m["S"] or 0)
    if hours is None or hours > 23 or minutes > 59 or seconds >= 60:
        return math.nan
    return hours * 3600 + minutes * 60 + seconds


def clock_seconds(texts: Sequence[str]) -> np.ndarray:
    """[T] float64 seconds since midnight of clock times H:MM or H:MM:SS[.f], with an optional
    AM/PM (7:15 PM is 69300); NaN where a text is none (25:00, 12:60, 13:00 PM, a date, a number)."""
    return np.asarray([_clock_second(t) for t in texts], dtype=np.float64)


def _duration_hour(text: str) -> float:
    m = _DURATION.match(text.strip())
    if m is None or int(m["M"]) > 59 or float(m["S"] or 0) >= 60:
        return math.nan
    return int(m["H"]) + int(m["M"]) / 60 + float(m["S"] or 0) / 3600


def duration_hours(texts: Sequence[str]) -> np.ndarray:
    """[T] float64 hours of durations H:MM or H:MM:SS[.f], any number of hours, no AM/PM (95:10 is
    95.1667, 1:30:00 is 1.5); NaN where a text is none."""
    return np.asarray([_duration_hour(t) for t in texts], dtype=np.float64)


def _stopwatch_second(text: str) -> float:
    m = _STOPWATCH.match(text.strip())
    if m is None or float(m["S"]) >= 60 or (m["H"] is not None and int(m["M"]) > 59):
        return math.nan
    return int(m["H"] or 0) * 3600 + int(m["M"]) * 60 + float(m["S"])


def stopwatch_seconds(texts: Sequence[str]) -> np.ndarray:
    """[T] float64 seconds of times as a stopwatch writes them: M:SS[.f] (minutes and seconds,
    1:23.4 is 83.4) or H:MM:SS[.f] (2:05:31 is 7531); NaN where a text is none (7:15 PM, 1:60.0)."""
    return np.asarray([_stopwatch_second(t) for t in texts], dtype=np.float64)


def time_writing(texts: Sequence[str]) -> str | None:
    """How a column's texts (no gap among them) write times (module docstring): "clock" when every
    one is a clock time, "stopwatch" when every one is a stopwatch's time and some is minutes and
    seconds with a fraction (1:23.4, which no clock writes), "duration" when every one is a
    duration and some hour is over 23 (or some is 24:00), None otherwise (no texts, or some text
    none of these)."""
    if not texts:
        return None
    if np.isfinite(clock_seconds(texts)).all():
        return "clock"
    if any(_LAP.match(t.strip()) for t in texts) and np.isfinite(stopwatch_seconds(texts)).all():
        return "stopwatch"
    return "duration" if np.isfinite(duration_hours(texts)).all() else None


def clock_features(fraction: np.ndarray) -> np.ndarray:
    """[N, 2] float64 (sin, cos) of 2π·`fraction`, [N] fractions of a day (seconds since midnight
    / DAY_SECONDS, no NaN): the time of day on a circle, named CLOCK_PARTS."""
    angle = 2 * np.pi * np.asarray(fraction, dtype=np.float64).reshape(-1)
    return np.stack([np.sin(angle), np.cos(angle)], axis=1)
