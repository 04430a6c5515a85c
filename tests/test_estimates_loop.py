"""What the loop records for the estimates: each query's draw probability (random, stochastic,
top-k, auto's random share), the candidates a round drew from, the stop set's predictions with
the change between rounds, and the debias weights read back from those records."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from activebayes.acquisition import resolve_acquisition
from activebayes.acquisition.batch import uniform_draw_probabilities
from activebayes.debias import acquisition_weights, lure_training_weights
from activebayes.loop import ActiveLearningLoop
from activebayes.oracles import SimulatedOracle
from activebayes.stopping import unpack_predictions
from activebayes.store import PoolStore
from test_loop import POOL, make_project, tiny_factory


@pytest.fixture
def store(db_url):
    s = PoolStore(db_url)
    yield s
    s.close()


def loop(store, truth, acquisition, **kw):
    return ActiveLearningLoop(tiny_factory, acquisition, store, "digits", SimulatedOracle(truth), batch_size=5, seed=3, **kw)


def test_random_then_power_draws_record_their_probabilities(store, tmp_path):
    truth = make_project(store, tmp_path)
    runner = loop(store, truth, "power-bald")
    runner.run(3)
    first = store.queries("digits", 1)
    np.testing.assert_allclose([q.probability for q in first], uniform_draw_probabilities(POOL, 5).numpy())
    assert store.rounds("digits")[0].acquisition_settings["candidates"] == POOL
    second = store.rounds("digits")[1]
    assert second.acquisition_settings["candidates"] == POOL - 5
    probabilities = [q.probability for q in store.queries("digits", 2)]
    assert all(0 < p <= 1 for p in probabilities) and len(set(probabilities)) > 1
    # the recorded q is the stochastic selector's: recompute it from the round's stored scores
    ids, scores = store.round_scores("digits", 2)
    generator = torch.Generator().manual_seed(second.seed)
    again = resolve_acquisition("power-bald").select(torch.from_numpy(scores), 5, generator)
    assert [int(ids[i]) for i in again.indices] == [q.item_id for q in store.queries("digits", 2)]
    np.testing.assert_allclose(again.probabilities.numpy(), probabilities, rtol=1e-5)


def test_top_k_records_none(store, tmp_path):
    truth = make_project(store, tmp_path)
    loop(store, truth, "bald").run(2)
    assert all(q.probability is None for q in store.queries("digits", 2))


def test_auto_records_its_random_share_as_uniform_draws(store, tmp_path):
    truth = make_project(store, tmp_path)
    loop(store, truth, "auto", auto_arms=("bald",)).run(2)
    rnd = store.rounds("digits")[1]
    n_random = rnd.acquisition_settings["auto"]["random"]
    queries = sorted(store.queries("digits", 2), key=lambda q: q.rank)
    assert all(q.probability is None for q in queries[: 5 - n_random])  # the arm's top-k
    rest = rnd.acquisition_settings["candidates"] - (5 - n_random)
    np.testing.assert_allclose([q.probability for q in queries[5 - n_random :]], uniform_draw_probabilities(rest, n_random).numpy())


def test_rounds_keep_stop_set_predictions_and_their_change(store, tmp_path):
    truth = make_project(store, tmp_path)
    runner = loop(store, truth, "power-bald")
    runner.stop_set_size = 40
    runner.run(4)
    rounds = store.rounds("digits")
    assert "stop_set" not in rounds[0].metrics  # a cold start has no model
    sets = [r.metrics["stop_set"] for r in rounds[1:]]
    assert {s["n"] for s in sets} == {40} and len({s["ids"] for s in sets}) == 1
    previous, current = (unpack_predictions(s["predictions"]) for s in sets[-2:])
    assert rounds[-1].metrics["changed"] == pytest.approx(float(np.mean(previous != current)))
    assert -1.0 <= rounds[-1].metrics["agreement"] <= 1.0 and "changed" not in rounds[1].metrics


def test_debias_weights_from_the_records(store, tmp_path):
    truth = make_project(store, tmp_path)
    runner = loop(store, truth, "power-bald", debias=True)
    runner.run(3)
    assert store.rounds("digits")[-1].acquisition_settings["debias"] is True
    rows, keys, _ = store.labels("digits")
    weights = dict(zip(keys, lure_training_weights(store, "digits", keys)))
    order = []
    for rnd in store.rounds("digits"):
        for j, q in enumerate(store.queries("digits", rnd.number)):
            order.append((q.key, q.probability, rnd.acquisition_settings["candidates"], j))
    expected = acquisition_weights(order, POOL)
    assert weights == pytest.approx(expected)
    assert all(weights[q.key] == pytest.approx(1.0) for q in store.queries("digits", 1))  # uniform draws weigh 1


def test_the_store_checks_probabilities_and_evaluation_sets(store, tmp_path):
    from activebayes.errors import DataError, StoreError

    truth = make_project(store, tmp_path)
    store.start_round("digits", posterior="p", acquisition="power-bald", seed=0)
    store.advance_round("digits", 1, "fitted")
    ids, _ = store.candidates("digits")
    with pytest.raises(DataError, match="draw probability"):
        store.record_queries_and_scores("digits", 1, ids[:2].tolist(), [0.0, 0.0], timings={}, probabilities=[0.5, 1.5])
    with pytest.raises(DataError, match="probabilities"):
        store.record_queries_and_scores("digits", 1, ids[:2].tolist(), [0.0, 0.0], timings={}, probabilities=[0.5])
    assert store.queries("digits", 1) == []  # refused before anything was written
    store.record_queries_and_scores("digits", 1, ids[:2].tolist(), [0.0, 0.0], timings={}, probabilities=[0.25, None], candidates=len(ids))
    assert [q.probability for q in store.queries("digits", 1)] == [0.25, None]
    assert store.rounds("digits")[0].acquisition_settings["candidates"] == len(ids)
    key_of = dict(zip(store.items("digits")[0].tolist(), store.items("digits")[2]))
    store.record_observations("digits", [(key_of[int(ids[5])], int(truth[int(key_of[int(ids[5])])]))], who="t", source="t")
    with pytest.raises(StoreError, match="not an unlabelled pool item"):
        store.record_evaluation_set("digits", [int(ids[5])], {"items": []})
    assert store.count_items("digits", split="eval") == 0 and "evaluation" not in store.project("digits").settings
    store.record_evaluation_set("digits", ids[10:13].tolist(), {"items": [1, 2, 3]})
    assert store.count_items("digits", split="eval") == 3 and store.count_candidates("digits") == len(ids) - 3 - 1
    with pytest.raises(StoreError, match="already has an evaluation set"):
        store.record_evaluation_set("digits", ids[20:21].tolist(), {"items": [1]})
