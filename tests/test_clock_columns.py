"""A column of clock times without a date (08:30, 14:05:10, 7:15 PM) is read as the time of day,
(sin, cos) of 2π·seconds since midnight / 86400, and a column with an hour over 23 (95:10) as
hours (`activebayes.data.clock_columns`); before, such a column was one-hot encoded or left out
as an identifier. Recorded in the spec, so an appended file is read the same way."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from activebayes.data.csv_table import read_csv_table
from activebayes.data.parsed_columns import DAY_SECONDS, calendar_features, clock_features, clock_seconds, duration_hours, time_writing
from activebayes.data.table_spec import _object_matrix, apply_table_spec, build_pipeline, fit_table_spec
from activebayes.data.tabular import TableOptions, plan_table
from activebayes.errors import DataError
from cli_checks import assert_mistake, db_dump, feature_rows, ok, run

TINY = ("--epochs", "2", "--samples", "4", "--device", "cpu")
CLOCKS = ["08:30", "14:05", "7:15 PM", "23:59", "14:05:10", "00:10", "12:00 AM", "12:30 pm", "6:00", "9:45:30.5"]


def test_clock_seconds_against_hand_computed_times():
    seconds = [8 * 3600 + 30 * 60, 14 * 3600 + 5 * 60, 19 * 3600 + 15 * 60, 23 * 3600 + 59 * 60, 14 * 3600 + 5 * 60 + 10, 600, 0,
               12 * 3600 + 30 * 60, 6 * 3600, 9 * 3600 + 45 * 60 + 30.5]  # fmt: skip
    assert clock_seconds(CLOCKS).tolist() == seconds
    bad = ["24:00", "12:60", "13:00 PM", "0:30 AM", "8:5", "830", "8.30", "2024-03-01 08:30", "1:23:60", "soon", ""]
    assert np.isnan(clock_seconds(bad)).all()


def test_duration_hours_against_hand_computed_durations():
    assert duration_hours(["95:10", "1:30:00", "0:45", "36:00:00", "100:00:36"]).tolist() == pytest.approx([95 + 1 / 6, 1.5, 0.75, 36, 100.01])
    assert np.isnan(duration_hours(["7:15 PM", "1:60", "1:30:60", "1.5", "abc"])).all()


@pytest.mark.parametrize(
    ("texts", "writing"),
    [
        (CLOCKS, "clock"),
        (["1:23:45", "2:09:37", "5:50:00"], "clock"),  # every hour under 24: nothing tells a duration from a time of day
        (["1:23:45", "95:10"], "duration"),  # an hour over 23
        (["24:00", "08:00"], "duration"),
        (["7:15 PM", "95:10"], None),  # a clock time beside a duration
        (["08:30", "soon"], None),
        ([], None),
    ],
)
def test_the_time_writing_rule(texts, writing):
    assert time_writing(texts) == writing


def test_clock_features_are_the_time_on_a_circle():
    fraction = clock_seconds(["00:00", "06:00", "12:00", "18:00", "23:59"]) / DAY_SECONDS
    x = clock_features(fraction)
    np.testing.assert_allclose(x[:4], [[0, 1], [1, 0], [0, -1], [-1, 0]], atol=1e-12)
    assert np.linalg.norm(x[4] - x[0]) == pytest.approx(2 * math.sin(math.pi / 1440))  # a minute before midnight: a minute's chord away
    days = np.asarray([19_783.25, 19_783.75])  # 2024-03-01 at 06:00 and 18:00
    np.testing.assert_allclose(calendar_features(days, clock=True)[:, -2:], clock_features(days % 1))  # a date's time of day: the same parts


def write(path: Path, header: str, rows: list[str]) -> Path:
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path


def test_a_clock_column_is_planned_recorded_and_equals_the_pipeline(tmp_path):
    """A gap (NA) gets the median fraction and an indicator, as a number's would."""
    rows = [f"{'NA' if i == 3 else CLOCKS[i % len(CLOCKS)]},{i % 5},{'ab'[i % 2]}" for i in range(30)]
    p = plan_table(read_csv_table(write(tmp_path / "c.csv", "when,x,label", rows)), TableOptions(label_column="label", missing="impute"))
    when = p.columns[0]
    assert (when.kind, when.written) == ("time", None)
    assert when.numbers[:3].tolist() == pytest.approx([8.5 / 24, (14 + 5 / 60) / 24, 19.25 / 24]) and math.isnan(when.numbers[3])
    assert any(n.startswith("column 'when' holds clock times ('08:30'): read as the time of day") for n in p.notes)
    spec = fit_table_spec(p, np.arange(30))
    x, names = apply_table_spec(p.table, spec)
    assert names[:3] == ["when (time sin)", "when (time cos)", "when (missing)"]
    matrix = _object_matrix(p)
    np.testing.assert_allclose(x, build_pipeline(p).fit(matrix).transform(matrix), atol=1e-5)
    entry = spec["columns"][0]
    assert entry["fill"] == pytest.approx(np.median(np.delete(when.numbers, 3))) and entry["indicator"]
    z = (clock_features([entry["fill"]]) - np.asarray(entry["mean"])) / np.asarray(entry["scale"])
    np.testing.assert_allclose(x[3, :2], z[0], rtol=1e-5)


