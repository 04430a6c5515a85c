"""Heavy-tailed non-negative number columns read as log(1 + x) before standardising
(`activebayes.data.skewed_columns`, recorded per column in the table spec): the rule's boundaries
by hand-computed skewness, the features against hand-computed (log1p(v) − mean) / scale and
scikit-learn's own pipeline, old specs read as before, a later negative value refused."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from activebayes.data.csv_table import read_csv_table
from activebayes.data.skewed_columns import MIN_DISTINCT, SKEWNESS_LIMIT, heavy_tailed, logged_columns, skewness
from activebayes.data.table_spec import apply_table_spec, fit_table_spec
from activebayes.data.tabular import TableOptions, plan_table
from activebayes.errors import DataError

# ten zeros, then 0..9, then one outlier: g1 crosses 2 between an outlier of 19 and one of 19.25
BASE = [0] * 10 + list(range(10))


def hand_skewness(values: list[float]) -> float:
    """g1 = m3 / m2^(3/2) with exact rational moments (only the last root in floating point)."""
    v = [Fraction(x) for x in values]
    mean = sum(v) / len(v)
    m2 = sum((x - mean) ** 2 for x in v) / len(v)
    m3 = sum((x - mean) ** 3 for x in v) / len(v)
    return float(m3) / float(m2) ** 1.5


def plan_of(path: Path, text: str, **options):
    path.write_text(text)
    return plan_table(read_csv_table(path), TableOptions(label_column="label", missing="impute", **options))


def column_csv(values: list, name: str = "v") -> str:
    return f"{name},label\n" + "".join(f"{v},{'ab'[i % 2]}\n" for i, v in enumerate(values))


def test_skewness_is_the_biased_fisher_pearson_coefficient() -> None:
    from scipy.stats import skew

    assert skewness(np.array([0.0, 0.0, 0.0, 1.0])) == pytest.approx(0.5 / math.sqrt(0.1875))  # Bernoulli(1/4): (1 − 2p)/√(p(1 − p))
    for values in ([*BASE, 19], [*BASE, 19.25], [1, 5, 2, 8, 100, 3]):
        assert skewness(np.asarray(values, dtype=float)) == pytest.approx(hand_skewness(values), rel=1e-12)
        assert skewness(np.asarray(values, dtype=float)) == pytest.approx(skew(values), rel=1e-12)
    assert skewness(np.array([3.0, 3.0, 3.0])) == 0.0 and skewness(np.array([1.0])) == 0.0
    assert (SKEWNESS_LIMIT, MIN_DISTINCT) == (2.0, 10)


def test_the_rule_at_its_boundaries() -> None:
    below, above = [*BASE, 19], [*BASE, 19.25]
    assert hand_skewness(below) == pytest.approx(1.99385, abs=1e-5) and hand_skewness(above) == pytest.approx(2.02443, abs=1e-5)
    rows = np.arange(len(below))
    assert heavy_tailed(np.asarray(below, dtype=float), rows) is None  # just below 2: linear
    assert heavy_tailed(np.asarray(above, dtype=float), rows) == pytest.approx(hand_skewness(above))  # just above: logged
    with_gap = np.asarray([*above, np.nan])
    assert heavy_tailed(with_gap, np.arange(with_gap.size)) == pytest.approx(hand_skewness(above))  # gaps are not values
    negative = np.asarray([*above[:-2], -1.0, 19.25])  # still skewed, but one value below 0
    assert skewness(negative) > SKEWNESS_LIMIT and heavy_tailed(negative, rows) is None
    few = np.asarray([0.0] * 30 + [1, 2, 3, 4, 5, 6, 7, 500])  # 9 distinct values, skewness over 5
    assert skewness(few) > 5 and heavy_tailed(few, np.arange(few.size)) is None
    assert heavy_tailed(np.asarray([*few, 8.0]), np.arange(few.size + 1)) is not None  # the tenth distinct value
    # the rule reads the pool rows: the outlier among the test rows leaves the pool's ten values linear
    assert heavy_tailed(np.asarray([*BASE, 19.25]), np.arange(len(BASE))) is None


def test_a_negative_value_outside_the_pool_rows_still_keeps_the_column_linear() -> None:
    """Every row of the file is read with the spec (the test split too): log1p must take them all."""
    values = np.asarray([*BASE, 19.25, -3.0])
    assert heavy_tailed(values, np.arange(len(BASE) + 1)) is None


def test_only_numeric_columns_are_logged(tmp_path: Path) -> None:
    days = [f"2024-01-{d:02d}" for d in [1] * 10 + list(range(1, 11))] + ["2024-12-31"]  # skewed days since 1970
    amounts = [f'"${v:,}"' for v in [*[0] * 10, *range(10), 19000]]  # parsed values: 0..9 and 19,000
    durations = [f"{24 + v}:00" for v in [*[0] * 10, *range(10), 190]]  # hours written 95:10
    text = "d,a,h,n,label\n" + "".join(f"{d},{a},{h},{n},{'ab'[i % 2]}\n" for i, (d, a, h, n) in enumerate(zip(days, amounts, durations, [*BASE, 19.25])))
    plan = plan_of(tmp_path / "kinds.csv", text)
    kinds = {c.name: (c.kind, c.written) for c in plan.columns}
    assert kinds == {"d": ("date", None), "a": ("numeric", "units"), "h": ("numeric", "duration"), "n": ("numeric", None)}
    assert set(logged_columns(plan, np.arange(21))) == {"a", "n"}


def test_features_are_the_standardised_log_of_the_pool_values(tmp_path: Path) -> None:
    values = [*BASE, 19.25, 7, 300]
    text = column_csv([*values[:5], "", *values[5:]])  # a gap on row 5
    plan = plan_of(tmp_path / "t.csv", text)
    pool = np.arange(5, len(values) + 1)  # rows 0-4 (zeros) are the test split: 19 values and a gap in the pool
    logged = logged_columns(plan, pool)
    assert list(logged) == ["v"]
    spec = fit_table_spec(plan, pool, logged=logged)
    entry = spec["columns"][0]
    assert entry["log"] is True and entry["indicator"] is True
    cells = [*values[:5], None, *values[5:]]
    pool_values = sorted(cells[r] for r in pool.tolist() if cells[r] is not None)
    assert len(pool_values) == 18
    median = (pool_values[8] + pool_values[9]) / 2  # 18 values: the mean of the two middle ones, before the log
    assert entry["fill"] == median
    filled = np.log1p([median if cells[r] is None else cells[r] for r in pool.tolist()])
    mean, sd = filled.sum() / filled.size, math.sqrt(((filled - filled.sum() / filled.size) ** 2).sum() / filled.size)
    assert (entry["mean"], entry["scale"]) == pytest.approx((mean, sd), rel=1e-12)
    x, names = apply_table_spec(plan.table, spec)
    assert names == ["v (log)", "v (missing)"]
    expected = [(math.log1p(median if v is None else v) - mean) / sd for v in cells]
    np.testing.assert_allclose(x[:, 0], expected, rtol=1e-6, atol=1e-6)
    assert x[:, 1].tolist() == [float(v is None) for v in cells]


def test_the_applied_spec_is_scikit_learns_log_and_scaler(tmp_path: Path) -> None:
    """An independent reference: SimpleImputer(median), FunctionTransformer(np.log1p) and
    StandardScaler fitted on the pool rows of each logged column; the others StandardScaler alone."""
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer, StandardScaler

    rng = np.random.default_rng(0)
    n = 200
    visits = np.round(np.exp(rng.normal(2.0, 1.5, n)))  # log-normal counts
    money = np.round(rng.pareto(1.5, n) * 1000, 2)
    age = np.round(rng.normal(40, 10, n), 1)
    visits[[3, 50]] = np.nan
    rows = ["visits,money,age,label", *(f"{'' if np.isnan(v) else int(v)},{m},{a},{'ab'[i % 2]}" for i, (v, m, a) in enumerate(zip(visits, money, age)))]
    plan = plan_of(tmp_path / "t.csv", "\n".join(rows) + "\n")
    pool = np.sort(rng.permutation(n)[:150])
    logged = logged_columns(plan, pool)
    assert set(logged) == {"visits", "money"}
    spec = fit_table_spec(plan, pool, logged=logged)
    x, names = apply_table_spec(plan.table, spec)
    assert names == ["visits (log)", "visits (missing)", "money (log)", "age"]
    for (column, values), entry in zip((("visits", visits), ("money", money)), spec["columns"]):
        reference = make_pipeline(SimpleImputer(strategy="median"), FunctionTransformer(np.log1p), StandardScaler())
        expected = reference.fit(values[pool, None]).transform(values[:, None])[:, 0]
        np.testing.assert_allclose(x[:, names.index(f"{column} (log)")], expected, rtol=1e-5, atol=1e-5)
        imputer, scaler = reference[0], reference[-1]
        assert (entry["fill"], entry["mean"], entry["scale"]) == (imputer.statistics_[0], scaler.mean_[0], scaler.scale_[0])  # bit for bit
    np.testing.assert_allclose(x[:, 3], StandardScaler().fit(age[pool, None]).transform(age[:, None])[:, 0], rtol=1e-5, atol=1e-5)


def test_a_spec_without_log_reads_as_before(tmp_path: Path) -> None:
    """A spec recorded before the rule (no "log" key) gives z = (v − mean) / scale under the
    column's own name, for the very column the rule would log now."""
    values = [*BASE, 19.25]
    plan = plan_of(tmp_path / "t.csv", column_csv(values))
    rows = np.arange(len(values))
    old = fit_table_spec(plan, rows)
    assert "log" not in old["columns"][0] and old["version"] == 2
    x, names = apply_table_spec(plan.table, old)
    arr = np.asarray(values, dtype=float)
    assert names == ["v"]
    np.testing.assert_allclose(x[:, 0], (arr - arr.mean()) / arr.std(), rtol=1e-6)
    new = fit_table_spec(plan, rows, logged=logged_columns(plan, rows))
    assert new["columns"][0]["log"] is True and apply_table_spec(plan.table, new)[1] == ["v (log)"]


def test_a_negative_value_in_a_logged_column_is_refused_naming_its_line(tmp_path: Path) -> None:
    plan = plan_of(tmp_path / "t.csv", column_csv([*BASE, 19.25]))
    rows = np.arange(len(BASE) + 1)
    spec = fit_table_spec(plan, rows, logged=logged_columns(plan, rows))
    later = tmp_path / "later.csv"
    later.write_text("v,label\n3,a\n-0.5,b\n")
    with pytest.raises(DataError) as refused:
        apply_table_spec(read_csv_table(later), spec)
    message = str(refused.value)
    assert "\n" not in message
    for words in (repr(str(later)), "line 3", "column 'v'", "-0.5", "below 0", "log(1 + x)", "--log-skewed"):
        assert words in message, (words, message)
