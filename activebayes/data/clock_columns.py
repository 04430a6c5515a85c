"""A csv column of times without a date: clock times read as the time of day, durations as hours,
a stopwatch's times as seconds.

A column is read so when every value present is a time as `activebayes.data.written_dates`
writes the rule (`time_writing`): clock times (08:30, 14:05:10, 7:15 PM, 23:59) become the time
of day, a fraction of a day f = seconds since midnight / 86400 in [0, 1), whose features are
(sin, cos) of 2π·f (`written_dates.clock_features`, kind "time"); a column with an hour over 23
(95:10, 36:00:00) holds durations, read as hours, a plain number (kind "numeric", written
"duration"). Gaps are what `table_gaps` says they are, handled as any column's; a column where
half or more of the values present are times and some other value is not one (a typo, an
unlisted gap marker, a number) is refused, naming that value's line, as a column of dates is.

Durations under a day. Values whose hours all stay under 24 cannot tell a race's 2:05:31 from
five past two; two kinds of evidence make them durations all the same:

- a stopwatch's writing: minutes and seconds with a fraction (1:23.4, a lap time), which no
  clock writes: the column is read as seconds, two-part values as M:SS[.f] and three-part ones
  as H:MM:SS[.f] (`written_dates.stopwatch_seconds`; kind "numeric", written STOPWATCH);
- the name (`names_a_duration`, its words as `key_columns.name_words` splits them): a word of
  DURATION_WORDS (duration, elapsed, finish, lap, split, pace, race ...) and none of CLOCK_WORDS
  (start, end, departure, arrival, clock, day ...); or the name time alone (Time, times) over
  values that all have seconds and all stay under NIGHT_HOURS (6) hours: race results, not the
  day's events, which a column of clock times all before 6 am rarely is (a pizzeria's order
  times, 11:38:36, stay clock times). Read as hours, as an hour over 23 makes them (DURATION),
  with a note saying how to keep them clock times (a name with a clock's word: clock_time).

Durations written with units (`spelled_hours`): 1h 30m, 2h, 45m, 1h 30m 15s, 90 min, 2 hours 5
minutes, 1d 4h: days, hours, minutes and seconds, each at most once and in that order (d, day;
h, hr, hour; m, min, minute; s, sec, second, any case, plurals too), read as hours as an hour
over 23 makes them (DURATION), when every value present is one and none a plain number
(`read_spelled_durations`); a column of one unit alone (90 min, 45 min) is a number with a unit
as before (`parsed_columns.common_unit`), read before these.
"""

from __future__ import annotations

import math
import re
from typing import NamedTuple, Sequence

import numpy as np

from activebayes.data.csv_table import CsvTable, shown
from activebayes.data.key_columns import name_words
from activebayes.data.parsed_columns import DAY_SECONDS, clock_seconds, duration_hours, stopwatch_seconds, time_writing
from activebayes.errors import DataError

TIME_KIND = "time"  # a ColumnPlan's and a spec column's kind for clock times
DURATION = "duration"  # a numeric column's `written` for durations read as hours
STOPWATCH = "stopwatch"  # a numeric column's `written` for a stopwatch's times (1:23.4) read as seconds
DURATION_WORDS = ("duration", "elapsed", "finish", "finishing", "lap", "split", "pace", "race", "racetime", "laptime", "runtime", "chip", "gun",
                  "length", "took", "spent", "wait", "waiting", "travel", "commute", "reaction", "response", "marathon")  # fmt: skip
CLOCK_WORDS = ("clock", "start", "starting", "end", "ending", "departure", "depart", "dep", "arrival", "arrive", "arr", "day", "hour", "of",
               "at", "when", "sched", "scheduled", "open", "opening", "close", "closing", "sunrise", "sunset", "wake", "bed", "bedtime",
               "pickup", "dropoff", "capture", "onset", "stamp", "timestamp")  # fmt: skip
