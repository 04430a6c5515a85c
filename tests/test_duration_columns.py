"""Durations under a day (`activebayes.data.clock_columns`): a stopwatch's times (1:23.4, minutes
and seconds with a fraction, which no clock writes) are read as seconds, and a column named as
durations (finish_time, lap, pace; Time over race results like 02:55:10, all under 6 hours) as
hours, where before both were the time of day (or, 1:23.4, no time at all). Clock columns stay
clock times: departures, a pizzeria's order times named time, values with AM/PM."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from activebayes.data.clock_columns import names_a_duration
from activebayes.data.csv_table import read_csv_table
from activebayes.data.parsed_columns import stopwatch_seconds, time_writing
from activebayes.data.table_spec import apply_table_spec, fit_table_spec
from activebayes.data.tabular import TableOptions, plan_table
from activebayes.errors import DataError

RACE = ["02:55:10", "02:42:00", "2:54:38", "03:10:05", "02:39:44"]
LAPS = ["1:23.4", "59:12.5", "1:02:03", "0:58.25", "12:00"]


def test_stopwatch_seconds_against_hand_computed_times():
    assert stopwatch_seconds(LAPS).tolist() == pytest.approx([83.4, 3552.5, 3723, 58.25, 720])
    assert stopwatch_seconds(["2:05:31.2", "125:03.1"]).tolist() == pytest.approx([7531.2, 7503.1])
    assert np.isnan(stopwatch_seconds(["7:15 PM", "1:60.0", "1:60:00", "1:23", "1.23.4", "1:2.5", "soon"])[[0, 1, 2, 4, 5, 6]]).all()


@pytest.mark.parametrize(
    ("texts", "writing"),
    [
        (LAPS, "stopwatch"),  # 1:23.4: minutes and seconds with a fraction
        (["1:23.4", "0:58.25"], "stopwatch"),
        (["1:23", "12:00"], "clock"),  # no fraction: nothing tells them from clock times
        (["09:45:30.5", "14:05"], "clock"),  # a fraction of a second after the hour: a clock may write it
        (["1:23.4", "7:15 PM"], None),  # a stopwatch's time beside a clock's
    ],
)
def test_the_stopwatch_writing(texts, writing):
    assert time_writing(texts) == writing


@pytest.mark.parametrize(
    ("name", "texts", "duration"),
    [
        ("finish_time", RACE, True),
        ("FinishTime", RACE, True),
        ("lap", ["1:23", "1:31", "1:19"], True),
        ("Pace", ["7:42:12", "8:13:00"], True),
        ("Time", RACE, True),  # race results named time alone: seconds, all under 6 hours
        ("times", ["0:45:10", "1:02:00"], True),
        ("departure_time", RACE, False),
        ("start_time", RACE, False),
        ("time_of_day", RACE, False),
        ("clock_time", RACE, False),
        ("time", ["11:38:36", "11:57:40", "22:01:05"], False),  # a pizzeria's orders: hours past 6
        ("time", ["02:30", "03:45"], False),  # no seconds: as a clock's 02:30 is written
        ("time", ["02:30:00", "03:45:10", "08:00:00"], False),
        ("CaptureTime", ["13:30", "10:30"], False),
        ("race_time", ["7:15 PM", "8:00 PM"], False),  # AM/PM: only a clock writes it
        ("when", RACE, False),
    ],
)
def test_a_name_that_says_durations(name, texts, duration):
    assert names_a_duration(name, texts) is duration


def write(path: Path, header: str, rows: list[str]) -> Path:
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path


def plan(path: Path):
    return plan_table(read_csv_table(path), TableOptions(label_column="label", missing="impute"))


def test_race_results_named_time_are_hours_and_recorded_so(tmp_path):
    rows = [f"{'NA' if i == 2 else RACE[i % len(RACE)]},{'ab'[i % 2]}" for i in range(30)]
    p = plan(write(tmp_path / "r.csv", "Time,label", rows))
    time = p.columns[0]
    assert (time.kind, time.written) == ("numeric", "duration")
    assert time.numbers[:2].tolist() == pytest.approx([2 + 55 / 60 + 10 / 3600, 2.7]) and np.isnan(time.numbers[2])
    assert ("column 'Time' holds durations ('02:55:10'; its name says so, though no hour is over 23): read as a number of hours; renamed "
            "with a clock's word (clock_time) the column is read as the time of day") in p.notes  # fmt: skip
    spec = fit_table_spec(p, np.arange(30), standardize=False)
    later = write(tmp_path / "more.csv", "Time,label", ["3:01:00,a", "02:42:00,b"])
    np.testing.assert_allclose(apply_table_spec(read_csv_table(later), spec)[0][:, 0], [3 + 1 / 60, 2.7], rtol=1e-6)


def test_two_part_durations_by_name_say_how_they_are_read(tmp_path):
    rows = [f"{('1:23', '1:31', '1:19')[i % 3]},{'ab'[i % 2]}" for i in range(24)]
    p = plan(write(tmp_path / "l.csv", "lap,label", rows))
    assert (p.columns[0].kind, p.columns[0].written) == ("numeric", "duration")
    assert any("H:MM as hours and minutes (were they minutes and seconds, the feature is the same once standardised)" in n for n in p.notes)


def test_a_stopwatch_column_is_seconds_and_recorded_so(tmp_path):
    rows = [f"{LAPS[i % len(LAPS)]},{'ab'[i % 2]}" for i in range(30)]
    p = plan(write(tmp_path / "s.csv", "split,label", rows))
    split = p.columns[0]
    assert (split.kind, split.written) == ("numeric", "stopwatch")
    assert split.numbers[:5].tolist() == pytest.approx([83.4, 3552.5, 3723, 58.25, 720])
    assert ("column 'split' holds a stopwatch's times ('1:23.4': minutes and seconds with a fraction, which no clock writes): read as a "
            "number of seconds, M:SS as minutes and seconds, H:MM:SS as hours, minutes and seconds") in p.notes  # fmt: skip
    spec = fit_table_spec(p, np.arange(30), standardize=False)
    assert spec["columns"][0]["written"] == "stopwatch"
    later = write(tmp_path / "more.csv", "split,label", ["2:00.5,a", "1:00:00,b"])
    np.testing.assert_allclose(apply_table_spec(read_csv_table(later), spec)[0][:, 0], [120.5, 3600], rtol=1e-6)
    bad = write(tmp_path / "bad.csv", "split,label", ["2:00.5,a", "soon,b"])
    with pytest.raises(DataError, match=r"line 3: column 'split' is not a number \('soon'\)"):
        apply_table_spec(read_csv_table(bad), spec)


def test_a_stopwatch_time_beside_a_clock_time_is_refused_naming_both(tmp_path):
    rows = [f"{('1:23.4', '7:15 PM')[i % 2]},{'ab'[i % 2]}" for i in range(24)]
    with pytest.raises(DataError, match=r"column 'when' holds clock times \('7:15 PM', line 3\) and a stopwatch's times \(minutes and seconds "
                                        r"with a fraction\) \('1:23.4', line 2\); write them all one way"):  # fmt: skip
        plan(write(tmp_path / "m.csv", "when,label", rows))


def test_clock_columns_stay_clock_times(tmp_path):
    for name, values in (("departure_time", RACE), ("time", ["11:38:36", "11:57:40", "22:01:05"]), ("when", ["08:30", "14:05", "7:15 PM"])):
        rows = [f"{values[i % len(values)]},{'ab'[i % 2]}" for i in range(24)]
        p = plan(write(tmp_path / "c.csv", f"{name},label", rows))
        assert (p.columns[0].kind, p.columns[0].written) == ("time", None)
        assert any(n.startswith(f"column {name!r} holds clock times") for n in p.notes)
