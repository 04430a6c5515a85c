"""studies/benchmark/log_counts.py: the log(1 + x) of a table's non-negative numeric columns and
the paired Δ rows (pure, no training)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from test_benchmark import _module


def _log_counts():
    return _module("log_counts")


def test_log_counts_takes_the_log_of_non_negative_numeric_features_only() -> None:
    frame = pd.DataFrame({"count": [0, 3, 15841], "signed": [-1.0, 0.0, 2.0], "gap": [1.0, np.nan, 0.0],
                          "colour": ["red", "blue", "red"], "y": [0, 1, 7]})  # fmt: skip
    out = _log_counts().log_counts(frame, "y")
    assert out["count"].tolist() == pytest.approx([0.0, math.log(4), math.log(15842)])
    assert out["gap"].iloc[0] == pytest.approx(math.log(2)) and math.isnan(out["gap"].iloc[1])
    assert out["signed"].tolist() == [-1.0, 0.0, 2.0] and out["colour"].tolist() == ["red", "blue", "red"]
    assert out["y"].tolist() == [0, 1, 7]  # the label as it was
    assert frame["count"].tolist() == [0, 3, 15841]  # the caller's frame untouched


def test_delta_rows_pair_each_arm_with_random_by_seed() -> None:
    def record(arm: str, seed: int, accuracies: list[float]) -> dict:
        return {"table": "t", "arm": arm, "seed": seed, "curve": [{"accuracy": a} for a in accuracies]}

    records = [record("random", 0, [0.5, 0.7]), record("random", 1, [0.6, 0.8]),
               record("power-epig/auto", 0, [0.7, 0.7]), record("power-epig/auto", 1, [0.7, 0.9]),
               record("margin/auto", 0, [0.5, 0.7]), record("margin/auto", 1, [0.5, 0.7])]  # fmt: skip
    rows = {arm: (base, delta, se) for _, arm, base, delta, se in _log_counts().delta_rows(records)}
    assert rows["power-epig/auto"] == pytest.approx((0.65, 0.1, 0.0))  # Δ 0.1 and 0.1
    assert rows["margin/auto"] == pytest.approx((0.65, -0.05, 0.05))  # Δ 0.0 and −0.1: sd 0.0707, SE 0.05


def test_skewness_is_the_biased_sample_skewness() -> None:
    lc = _log_counts()
    v = np.array([0.0, 0.0, 0.0, 1.0, 10.0])
    c = v - v.mean()  # mean 2.2
    assert lc.skewness(v) == pytest.approx(np.mean(c**3) / np.mean(c**2) ** 1.5)
    assert lc.skewness(np.array([1.0, 2.0, 3.0])) == pytest.approx(0.0) and lc.skewness(np.ones(4)) == 0.0
    # an exponential sample's skewness is near 2, the limit; a lognormal's far above
    rng = np.random.default_rng(0)
    assert abs(lc.skewness(rng.exponential(size=200_000)) - 2.0) < 0.1 and lc.skewness(rng.lognormal(size=10_000)) > 4


def test_skewed_columns_follow_the_rule() -> None:
    lc = _log_counts()
    heavy = [0] * 30 + list(range(1, 11)) + [500]  # 11 distinct values, skewness ~6
    frame = pd.DataFrame({
        "heavy": heavy,
        "few": [0] * 35 + [1, 2, 3, 4, 5, 500],  # 7 distinct values: left alone
        "signed": [-1] + heavy[1:],  # a negative value: left alone
        "even": list(range(41)),  # no skew
        "y": heavy,  # the label: left alone
    })
    assert lc.skewness(np.array(heavy, dtype=float)) > 2
    assert lc.skewed_columns(frame, "y") == ["heavy"]
    out = lc.log_counts(frame, "y", columns="skewed")
    assert out["heavy"].tolist() == pytest.approx(np.log1p(heavy).tolist()) and out["few"].tolist() == frame["few"].tolist()


def test_form_rows_pair_the_logged_form_with_the_table_by_seed() -> None:
    lc = _log_counts()

    def record(table: str, arm: str, seed: int, accuracy: float) -> dict:
        return {"table": table, "arm": arm, "seed": seed, "curve": [{"accuracy": accuracy}]}

    records = [record("a", "random", 0, 0.5), record("a", "random", 1, 0.6), record("a log1p", "random", 0, 0.7),
               record("a log1p", "random", 1, 0.7), record("b", "random", 0, 0.5), record("b", "random", 1, 0.5),
               record("b log1p", "random", 0, 0.4), record("b log1p", "random", 1, 0.4)]  # fmt: skip
    rows = lc.form_rows(records, ["a", "b"], ("random",))["random"]
    assert [r[0] for r in rows] == ["a", "b"]
    assert rows[0][1:] == pytest.approx((0.15, 0.05)) and rows[1][1] == pytest.approx(-0.1) and rows[1][2] == pytest.approx(0.0)
    assert lc.form_summary(rows) == "median +0.0250 over 2 tables; better / worse by > 2 SE: 1 / 1"
