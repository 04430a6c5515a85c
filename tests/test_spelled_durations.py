"""Durations written with units (`activebayes.data.clock_columns.spelled_hours`): 1h 30m, 2h,
45m, 1h 30m 15s, 90 min, read as hours, as 95:10 is, when every value present is one; before,
a column of them was categories (or refused). A column of one unit alone stays a number with
that unit, and a column where some value is no duration stays as it was."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from activebayes.data.clock_columns import spelled_hours
from activebayes.data.csv_table import read_csv_table
from activebayes.data.table_spec import apply_table_spec, fit_table_spec
from activebayes.data.tabular import TableOptions, plan_table
from activebayes.errors import DataError
from cli_checks import ok
from table_files import write_csv

SPELLED = ["1h 30m", "2h", "45m", "1h 30m 15s", "90 min", "2 hours 5 minutes", "1H30M", "1d 4h"]
HOURS = [1.5, 2, 0.75, 1.5 + 15 / 3600, 1.5, 2 + 5 / 60, 1.5, 28]


def test_spelled_hours_against_hand_computed_ones():
    assert spelled_hours(SPELLED).tolist() == pytest.approx(HOURS)
    assert spelled_hours(["1.5 hrs", "20 secs", "3 days, 2 hours", "10 sec"]).tolist() == pytest.approx([1.5, 20 / 3600, 74, 10 / 3600])
    assert np.isnan(spelled_hours(["", "90", "30m 1h", "1h 2h", "soon", "h", "1h and 30m", "5 km", "12:30"])).all()


def rows_with(column: list[str], n: int = 32) -> list[list[str]]:
    return [[f"k{i}", column[i % len(column)], str(i % 5), "ab"[i % 2]] for i in range(n)]


def plan(path: Path, **options):
    return plan_table(read_csv_table(path), TableOptions(label_column="label", missing="impute", **options))


@pytest.mark.parametrize("categorical", ["auto", "error"])
def test_a_column_of_spelled_durations_is_hours_at_every_load(tmp_path, categorical):
    column = [*SPELLED, "", "NA"]
    p = plan(write_csv(tmp_path / "d.csv", ["key", "took", "x", "label"], rows_with(column)), categorical=categorical)
    took = p.columns[0]
    assert (took.kind, took.written) == ("numeric", "duration")
    assert took.numbers[:8].tolist() == pytest.approx(HOURS) and np.isnan(took.numbers[8:10]).all()
    assert "column 'took' holds durations written with units ('1h 30m', '2h', '45m'): read as a number of hours" in p.notes
    spec = fit_table_spec(p, np.arange(32), standardize=False)
    assert spec["columns"][0]["written"] == "duration"
    later = write_csv(tmp_path / "more.csv", ["key", "took", "x", "label"], [["m1", "3h 15m", "1", "a"], ["m2", "95:10", "2", "b"]])
    np.testing.assert_allclose(apply_table_spec(read_csv_table(later), spec)[0][:, 0], [3.25, 95 + 10 / 60], rtol=1e-6)
    bad = write_csv(tmp_path / "bad.csv", ["key", "took", "x", "label"], [["m1", "3h", "1", "a"], ["m2", "soon", "2", "b"]])
    with pytest.raises(DataError, match=r"line 3: column 'took' is not a number \('soon'\)"):
        apply_table_spec(read_csv_table(bad), spec)


@pytest.mark.parametrize(
    ("column", "kind", "written"),
    [
        (["90 min", "45 min", "120 min"], "numeric", "unit:min"),  # one unit: a number with it, as before
        (["2h", "3h", "1h"], "numeric", "unit:h"),
        (["1h 30m", "2h", "45m", "soon"], "categorical", None),  # some value no duration: as before
        (["1h 30m", "2h", "45m", "12"], "categorical", None),  # a plain number among them
    ],
)
def test_other_columns_read_as_before(tmp_path, column, kind, written):
    p = plan(write_csv(tmp_path / "o.csv", ["key", "took", "x", "label"], rows_with(column)), categorical="force")
    assert (p.columns[0].kind, p.columns[0].written) == (kind, written)


def test_pool_add_reads_spelled_durations(cli_db):
    """On SQLite and PostgreSQL: the column is a feature, with its note."""
    write_csv(Path("d.csv"), ["key", "took", "x", "label"], rows_with(SPELLED))
    ok("init", "--name", "t")
    added = json.loads(ok("--json", "pool", "add", "d.csv").stdout)
    assert added["pool_items"] == 32 and added["features"] == [2]  # took, x
    assert any("'took' holds durations written with units" in n for n in added["notes"])