TIME_WORDS = ("time", "times")
NIGHT_HOURS = 6  # a column named time alone whose values all stay under this many hours (and have seconds) holds durations
_AMOUNT = r"\d+(?:\.\d+)?"
_SPELLED = re.compile(  # 1h 30m, 2 hours 5 minutes, 1d 4h, 90 min, 1h 30m 15s: hours HOUR_PARTS of each part
    rf"(?:(?P<d>{_AMOUNT})\s*(?:days?|d)[\s,]*)?(?:(?P<h>{_AMOUNT})\s*(?:hours?|hrs?|h)[\s,]*)?"
    rf"(?:(?P<m>{_AMOUNT})\s*(?:minutes?|mins?|m)[\s,]*)?(?:(?P<s>{_AMOUNT})\s*(?:seconds?|secs?|s))?",
    re.IGNORECASE,
)
HOUR_PARTS = {"d": 24.0, "h": 1.0, "m": 1 / 60, "s": 1 / 3600}


class TimeColumn(NamedTuple):
    """A column read as times: `kind` TIME_KIND or "numeric", `values` [N] float64 (a clock time's
    fraction of a day, a duration's hours; NaN at a gap), `written` (DURATION or None), `note`."""

    kind: str
    values: np.ndarray
    written: str | None
    note: str


def time_values(texts: list[str], writing: str) -> np.ndarray:
    """[T] float64 each text's value as `writing` ("clock": fraction of a day; DURATION: hours;
    STOPWATCH: seconds) reads it, NaN where it is not one (`time_writing`'s readings)."""
    if writing == STOPWATCH:
        return stopwatch_seconds(texts)
    if writing == "clock":
        return clock_seconds(texts) / DAY_SECONDS
    hours = duration_hours(texts)  # 95:10, else written with units: 1h 30m
    return np.where(np.isfinite(hours), hours, spelled_hours(texts))


def _spelled_hour(text: str) -> float:
    m = _SPELLED.fullmatch(text.strip().rstrip(",").strip())
    if m is None or not any(m.groupdict().values()):
        return math.nan
    return sum(float(v) * HOUR_PARTS[k] for k, v in m.groupdict().items() if v is not None)


def spelled_hours(texts: Sequence[str]) -> np.ndarray:
    """[T] float64 hours of durations written with units (module docstring: 1h 30m is 1.5, 45m
    0.75, 1h 30m 15s 1.504166..., 90 min 1.5, 1d 4h 28); NaN where a text is none."""
    return np.asarray([_spelled_hour(t) for t in texts], dtype=np.float64)


def read_spelled_durations(table: CsvTable, name: str, missing: np.ndarray, numeric: np.ndarray) -> TimeColumn | None:
    """Column `name` of `table` as hours (kind "numeric", written DURATION) when every value
    present is a duration written with units (`spelled_hours`) and none of them (`numeric`, [N]
    bool) a plain number; else None."""
    codes, texts = table.text_codes(name)
    present = ~missing
    if not present.any() or (numeric & present).any() or not texts:
        return None
    used = np.unique(codes[present]).tolist()
    hours = np.full(len(texts), np.nan)
    hours[used] = spelled_hours([texts[k] for k in used])
    if not np.isfinite(hours[used]).all():
        return None
    example = ", ".join(shown(texts[k]) for k in used[:3])
    note = f"column {name!r} holds durations written with units ({example}): read as a number of hours"
    return TimeColumn("numeric", np.where(missing, np.nan, np.append(hours, np.nan)[codes]), DURATION, note)


def names_a_duration(name: str, texts: list[str]) -> bool:
    """Whether column `name`, whose distinct `texts` are all clock times (hours under 24), holds
    durations by its name (module docstring): a word of DURATION_WORDS and none of CLOCK_WORDS, or
    the name time alone over values with seconds, all under NIGHT_HOURS hours. Never when a value
    has AM/PM, which only a clock writes."""
    words = name_words(name)
    if not np.isfinite(duration_hours(texts)).all() or any(w in CLOCK_WORDS for w in words):
        return False
    if any(w in DURATION_WORDS for w in words):
        return True
    seconds = all(t.count(":") == 2 for t in texts)
    return len(words) == 1 and words[0] in TIME_WORDS and seconds and bool(np.all(clock_seconds(texts) < NIGHT_HOURS * 3600))


