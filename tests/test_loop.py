"""ActiveLearningLoop: rounds, seeds, waiting for a human, failures, and the real posteriors.

A tiny closed-form posterior (`TinySoftmax`, ridge regression on one-hot targets with seeded
weight noise) keeps these tests fast; test_loop_kill.py reuses it.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import torch

from activebayes.data import write_digits
from activebayes.errors import ConfigError, DataError, StoreError
from activebayes.loop import ActiveLearningLoop, round_seed
from activebayes.oracles import Answer, PromptOracle, SimulatedOracle
from activebayes.predictive import Predictive
from activebayes.store import PoolStore

POOL, TEST = 300, 100


class TinySoftmax:
    """Ridge regression on centred one-hot targets, W = (XᵀX + λI)⁻¹ Xᵀ(Y − 1/C), then
    p(y | x, W_s) = softmax(τ X W_s) with W_s = W + σ ε_s, ε_s ~ N(0, I) drawn from `seed`, so the
    same seed gives the same S samples for every batch."""

    def __init__(self, *, n_classes: int = 10, n_samples: int = 8, ridge: float = 1.0, seed: int = 0) -> None:
        self.n_classes, self.n_samples, self.ridge, self.seed = n_classes, n_samples, ridge, seed
        self.w_: torch.Tensor | None = None

    @staticmethod
    def _design(x: torch.Tensor) -> torch.Tensor:
        x = x.reshape(x.shape[0], -1).double()
        return torch.cat([x, torch.ones(x.shape[0], 1, dtype=x.dtype)], 1)

    def fit(self, x: torch.Tensor, y: torch.Tensor) -> TinySoftmax:
        design = self._design(x)
        targets = torch.nn.functional.one_hot(y.long(), self.n_classes).double() - 1.0 / self.n_classes
        gram = design.T @ design + self.ridge * torch.eye(design.shape[1], dtype=design.dtype)
        self.w_ = torch.linalg.solve(gram, design.T @ targets)
        return self

    def predict(self, x: torch.Tensor, n_samples: int | None = None) -> Predictive:
        s = n_samples or self.n_samples
        gen = torch.Generator().manual_seed(self.seed)
        noise = torch.randn((s, *self.w_.shape), generator=gen, dtype=torch.float64) * 0.05
        logits = 8.0 * torch.einsum("nd,sdc->snc", self._design(x), self.w_ + noise)
        return Predictive(torch.softmax(logits, -1).float())

    def predict_proba(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(8.0 * self._design(x) @ self.w_, -1).float()


def tiny_factory(seed: int) -> TinySoftmax:
    return TinySoftmax(seed=seed)


def make_project(store: PoolStore, folder: Path, name: str = "digits", pool: int = POOL, test: int = TEST) -> np.ndarray:
    """A digits project: rows 0..pool-1 the pool, the next `test` rows the labelled test split.
    Returns the truth labels of all rows."""
    path = folder / "digits.npz"
    if not path.exists():
        write_digits(path)
    store.create_project(name, task="classification", classes=range(10), data_path=path)
    store.add_items(name, rows=np.arange(pool))
    store.add_items(name, rows=np.arange(pool, pool + test), split="test")
    truth = np.load(path)["y"]
    store.record_observations(name, [(str(r), int(truth[r])) for r in range(pool, pool + test)], who="truth", source="import")
    return truth


def check_consistent(store: PoolStore, name: str, batch_size: int) -> None:
    """The invariants every resumed database must keep."""
    rounds = store.rounds(name)
    assert [r.number for r in rounds] == list(range(1, len(rounds) + 1))
    assert all(r.status in ("done", "failed") for r in rounds[:-1])
    seen: set[str] = set()
    for r in rounds:
        queries = store.queries(name, r.number)
        if r.status in ("scored", "queried", "answered", "done"):
            assert [q.rank for q in queries] == list(range(len(queries)))
            assert len(queries) == batch_size
        else:
            assert queries == []
        keys = [q.key for q in queries]
        assert not seen & set(keys), "an item was queried by two rounds"
        seen |= set(keys)
        if r.status in ("answered", "done"):
            assert all(q.value is not None for q in queries)
        assert r.labelled_count == batch_size * (r.number - 1)
    counts: dict[str, int] = {}
    for obs in store.observations(name):
        counts[obs["key"]] = counts.get(obs["key"], 0) + 1
    assert max(counts.values()) == 1, "an observation was recorded twice"


@pytest.fixture
def store(db_url):
    s = PoolStore(db_url)
    yield s
    s.close()


def test_rounds_label_new_items_and_record_metrics(store, tmp_path):
    truth = make_project(store, tmp_path)
    oracle = SimulatedOracle(truth)
    loop = ActiveLearningLoop(tiny_factory, "bald", store, "digits", oracle, batch_size=8, seed=3, device="cpu")
    results = loop.run(4)
    assert [r.number for r in results] == [1, 2, 3, 4]
    assert all(r.status == "done" and not r.resumed for r in results)
    assert [r.labelled for r in results] == [0, 8, 16, 24]
    assert results[0].metrics == {}  # cold start: random queries, no posterior yet
    for r in results[1:]:
        assert 0.0 <= r.metrics["accuracy"] <= 1.0 and r.metrics["nll"] > 0 and r.metrics["n_test"] == TEST
        assert 0.0 <= r.metrics["ece"] <= 1.0
    queried = [k for r in results for k in r.queried]
    assert len(set(queried)) == 32 and all(int(k) < POOL for k in queried)
    rows, keys, values = store.labels("digits")
    assert sorted(keys) == sorted(queried)
    assert values == [str(truth[r]) for r in rows]
    # BALD rounds record their scores in descending order (top-k)
    assert results[2].scores == sorted(results[2].scores, reverse=True) and results[2].scores[0] > 0
    assert [r.seed for r in store.rounds("digits")] == [round_seed(3, n) for n in (1, 2, 3, 4)]
    assert store.rounds("digits")[1].acquisition == "bald" and store.rounds("digits")[1].posterior == "TinySoftmax"
    check_consistent(store, "digits", 8)
    # accuracy grows with labels on digits
    assert results[-1].metrics["accuracy"] > results[1].metrics["accuracy"]


def test_same_seed_same_queries_other_seed_differs(tmp_path):
    runs = []
    for i, seed in enumerate((5, 5, 6)):
        with PoolStore(f"sqlite:///{tmp_path / f'{i}.db'}") as store:
            truth = make_project(store, tmp_path)
            loop = ActiveLearningLoop(tiny_factory, "entropy", store, "digits", SimulatedOracle(truth), batch_size=5, seed=seed)
            runs.append([r.queried for r in loop.run(3)])
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


def test_until_labels_and_exhausted_pool(store, tmp_path):
    truth = make_project(store, tmp_path, pool=23, test=0)
    loop = ActiveLearningLoop(tiny_factory, "margin", store, "digits", SimulatedOracle(truth), batch_size=5)
    assert len(loop.run(None, until_labels=12)) == 3  # 0 -> 5 -> 10 -> 15 >= 12
    results = loop.run(None)  # to the end of the pool: 15 -> 20 -> 23
    assert [len(r.queried) for r in results] == [5, 3]
    assert loop.labelled_count() == 23
    assert loop.run(None) == []
    with pytest.raises(StoreError, match="no unlabelled candidates"):
        loop.step()
    assert [r.status for r in store.rounds("digits")] == ["done"] * 5  # no round left dangling


def test_without_oracle_round_waits_for_human_answers(store, tmp_path):
    truth = make_project(store, tmp_path)
    loop = ActiveLearningLoop(tiny_factory, "bald", store, "digits", None, batch_size=4)
    first = loop.run(3)
    assert len(first) == 1 and first[0].status == "queried" and first[0].waiting
    assert store.latest_round("digits").status == "queried"
    assert loop.run(3)[0].queried == first[0].queried  # asking again does not re-draw the queries
    keys = first[0].queried
    store.record_observations("digits", [(k, int(truth[int(k)])) for k in keys[:2]], who="ann", source="cli")
    assert loop.step().status == "queried"  # half answered: still waiting
    store.record_observations("digits", [(k, int(truth[int(k)])) for k in keys[2:]], who="ann", source="cli")
    again = loop.step()
    assert again.number == 1 and again.status == "done" and again.resumed
    nxt = loop.step()
    assert nxt.number == 2 and nxt.labelled == 4 and nxt.status == "queried"


def test_prompt_oracle_quit_leaves_round_queried(store, tmp_path):
    make_project(store, tmp_path)
    out = io.StringIO()
    oracle = PromptOracle(classes=range(10), input=io.StringIO("3\ns\nq\n"), output=out)
    loop = ActiveLearningLoop(tiny_factory, "bald", store, "digits", oracle, batch_size=4, who="ann")
    result = loop.step()
    assert result.status == "queried" and result.recorded == 1
    queries = store.queries("digits", 1)
    assert queries[0].value == "3" and all(q.value is None for q in queries[1:])
    shown = out.getvalue()
    assert "item 1/4" in shown and "item 3/4" in shown and "item 4/4" not in shown
    assert any(shade in shown for shade in "░▒▓█")  # the 8x8 digit drawn with shade characters
    oracle2 = PromptOracle(classes=range(10), input=io.StringIO("1\n2\n4\n"), output=io.StringIO())
    done = ActiveLearningLoop(tiny_factory, "bald", store, "digits", oracle2, batch_size=4, who="ann").step()
    assert done.number == 1 and done.status == "done" and done.recorded == 3


class ProtocolBreaker:
    """An oracle whose ask() returns what `answer(keys)` makes of the keys."""

    stop_requested = False

    def __init__(self, answer):
        self.answer = answer

    def ask(self, keys, candidates=None):
        return self.answer(list(keys))


@pytest.mark.parametrize(
    "answer, message",
    [
        (lambda keys: [Answer(keys[0], 1)], r"answered 1 items for 4 keys asked \(3 keys unanswered"),
        (lambda keys: [(k, 1) for k in keys], r"returned tuple; it must return a list of Answer"),
        (lambda keys: {k: 1 for k in keys}, r"returned dict; it must return a list of Answer"),
        (lambda keys: [Answer(k, 1) for k in keys[:3]] + [Answer("nope", 1)], r"keys not asked \(e.g. 'nope'\)"),
    ],
)
def test_an_oracle_that_breaks_the_protocol_is_named_and_nothing_is_recorded(store, tmp_path, answer, message):
    """One Answer per key asked (value None to skip): an oracle that answers only some keys
    used to close the round as done with the rest never asked again."""
    make_project(store, tmp_path)
    loop = ActiveLearningLoop(tiny_factory, "bald", store, "digits", ProtocolBreaker(answer), batch_size=4)
    with pytest.raises(DataError, match=message):
        loop.step()
    assert all(q.value is None for q in store.queries("digits", 1)) and store.count_labelled("digits") == 0
    assert store.latest_round("digits").status != "done"


def test_changed_data_file_refused_by_the_loop(tmp_path):
    with PoolStore(f"sqlite:///{tmp_path / 'x.db'}") as store:
        truth = make_project(store, tmp_path)
        loop = ActiveLearningLoop(tiny_factory, "bald", store, "digits", SimulatedOracle(truth), batch_size=4)
        loop.step()  # cold start reads no features
        with (tmp_path / "digits.npz").open("ab") as fh:
            fh.write(b"\0")
        fresh = ActiveLearningLoop(tiny_factory, "bald", store, "digits", SimulatedOracle(truth), batch_size=4)
        with pytest.raises(DataError, match="digits.npz"):
            fresh.step()
        assert store.latest_round("digits").status == "failed"
        assert "changed" in store.latest_round("digits").failure_reason


def test_plain_score_function_and_random_acquisition(tmp_path):
    with PoolStore(f"sqlite:///{tmp_path / 'x.db'}") as store:
        truth = make_project(store, tmp_path)

        def first_class_prob(pred):
            return pred.probs.mean(0)[:, 0]

        loop = ActiveLearningLoop(tiny_factory, first_class_prob, store, "digits", SimulatedOracle(truth), batch_size=6)
        results = loop.run(2)
        assert store.rounds("digits")[1].acquisition == "first_class_prob"
        assert results[1].scores == sorted(results[1].scores, reverse=True)
        rand = ActiveLearningLoop(tiny_factory, "random", store, "digits", SimulatedOracle(truth), batch_size=6).step()
        assert rand.scores == [0.0] * 6


@pytest.mark.parametrize("acquisition", ["batch-bald"])
def test_with_mc_dropout_posterior(tmp_path, acquisition):
    from activebayes.nets import mlp
    from activebayes.posteriors.mc_dropout import MCDropout
    from activebayes.training import TrainConfig

    with PoolStore(f"sqlite:///{tmp_path / 'x.db'}") as store:
        truth = make_project(store, tmp_path, pool=120, test=40)

        def factory(seed: int) -> MCDropout:
            return MCDropout(mlp(64, 10, hidden=(32,)), n_samples=6, train=TrainConfig(epochs=3), seed=seed, device="cpu")

        loop = ActiveLearningLoop(factory, acquisition, store, "digits", SimulatedOracle(truth), batch_size=4,
                                  score_batch_size=32, prefilter_size=20)  # fmt: skip
        results = loop.run(2)
        assert [r.status for r in results] == ["done", "done"]
        assert len(set(results[1].queried)) == 4 and results[1].metrics["n_test"] == 40
        assert store.rounds("digits")[1].posterior == "MCDropout"
        torch.testing.assert_close(torch.tensor(results[1].scores) >= 0, torch.ones(4, dtype=torch.bool))


def test_progress_reports_every_scored_candidate(tmp_path):
    with PoolStore(f"sqlite:///{tmp_path / 'x.db'}") as store:
        truth = make_project(store, tmp_path)
        seen: list[tuple[int, int]] = []
        loop = ActiveLearningLoop(
            tiny_factory, "bald", store, "digits", SimulatedOracle(truth), batch_size=5, score_batch_size=7,
            progress=lambda done, total: seen.append((done, total)),
        )  # fmt: skip
        loop.run(2)  # round 1 is the random cold start; round 2 scores the pool
        candidates = POOL - 5
        assert seen[-1] == (candidates, candidates)
        assert [d for d, _ in seen] == sorted(d for d, _ in seen)
        assert len(seen) == -(-candidates // 7)


class CountingSoftmax(TinySoftmax):
    """TinySoftmax counting the items `predict` saw (pool scoring) and `predict_proba` calls."""

    predicted: list[int] = []

    def predict(self, x: torch.Tensor, n_samples: int | None = None) -> Predictive:
        CountingSoftmax.predicted.append(int(x.shape[0]))
        return super().predict(x, n_samples)


def counting_factory(seed: int) -> CountingSoftmax:
    return CountingSoftmax(seed=seed)


def test_acquisition_subset_limits_scored_items_and_is_seeded(tmp_path):
    from activebayes.loop import subset_positions

    runs = []
    for i, seed in enumerate((4, 4, 9)):
        CountingSoftmax.predicted = []
        with PoolStore(f"sqlite:///{tmp_path / f'{i}.db'}") as store:
            truth = make_project(store, tmp_path)
            seen: list[tuple[int, int]] = []
            loop = ActiveLearningLoop(counting_factory, "bald", store, "digits", SimulatedOracle(truth), batch_size=5,
                                      seed=seed, acquisition_subset=40, progress=lambda d, t: seen.append((d, t)))  # fmt: skip
            results = loop.run(3)
            runs.append([r.queried for r in results])
            assert sum(CountingSoftmax.predicted) == 2 * 40  # rounds 2 and 3 score 40 candidates each
            assert seen[-1] == (40, 40)
            # round 2's queries lie in its seeded subset of the candidates
            rnd = store.rounds("digits")[1]
            labelled = set(results[0].queried)
            candidates = [str(r) for r in range(POOL) if str(r) not in labelled]
            subset = {candidates[p] for p in subset_positions(len(candidates), 40, rnd.seed)}
            assert set(results[1].queried) <= subset
    assert runs[0] == runs[1] and runs[0] != runs[2]
    assert subset_positions(10, 40, 1).tolist() == list(range(10))
    assert subset_positions(100, 7, 1).tolist() == subset_positions(100, 7, 1).tolist() != subset_positions(100, 7, 2).tolist()
    with PoolStore(f"sqlite:///{tmp_path / '0.db'}") as store:
        with pytest.raises(ConfigError, match="acquisition_subset"):
            ActiveLearningLoop(tiny_factory, "bald", store, "digits", acquisition_subset=0)


def test_random_skips_pool_scoring_but_fits_and_evaluates_with_timings(store, tmp_path):
    truth = make_project(store, tmp_path)
    CountingSoftmax.predicted = []
    loop = ActiveLearningLoop(counting_factory, "random", store, "digits", SimulatedOracle(truth), batch_size=6, seed=1)
    results = loop.run(3)
    assert CountingSoftmax.predicted == []  # no predict over the pool
    assert all(0.0 <= r.metrics["accuracy"] <= 1.0 for r in results[1:])
    assert len(set(k for r in results for k in r.queried)) == 18
    for r in store.rounds("digits")[1:]:
        assert {"fit_s", "evaluate_s", "score_s", "ask_s"} <= set(r.timings)
        assert all(r.timings[k] >= 0 for k in ("fit_s", "evaluate_s", "score_s"))


class AlwaysZero(TinySoftmax):
    """Its deterministic prediction says class 0 for every item (hand-checkable accuracy)."""

    def predict_proba_deterministic(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.one_hot(torch.zeros(x.shape[0], dtype=torch.long), self.n_classes).float()


def test_deterministic_evaluation_uses_the_network_without_dropout(store, tmp_path):
    truth = make_project(store, tmp_path)
    loop = ActiveLearningLoop(lambda seed: AlwaysZero(seed=seed), "bald", store, "digits", SimulatedOracle(truth),
                              batch_size=5, seed=1, evaluation="deterministic")  # fmt: skip
    result = loop.run(2)[1]  # round 1 is the cold start: nothing fitted, nothing evaluated
    assert result.metrics["accuracy"] == pytest.approx(float(np.mean(truth[POOL : POOL + TEST] == 0)))
    # one-hot predictions: every item in the top confidence bin, so ECE = |accuracy - 1|
    assert result.metrics["ece"] == pytest.approx(1.0 - result.metrics["accuracy"])
    assert store.rounds("digits")[1].acquisition_settings["evaluation"] == "deterministic"
    predictive = ActiveLearningLoop(tiny_factory, "bald", store, "digits", SimulatedOracle(truth), batch_size=5, seed=1).step()
    assert predictive.metrics["accuracy"] != result.metrics["accuracy"]  # the predictive is scored by default
    with pytest.raises(ConfigError, match="evaluation: 'deterministic' needs.*TinySoftmax"):
        ActiveLearningLoop(tiny_factory, "bald", store, "digits", SimulatedOracle(truth), evaluation="deterministic").step()
    with pytest.raises(ConfigError, match="evaluation: expected one of predictive, deterministic"):
        ActiveLearningLoop(tiny_factory, "bald", store, "digits", evaluation="mc")


def test_queries_keep_the_round_s_prediction_for_each_item(store, tmp_path):
    """Each query records the fitted posterior's most probable class and its probability
    (the same predict_proba the test metrics use); a cold start records none."""
    truth = make_project(store, tmp_path)
    results = ActiveLearningLoop(tiny_factory, "bald", store, "digits", SimulatedOracle(truth), batch_size=6, seed=2).run(2)
    assert [q.prediction for q in store.queries("digits", 1)] == [None] * 6  # nothing fitted yet
    queried = store.queries("digits", 2)
    assert [q.key for q in queried] == results[1].queried
    # round 2 fitted on round 1's answers: refit the closed form and predict the queried rows by hand
    data = np.load(tmp_path / "digits.npz")
    labelled = [int(q.key) for q in store.queries("digits", 1)]
    fitted = TinySoftmax().fit(torch.from_numpy(data["x"][labelled]).float(), torch.from_numpy(truth[labelled]))
    probs = fitted.predict_proba(torch.from_numpy(data["x"][[q.row for q in queried]]).float()).double()
    best, index = probs.max(-1)
    for q, p, c in zip(queried, best.tolist(), index.tolist()):
        assert q.prediction["label"] == str(c) and q.prediction["probability"] == pytest.approx(p, rel=1e-6)
    # with evaluation="deterministic" the prediction is the network's without dropout
    zero = ActiveLearningLoop(lambda seed: AlwaysZero(seed=seed), "bald", store, "digits", SimulatedOracle(truth),
                              batch_size=3, seed=2, evaluation="deterministic").step()  # fmt: skip
    assert [q.prediction for q in store.queries("digits", zero.number)] == [{"label": "0", "probability": 1.0, "probs": "1 " + "0 " * 8 + "0"}] * 3


class ShiftedGaussian:
    """A regression posterior with a hand-computable predictive: S = 2 samples with means
    x₀ and x₀ + 1 and noise variance 0.25, so the mixture has mean x₀ + ½ and variance
    0.25 + ¼ = 0.5."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def fit(self, x: torch.Tensor, y: torch.Tensor) -> ShiftedGaussian:
        return self

    def predict(self, x: torch.Tensor, n_samples: int | None = None):
        from activebayes.predictive import GaussianPredictive

        first = x.reshape(x.shape[0], -1)[:, 0].double()
        return GaussianPredictive(torch.stack([first, first + 1.0]), torch.full((2, x.shape[0]), 0.25, dtype=torch.float64))


def test_regression_queries_keep_the_predictive_mean_and_sd(store, tmp_path):
    path = tmp_path / "digits.npz"
    write_digits(path)
    data = np.load(path)
    store.create_project("reg", task="regression", data_path=path)
    store.add_items("reg", rows=np.arange(60))
    truth = data["y"].astype(float)
    loop = ActiveLearningLoop(lambda seed: ShiftedGaussian(seed), "variance", store, "reg", SimulatedOracle(truth), batch_size=4, seed=0)
    loop.run(2)
    queried = store.queries("reg", 2)
    assert len(queried) == 4
    for q in queried:
        assert q.prediction == pytest.approx({"mean": float(data["x"][q.row, 0]) + 0.5, "sd": 0.5**0.5})


def test_a_round_result_shows_its_stop_set_by_size():
    from activebayes.loop import RoundResult

    packed = {"ids": "f00d", "n": 500, "predictions": "A" * 1300}
    shown = repr(RoundResult(1, "done", 20, ["k"], [0.5], 1, {"accuracy": 0.8, "stop_set": packed}))
    assert "'stop_set': '<500 predictions>'" in shown and "AAAA" not in shown and "'accuracy': 0.8" in shown