def test_a_column_with_an_hour_over_23_is_hours(tmp_path):
    rows = [f"{('95:10', '1:30:00', '0:45')[i % 3]},{'ab'[i % 2]}" for i in range(24)]
    p = plan_table(read_csv_table(write(tmp_path / "d.csv", "took,label", rows)), TableOptions(label_column="label"))
    took = p.columns[0]
    assert (took.kind, took.written) == ("numeric", "duration")
    assert took.numbers[:3].tolist() == pytest.approx([95 + 1 / 6, 1.5, 0.75])
    assert "column 'took' holds durations ('95:10': an hour over 23, so no clock time): read as a number of hours" in p.notes
    spec = fit_table_spec(p, np.arange(24), standardize=False)
    assert spec["columns"][0]["written"] == "duration"
    np.testing.assert_allclose(apply_table_spec(p.table, spec)[0][:3, 0], [95 + 1 / 6, 1.5, 0.75], rtol=1e-6)


def test_a_clock_column_with_a_stray_value_names_it(tmp_path):
    rows = [f"{'soon' if i == 4 else CLOCKS[i % len(CLOCKS)]},{'ab'[i % 2]}" for i in range(30)]
    with pytest.raises(DataError, match=r"line 6: column 'when' holds times \('08:30'\) but also 'soon', which is not one \(1 of 30 values\).*--na-values"):
        plan_table(read_csv_table(write(tmp_path / "s.csv", "when,label", rows)), TableOptions(label_column="label"))
    rows = [f"{('7:15 PM', '95:10')[i % 2]},{'ab'[i % 2]}" for i in range(30)]
    with pytest.raises(DataError, match=r"column 'when' holds clock times \('7:15 PM', line 2\) and durations over 23 hours \('95:10', line 3\)"):
        plan_table(read_csv_table(write(tmp_path / "m.csv", "when,label", rows)), TableOptions(label_column="label"))


def test_pool_add_reads_clock_times_and_appends_them_the_same_way(cli_db):
    """The reproduction: a clock column, one-hot encoded (6 rows) or left out as an identifier
    (40 rows) before; now 2 features of the time of day, a round runs, an appended file is read
    with the recorded spec (and the feature cache rebuilt from it), and one whose column no longer
    parses is refused with nothing written."""
    rows = [f"{i + 1},{'' if i == 3 else CLOCKS[i % len(CLOCKS)]},{i % 7}.0,{'ab'[i % 2]}" for i in range(40)]
    write(Path("t.csv"), "id,when,x,y", rows)
    ok("init", "--name", "t")
    added = ok("pool", "add", "t.csv", "--label-column", "y", "--no-standardize")
    out = " ".join((added.stdout + added.stderr).split())
    assert "column 'when' holds clock times ('08:30'): read as the time of day" in out
    assert "Features: numbers (1): x; times of day (1): when (3 features); 4 in all." in out
    ok("init", "--name", "j")
    summary = json.loads(ok("--json", "--project", "j", "pool", "add", "t.csv", "--label-column", "y").stdout)
    assert summary["columns"]["when"] == {"kind": "time", "features": 3}  # sin, cos and the gap's indicator
    ok("--project", "t", "round", *TINY, "--k", "4", "--oracle", "truth", "--seed", "0")
    before = db_dump(cli_db)
    write(Path("bad.csv"), "id,when,x,y", ["100,06:00,1.0,a", "101,8.30,2.0,b"])
    assert_mistake(run("--project", "t", "pool", "add", "bad.csv", "--append"), "line 3", "'when'", "'8.30'", "HH:MM", "not a clock time")
    assert db_dump(cli_db) == before
    write(Path("more.csv"), "id,when,x,y", ["100,06:00,1.0,a", "101,7:15 PM,2.0,b", "102,,3.0,a"])
    ok("--project", "t", "pool", "add", "more.csv", "--append")
    x = feature_rows("t", ["when (time sin)", "when (time cos)", "when (missing)"], ["100", "101", "102", "4"])
    angle = 2 * math.pi * 19.25 / 24
    np.testing.assert_allclose(x[:2], [[1, 0, 0], [math.sin(angle), math.cos(angle), 0]], atol=1e-6)
    assert x[2] == x[3] and x[2][2] == 1  # a gap, appended or not: the recorded fill, and its indicator
    cached = list(Path("activebayes-cache").glob("t-*.features.npy"))
    assert len(cached) == 1
    cached[0].unlink()  # the feature cache rebuilt from the spec: the same features
    assert feature_rows("t", ["when (time sin)", "when (time cos)", "when (missing)"], ["100", "101", "102", "4"]) == x