def read_times(table: CsvTable, name: str, missing: np.ndarray, numeric: np.ndarray) -> TimeColumn | None:
    """Column `name` of `table` as times (module docstring) when every value present is one (none
    a plain number), given [N] bool `missing` and `numeric` (cells that are numbers); DataError
    naming the first value that is not one when half or more of the values present are; else None."""
    codes, texts = table.text_codes(name)
    present = ~missing
    used = np.unique(codes[present & ~numeric & (codes >= 0)]).tolist()
    if not any(":" in texts[k] for k in used):  # no time among them: not worth parsing
        return None
    is_clock = ~numeric & np.isfinite(np.append(clock_seconds(texts), np.nan)[codes])
    is_duration = ~numeric & np.isfinite(np.append(duration_hours(texts), np.nan)[codes])
    is_stopwatch = ~numeric & np.isfinite(np.append(stopwatch_seconds(texts), np.nan)[codes])
    parsed = is_clock | is_duration | is_stopwatch
    if not parsed[present].all():
        if parsed[present].mean() >= 0.5:
            at = int(np.argmax(present & ~parsed))
            example = shown(table.cell(int(np.argmax(present & parsed)), name))
            raise DataError(f"{str(table.path)!r} line {table.lines[at]}: column {name!r} holds times ({example}) but also "
                            f"{shown(table.cell(at, name))}, which is not one ({int((present & ~parsed).sum())} of {int(present.sum())} "
                            "values); correct it, or pass --na-values if it marks a gap")  # fmt: skip
        return None
    used_texts = [texts[k] for k in used]
    writing = time_writing(used_texts)
    if writing is None:  # clock times beside durations (7:15 PM and 95:10) or a stopwatch's times (1:23.4)
        at, other = int(np.argmax(present & ~is_duration & ~is_stopwatch)), int(np.argmax(present & ~is_clock))
        what = "durations over 23 hours" if is_duration[other] else "a stopwatch's times (minutes and seconds with a fraction)"
        raise DataError(f"{str(table.path)!r}: column {name!r} holds clock times ({shown(table.cell(at, name))}, line {table.lines[at]}) "
                        f"and {what} ({shown(table.cell(other, name))}, line {table.lines[other]}); write them all one way")  # fmt: skip
    values = np.append(time_values(texts, writing), np.nan)[codes]
    example = shown(table.cell(int(np.argmax(present)), name))
    if writing == "clock" and names_a_duration(name, used_texts):
        two_part = any(t.count(":") == 1 for t in used_texts)
        values = np.append(time_values(texts, DURATION), np.nan)[codes]
        how = ", H:MM as hours and minutes (were they minutes and seconds, the feature is the same once standardised)" if two_part else ""
        note = (f"column {name!r} holds durations ({example}; its name says so, though no hour is over 23): read as a number of "
                f"hours{how}; renamed with a clock's word (clock_time) the column is read as the time of day")  # fmt: skip
        return TimeColumn("numeric", np.where(missing, np.nan, values), DURATION, note)
    if writing == STOPWATCH:
        lap = shown(next(t for t in used_texts if t.count(":") == 1 and "." in t))
        note = (f"column {name!r} holds a stopwatch's times ({lap}: minutes and seconds with a fraction, which no clock writes): read as "
                "a number of seconds, M:SS as minutes and seconds, H:MM:SS as hours, minutes and seconds")  # fmt: skip
        return TimeColumn("numeric", np.where(missing, np.nan, values), STOPWATCH, note)
    if writing == "clock":
        note = (f"column {name!r} holds clock times ({example}): read as the time of day, (sin, cos) of 2π·seconds since midnight "
                "/ 86400, so 23:59 meets 00:00 (an hour over 23 would make them durations, read as hours)")  # fmt: skip
        return TimeColumn(TIME_KIND, np.where(missing, np.nan, values), None, note)
    longest = shown(texts[used[int(np.argmax(duration_hours([texts[k] for k in used])))]])
    note = f"column {name!r} holds durations ({longest}: an hour over 23, so no clock time): read as a number of hours"
    return TimeColumn("numeric", np.where(missing, np.nan, values), DURATION, note)
