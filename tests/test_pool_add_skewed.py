"""`pool add --log-skewed` of a table with a heavy-tailed count column: read as log(1 + x) before
standardising, with a note and `(log)` in the summary; recorded, so the feature cache's rebuild and
`--append` read it alike and an appended value below 0 is refused (one line, exit 2, nothing
written). Without the option it stays linear and one note names it; with --no-standardize the
option is refused. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from cli_checks import assert_mistake, db_dump, feature_rows, ok, run


def visits(i: int) -> int:
    """Row i's count: 1 to 65,536, most of them small (skewness 2.8 over rows 0-39, 17 values)."""
    return 2 ** ((i * 7) % 17)


def write_rows(path: Path, start: int, stop: int, *, negative_at: int | None = None) -> Path:
    lines = ["id,visits,age,label"]
    for i in range(start, stop):
        count = -2 if i == negative_at else visits(i)
        lines.append(f"k{i},{count},{20 + (i * 13) % 41},{'ab'[i % 2]}")
    path.write_text("\n".join(lines) + "\n")
    return path


def cache_files() -> list[str]:
    folder = Path("activebayes-cache")
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def spec_of(project: str = "t") -> dict:
    import os

    from activebayes.store import PoolStore

    with PoolStore(os.environ["ACTIVEBAYES_DB"]) as store:
        return store.project(project).settings["features"]


@pytest.fixture
def db(cli_db):
    ok("init", "--name", "t")
    write_rows(Path("t.csv"), 0, 40)
    return cli_db


def test_a_heavy_tailed_column_is_read_as_its_log_and_appended_rows_alike(db):
    from activebayes.data.skewed_columns import skewness

    counts = np.asarray([visits(i) for i in range(40)], dtype=float)
    g1 = skewness(counts)
    assert g1 == pytest.approx(2.81, abs=0.01)
    from activebayes_cli.pool import read_as

    summary = json.loads(ok("--json", "pool", "add", "t.csv", "--label-column", "label", "--log-skewed").stdout)
    note = f"column 'visits' is heavy-tailed (skewness {g1:.1f}, no negative values): its feature is log(1 + x), standardised"
    assert note in summary["notes"] and not any("'age'" in n for n in summary["notes"])  # age (skewness near 0) stays linear
    assert summary["columns"] == {"visits": {"kind": "numeric", "features": 1, "log": True}, "age": {"kind": "numeric", "features": 1}}
    assert read_as(summary["columns"]) == "numbers (2): visits (log), age; 2 in all"  # the summary's Features: line
    assert read_as({"visits": {"kind": "numeric", "features": 2, "log": True}}) == "numbers (1): visits (log; 2 features); 2 in all"  # with a gap indicator
    entry, age = spec_of()["columns"]
    assert entry["log"] is True and "log" not in age
    logs = np.log1p(counts)
    assert (entry["mean"], entry["scale"]) == pytest.approx((logs.mean(), logs.std()), rel=1e-12)
    keys = [f"k{i}" for i in range(40)]
    expected = (logs - logs.mean()) / logs.std()
    np.testing.assert_allclose(np.asarray(feature_rows("t", ["visits (log)"], keys))[:, 0], expected, rtol=1e-5, atol=1e-6)

    for npy in Path("activebayes-cache").glob("*.features.npy"):  # the cache is rebuilt from the recorded spec
        npy.unlink()
    np.testing.assert_allclose(np.asarray(feature_rows("t", ["visits (log)"], keys))[:, 0], expected, rtol=1e-5, atol=1e-6)

    write_rows(Path("more.csv"), 40, 45)
    ok("pool", "add", "more.csv", "--append")
    new = [f"k{i}" for i in range(40, 45)]
    appended = (np.log1p([visits(i) for i in range(40, 45)]) - logs.mean()) / logs.std()  # the first import's mean and scale
    np.testing.assert_allclose(np.asarray(feature_rows("t", ["visits (log)"], new))[:, 0], appended, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(feature_rows("t", ["visits (log)"], keys))[:, 0], expected, rtol=1e-5, atol=1e-6)

    write_rows(Path("bad.csv"), 50, 53, negative_at=51)
    before, files = db_dump(db), cache_files()
    assert_mistake(run("pool", "add", "bad.csv", "--append"), "'bad.csv' line 3", "column 'visits'", "-2", "below 0", "--log-skewed")
    assert db_dump(db) == before and cache_files() == files
    assert_mistake(run("pool", "add", "more.csv", "--append", "--log-skewed"), "--append: --log-skewed cannot be given")


@pytest.mark.parametrize("option", [None, "--no-standardize"])
def test_without_log_skewed_it_stays_linear_and_a_note_names_it(db, option):
    summary = json.loads(ok("--json", "pool", "add", "t.csv", "--label-column", "label", *([option] if option else [])).stdout)
    assert summary["columns"]["visits"] == {"kind": "numeric", "features": 1}  # no "log"
    hints = [note for note in summary["notes"] if "heavy-tailed" in note]
    if option is None:  # one note names the column and the option
        assert hints == ["heavy-tailed number column(s), no value below 0 (skewness over 2): 'visits' (2.8); --log-skewed reads them "
                         "as log(1 + x) before standardising (README: it helps on some tables, costs on others)"]  # fmt: skip
    else:  # numbers raw: nothing to log
        assert hints == []
    assert all("log" not in c for c in spec_of()["columns"])
    counts = np.asarray([visits(i) for i in range(40)], dtype=float)
    linear = (counts - counts.mean()) / counts.std() if option is None else counts
    got = np.asarray(feature_rows("t", ["visits"], [f"k{i}" for i in range(40)]))[:, 0]
    np.testing.assert_allclose(got, linear, rtol=1e-5, atol=1e-6)
    write_rows(Path("more.csv"), 50, 53, negative_at=51)  # linear: a value below 0 is a number like any
    ok("pool", "add", "more.csv", "--append")
    scaled = spec_of()["columns"][0]
    assert feature_rows("t", ["visits"], ["k51"])[0][0] == pytest.approx((-2 - scaled["mean"]) / scaled["scale"], rel=1e-5)
    assert math.isfinite(feature_rows("t", ["visits"], ["k52"])[0][0])


def test_log_skewed_is_for_a_standardised_table(db):
    np.save("x.npy", np.ones((5, 2)))
    before = db_dump(db)
    assert_mistake(run("pool", "add", "x.npy", "--log-skewed"), "--log-skewed: only a .csv file has columns")
    assert_mistake(run("pool", "add", "t.csv", "--label-column", "label", "--log-skewed", "--no-standardize"), "--log-skewed", "--no-standardize")
    assert db_dump(db) == before
