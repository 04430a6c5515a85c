"""studies/benchmark/baselines.py's bookkeeping: every model is fitted on the same labelled pool
rows and scored on the benchmark's test split, the labelled sets are nested and seeded, the C
search's tie rule, and the report's ratios. No test fits the default network or says which
model wins."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from test_benchmark import _module


def _recording(seen: dict[str, list[tuple]], name: str, label: int = 0):
    """A fake model that records (x, y, n_classes, seed) it is fitted on and the x it predicts, and predicts `label`."""

    def fit(x, y, n_classes, seed):
        seen[name].append(("fit", x.copy(), y.copy(), n_classes, seed))

        def predict(x_test):
            seen[name].append(("predict", x_test.copy()))
            return np.full(len(x_test), label)

        return predict

    return fit


def _iris(tmp_path: Path, seed: int):
    baselines, tables = _module("baselines"), _module("tables")
    record = tables.write_tables(tmp_path, ["iris"], 3000)["iris"]
    return baselines, baselines.prepare(tmp_path / record["file"], record["label"], record["key"], seed)


def test_the_splits_are_pool_adds_and_the_labels_read_back(tmp_path: Path) -> None:
    baselines, table = _iris(tmp_path, seed=3)
    assert table.x.shape == (150, 4) and table.classes == ["setosa", "versicolor", "virginica"]
    assert len(table.test_rows) == 45 and len(table.pool_rows) == 105  # test_fraction 0.3 of 150
    assert set(table.pool_rows).isdisjoint(table.test_rows) and set(table.pool_rows) | set(table.test_rows) == set(range(150))
    # the labels are the csv's, row by row
    rows = (tmp_path / "iris.csv").read_text().splitlines()[1:]
    names = np.asarray([line.rsplit(",", 1)[1] for line in rows])
    assert (np.asarray(table.classes)[table.pool_y] == names[table.pool_rows]).all()
    assert (np.asarray(table.classes)[table.test_y] == names[table.test_rows]).all()
    # the features are pool add's standardised ones: mean 0 over the pool rows
    np.testing.assert_allclose(table.x[table.pool_rows].mean(0), 0.0, atol=1e-5)
    # another seed, another test split
    _, other = _iris(tmp_path, seed=4)
    assert set(other.test_rows) != set(table.test_rows)


def test_labelled_sets_are_nested_seeded_and_fit_the_pool() -> None:
    baselines = _module("baselines")
    sets = baselines.labelled_sets(60, (10, 20, 50, 100), seed=1)
    assert list(sets) == [10, 20, 50]  # 100 > the pool: left out
    for small, large in ((10, 20), (20, 50)):
        assert (sets[large][:small] == sets[small]).all()
    assert len(set(sets[50].tolist())) == 50 and sets[50].max() < 60
    assert all((a == b).all() for a, b in zip(sets.values(), baselines.labelled_sets(60, (10, 20, 50), seed=1).values()))
    assert not (baselines.labelled_sets(60, (50,), seed=2)[50] == sets[50]).all()


def test_every_model_fits_the_same_labelled_rows_and_is_scored_on_the_test_split(tmp_path: Path) -> None:
    baselines, table = _iris(tmp_path, seed=0)
    seen: dict[str, list[tuple]] = {"a": [], "b": []}
    results = baselines.evaluate(table, 0, {"a": _recording(seen, "a", 0), "b": _recording(seen, "b", 2)}, sizes=(10, 20, 50, 200))
    assert [(r["labels"], r["model"]) for r in results] == [(n, m) for n in (10, 20, 50) for m in ("a", "b")]
    sets = baselines.labelled_sets(len(table.pool_rows), (10, 20, 50), 0)
    fits_a = [e for e in seen["a"] if e[0] == "fit"]
    fits_b = [e for e in seen["b"] if e[0] == "fit"]
    for (n, positions), fa, fb in zip(sets.items(), fits_a, fits_b):
        rows = table.pool_rows[positions]
        assert set(rows).isdisjoint(table.test_rows)
        for fit in (fa, fb):  # the same rows, labels and seed for both models
            np.testing.assert_array_equal(fit[1], table.x[rows])
            np.testing.assert_array_equal(fit[2], table.pool_y[positions])
            assert fit[3] == 3 and fit[4] == baselines.model_seed(0, n)
    for event in (e for name in seen for e in seen[name] if e[0] == "predict"):
        np.testing.assert_array_equal(event[1], table.x[table.test_rows])
    # a constant prediction's accuracy is its class's share of the test split
    for r in results:
        label = 0 if r["model"] == "a" else 2
        assert r["accuracy"] == np.mean(table.test_y == label)


def test_lr_on_one_class_predicts_it_and_c_ties_go_to_one() -> None:
    baselines = _module("baselines")
    x = np.asarray([[0.0], [1.0], [2.0]])
    assert (baselines.fit_lr(x, np.asarray([2, 2, 2]), 3, 0)(np.zeros((4, 1))) == 2).all()
    # far-apart classes: every C of the grid gets every held-out item right, so the tie rule picks 1
    x = np.concatenate([np.full((10, 1), -5.0), np.full((10, 1), 5.0)])
    y = np.repeat([0, 1], 10)
    assert baselines.choose_c(x, y, seed=0) == 1.0
    assert baselines.choose_c(x, y, seed=0, grid=(0.1, 10.0, 100.0)) == 0.1  # equally far from 1 in log: the smaller


def test_cv_choice_scores_held_out_folds_only() -> None:
    baselines = _module("baselines")
    x, y = np.arange(12.0).reshape(-1, 1), np.repeat([0, 1], 6)
    calls = []

    def fit_at(x_train, y_train, v):  # right on every held-out item only at v = 10; records what it trained on
        calls.append((len(x_train), v))
        return lambda x_test: y[x_test[:, 0].astype(int)] if v == 10.0 else 1 - y[x_test[:, 0].astype(int)]

    assert baselines.cv_choice(x, y, 0, (0.1, 1.0, 10.0), fit_at, folds=3) == 10.0
    assert calls == [(8, v) for v in (0.1, 1.0, 10.0) for _ in range(3)]  # 3 folds of 12: trained on 8, each value


def test_report_ratios_are_of_the_seed_means(tmp_path: Path) -> None:
    report = _module("baselines_report")

    def run(table, seed, accs):
        return {"table": table, "seed": seed, "classes": 2, "pool": 100,
                "results": [{"labels": n, "model": m, "accuracy": a, "seconds": 0.0} for (n, m), a in accs.items()]}  # fmt: skip

    runs = [run("t1", 0, {(10, "ours"): 0.6, (10, "lr"): 0.8}), run("t1", 1, {(10, "ours"): 0.8, (10, "lr"): 0.6}),
            run("t2", 0, {(10, "ours"): 0.9, (10, "lr"): 1.0, (20, "ours"): 0.5, (20, "lr"): 0.5})]  # fmt: skip
    for r in runs:
        path = tmp_path / "runs" / r["table"] / f"seed{r['seed']}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(r))
    summary = report.write_report(tmp_path)
    assert summary["ratios"]["lr"]["tables"] == {"t1": {10: 1.0}, "t2": {10: 0.9, 20: 1.0}}
    s10 = summary["ratios"]["lr"]["summary"][10]
    assert s10["median"] == pytest.approx(0.95) and s10["behind"] == 1 and s10["min_table"] == "t2" and s10["tables"] == 2
    assert s10["ahead"] == 0
    d10 = summary["ratios"]["lr"]["differences"][10]
    assert d10["mean"] == pytest.approx((0.0 - 0.1) / 2) and (d10["above"], d10["below"], d10["tables"]) == (0, 1, 2)
    assert "| lr | 0.950 (min 0.90 t2; 1 / 0 of 2) | 1.000 (min 1.00 t2; 0 / 0 of 1) |" in (tmp_path / "results.md").read_text()
