"""A pool whose rows repeat: each round draws among distinct inputs, records the rows they stand
for and each query's group size, and its estimate speaks for the pool's rows (`activebayes.
row_weights`), which `status` names ("of 70 rows (57 distinct inputs)"); the draws over the
inputs stay uniform, so a random round's estimate is the hand-computed (N/R)(1/M) Σ m L."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from rich.console import Console

from activebayes.data.bundled import digits_arrays
from activebayes.estimates import zero_one_loss
from activebayes.loop import ActiveLearningLoop
from activebayes.oracles import SimulatedOracle
from activebayes.round_estimates import round_estimate
from activebayes.store import PoolStore
from activebayes_cli._estimates import estimate_fields, pool_text, render_estimates
from test_loop import tiny_factory

COPIES = {0: 9, 1: 4, 2: 2}  # row -> extra copies appended: groups of 10, 5 and 3 rows
DISTINCT = 57


@pytest.fixture
def store(db_url):
    s = PoolStore(db_url)
    yield s
    s.close()


def repeated_digits(path) -> np.ndarray:
    """57 different digits, then copies of rows 0, 1 and 2 (70 rows in all): x, y, keys as an npz."""
    x, y = digits_arrays()
    x, y = x[:DISTINCT], y[:DISTINCT]
    extra = [row for row, n in COPIES.items() for _ in range(n)]
    x, y = np.concatenate([x, x[extra]]), np.concatenate([y, y[extra]])
    np.savez(path, x=x, y=y, keys=np.asarray([f"r{i:03d}" for i in range(len(y))]))
    return y


def test_a_round_records_its_groups_and_estimates_the_row_mean(store, tmp_path):
    truth = repeated_digits(tmp_path / "repeated.npz")
    rows = len(truth)
    store.create_project("d", task="classification", classes=range(10), data_path=tmp_path / "repeated.npz")
    store.add_items("d", rows=np.arange(rows))
    loop = ActiveLearningLoop(tiny_factory, "random", store, "d", SimulatedOracle(truth), batch_size=5, seed=1, first="random")
    loop.run(3)
    groups = {row: 1 + COPIES.get(row, 0) for row in range(DISTINCT)}  # the first row of each group, as `_distinct` keeps it
    for rnd in store.rounds("d"):
        queries = sorted(store.queries("d", rnd.number), key=lambda q: q.rank)
        labelled_before = rnd.labelled_count
        settings = rnd.acquisition_settings
        assert settings["candidates"] == DISTINCT - labelled_before
        assert settings["copies"] == [groups[q.row] for q in queries]
        assert all(q.row < DISTINCT for q in queries)  # never a later copy while its first is unlabelled
        assert settings["candidate_rows"] == rows - sum(groups[row] for row in asked_before(store, rnd.number))
    second = store.rounds("d")[1]
    queries = sorted(store.queries("d", 2), key=lambda q: q.rank)
    estimate = round_estimate(second, queries, "classification", [str(c) for c in range(10)])
    n, r = second.acquisition_settings["candidates"], second.acquisition_settings["candidate_rows"]
    losses = zero_one_loss([q.prediction["label"] for q in queries], [q.value for q in queries])
    sizes = np.asarray(second.acquisition_settings["copies"], dtype=float)
    assert estimate.pool == r and estimate.inputs == n and estimate.labels == 5
    assert 1.0 - estimate.accuracy.value == pytest.approx(n / r * np.mean(sizes * losses))  # uniform draws: v = 1
    assert pool_text(estimate) == f"{r} rows ({n} distinct inputs)"
    assert estimate_fields(estimate)["inputs"] == n and estimate_fields(estimate)["pool"] == r
    console = Console(record=True, width=200)
    render_estimates(console, [(second, estimate)], "classification", None)
    assert f"5 labels of {r} rows ({n} distinct inputs)" in console.export_text()
    console = Console(record=True, width=200)
    render_estimates(console, [(second, replace(estimate, labels=1))], "classification", None)
    assert f"1 label of {r} rows" in console.export_text()  # not "1 labels"


def asked_before(store: PoolStore, number: int) -> list[int]:
    """The rows the rounds before `number` asked about (all answered: labelled)."""
    return [q.row for r in store.rounds("d") if r.number < number for q in store.queries("d", r.number)]


def test_a_pool_without_repeats_records_no_groups(store, tmp_path):
    x, y = digits_arrays()
    np.savez(tmp_path / "plain.npz", x=x[:40], y=y[:40], keys=np.asarray([f"r{i}" for i in range(40)]))
    store.create_project("p", task="classification", classes=range(10), data_path=tmp_path / "plain.npz")
    store.add_items("p", rows=np.arange(40))
    ActiveLearningLoop(tiny_factory, "random", store, "p", SimulatedOracle(y[:40]), batch_size=5, seed=1, first="random").run(2)
    second = store.rounds("p")[1]
    assert "copies" not in second.acquisition_settings and "candidate_rows" not in second.acquisition_settings
    estimate = round_estimate(second, store.queries("p", 2), "classification", [str(c) for c in range(10)])
    assert estimate.pool == 35 and estimate.inputs is None and pool_text(estimate) == "35"
