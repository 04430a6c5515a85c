"""A csv column of times without a date: clock times read as the time of day, durations as hours.

A column is read so when every value present is a time as `activebayes.data.parsed_columns`
writes the rule (`time_writing`): clock times (08:30, 14:05:10, 7:15 PM, 23:59) become the time
of day, a fraction of a day f = seconds since midnight / 86400 in [0, 1), whose features are
(sin, cos) of 2π·f (`parsed_columns.clock_features`, kind "time"); a column with an hour over 23
(95:10, 36:00:00) holds durations, read as hours, a plain number (kind "numeric", written
"duration"). Gaps are what `table_gaps` says they are, handled as any column's; a column where
half or more of the values present are times and some other value is not one (a typo, an
unlisted gap marker, a number) is refused, naming that value's line, as a column of dates is.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from activebayes.data.csv_table import CsvTable, shown
from activebayes.data.parsed_columns import DAY_SECONDS, clock_seconds, duration_hours, time_writing
from activebayes.errors import DataError

TIME_KIND = "time"  # a ColumnPlan's and a spec column's kind for clock times
DURATION = "duration"  # a numeric column's `written` for durations read as hours


class TimeColumn(NamedTuple):
    """A column read as times: `kind` TIME_KIND or "numeric", `values` [N] float64 (a clock time's
    fraction of a day, a duration's hours; NaN at a gap), `written` (DURATION or None), `note`."""

    kind: str
    values: np.ndarray
    written: str | None
    note: str


def time_values(texts: list[str], writing: str) -> np.ndarray:
    """[T] float64 each text's value as `writing` ("clock": fraction of a day; DURATION: hours) reads
    it, NaN where it is not one (`time_writing`'s readings)."""
    return clock_seconds(texts) / DAY_SECONDS if writing == "clock" else duration_hours(texts)


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
    parsed = is_clock | is_duration
    if not parsed[present].all():
        if parsed[present].mean() >= 0.5:
            at = int(np.argmax(present & ~parsed))
            example = shown(table.cell(int(np.argmax(present & parsed)), name))
            raise DataError(f"{str(table.path)!r} line {table.lines[at]}: column {name!r} holds times ({example}) but also "
                            f"{shown(table.cell(at, name))}, which is not one ({int((present & ~parsed).sum())} of {int(present.sum())} "
                            "values); correct it, or pass --na-values if it marks a gap")  # fmt: skip
        return None
    writing = time_writing([texts[k] for k in used])
    if writing is None:  # clock times beside durations: 7:15 PM and 95:10
        at, other = int(np.argmax(present & ~is_duration)), int(np.argmax(present & ~is_clock))
        raise DataError(f"{str(table.path)!r}: column {name!r} holds clock times ({shown(table.cell(at, name))}, line {table.lines[at]}) "
                        f"and durations over 23 hours ({shown(table.cell(other, name))}, line {table.lines[other]}); "
                        "write them all one way")  # fmt: skip
    values = np.append(time_values(texts, writing), np.nan)[codes]
    example = shown(table.cell(int(np.argmax(present)), name))
    if writing == "clock":
        note = (f"column {name!r} holds clock times ({example}): read as the time of day, (sin, cos) of 2π·seconds since midnight "
                "/ 86400, so 23:59 meets 00:00 (an hour over 23 would make them durations, read as hours)")  # fmt: skip
        return TimeColumn(TIME_KIND, np.where(missing, np.nan, values), None, note)
    longest = shown(texts[used[int(np.argmax(duration_hours([texts[k] for k in used])))]])
    note = f"column {name!r} holds durations ({longest}: an hour over 23, so no clock time): read as a number of hours"
    return TimeColumn("numeric", np.where(missing, np.nan, values), DURATION, note)
