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
