"""`first="auto"`: TypiClust's typical batch while the labels stay within two a class, then the
acquisition. Checked round by round against `typical_batch` on the recorded labels and by the
rule's arithmetic, never by a training outcome."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from activebayes._selection import TYPICAL_LABELS_PER_CLASS, PoolSelection
from activebayes.acquisition.typical import typical_batch
from activebayes.errors import ConfigError


def rule(first="auto", task="classification", classes=5, batch=10, candidates=1000, labelled=0):
    """`_low_budget` on a stand-in of the loop: what a round with `labelled` labels records."""
    fake = SimpleNamespace(first=first, batch_size=batch, _info=SimpleNamespace(task=task, classes=list(range(classes))),
                           store=SimpleNamespace(count_candidates=lambda project: candidates), project="p")  # fmt: skip
    return PoolSelection._low_budget(fake, labelled)


def test_the_rule_is_labels_plus_batch_within_two_a_class():
    assert TYPICAL_LABELS_PER_CLASS == 2
    assert rule(classes=5) == {"labels": 0, "classes": 5}  # 0 + 10 <= 10
    assert rule(classes=5, labelled=10) is None  # 20 > 10
    assert rule(classes=10, labelled=10) == {"labels": 10, "classes": 10}  # 20 <= 20: a second typical round
    assert rule(classes=10, labelled=20) is None
    assert rule(classes=4) is None and rule(classes=2) is None  # a first batch of 10 already gives 2.5 a class
    assert rule(classes=32, labelled=50) == {"labels": 50, "classes": 32} and rule(classes=32, labelled=60) is None
    assert rule(classes=3, batch=2, labelled=4) == {"labels": 4, "classes": 3}  # 4 + 2 <= 6
    assert rule(classes=2, batch=10, candidates=3, labelled=0) == {"labels": 0, "classes": 2}  # k = the 3 candidates left
    assert rule(first="random", classes=10) is None and rule(first="typical", classes=10) is None
    assert rule(task="regression", classes=0) is None
    assert rule(classes=0) is None  # classes not known: nothing to count against


def _rounds(tmp_path, name: str, rounds: int = 4, **options) -> list:
    from test_loop import make_project, tiny_factory

    from activebayes.loop import ActiveLearningLoop
    from activebayes.oracles import SimulatedOracle
    from activebayes.store import PoolStore

    with PoolStore(f"sqlite:///{tmp_path / (name + '.db')}") as store:
        truth = make_project(store, tmp_path, name)
        loop = ActiveLearningLoop(tiny_factory, store=store, project=name, oracle=SimulatedOracle(truth), batch_size=10, seed=7, **options)
        loop.run(rounds)
        return [(r.acquisition_settings, [(int(q.key), q.score) for q in store.queries(name, r.number)]) for r in store.rounds(name)]


def test_ten_classes_take_two_typical_rounds_then_the_acquisition(tmp_path):
    """Digits (10 classes), batches of 10: rounds 1 and 2 (0 and 10 labels) are TypiClust's batch
    of the candidates clustered with the labelled items (in item order), with zero scores; round 3 (20 labels)
    scores with BALD. The same seed gives the same queries."""
    from test_loop import POOL

    from activebayes.data import load_dataset
    from activebayes.loop import round_seed

    rounds = _rounds(tmp_path, "auto", acquisition="bald", first="auto")
    x = load_dataset(tmp_path / "digits.npz").x
    labelled: list[int] = []
    for number, (settings, queries) in enumerate(rounds, start=1):
        keys = [k for k, _ in queries]
        if number <= 2:
            assert settings["typical"] == {"labels": len(labelled), "classes": 10}
            candidates = [r for r in range(POOL) if r not in labelled]
            expected = typical_batch(x[candidates], 10, labelled=x[sorted(labelled)] if labelled else None, seed=round_seed(7, number))
            assert keys == [candidates[i] for i in expected.tolist()]
            assert {s for _, s in queries} == {0.0}
        else:
            assert "typical" not in settings and any(s != 0.0 for _, s in queries)  # BALD's scores
        labelled += keys
    assert rounds[0][0]["first"] == "auto" and "first" not in rounds[1][0]
    assert _rounds(tmp_path, "auto2", acquisition="bald", first="auto") == rounds


def test_other_first_batches_keep_their_meaning(tmp_path):
    """`first="random"` (the library's default) and "typical" never take a typical batch after the
    first; an unknown value is refused."""
    for first in ("random", "typical"):
        rounds = _rounds(tmp_path, first, rounds=3, acquisition="bald", first=first)
        assert not any("typical" in s for s, _ in rounds) and rounds[0][0]["first"] == first
        assert any(score != 0.0 for _, score in rounds[1][1])  # round 2 scores with BALD
    with pytest.raises(ConfigError, match="first: expected one of typical, random, auto"):
        _rounds(tmp_path, "bad", acquisition="bald", first="uniform")


def test_cli_says_which_rounds_are_typical(cli_db, tmp_path):
    """Five classes and --k 2 under the CLI's default --first auto: rounds with 0-8 labels take
    typical items (L + 2 <= 10), their titles and status say so; round 6 (10 labels) scores.
    With --first random no round is typical."""
    import csv
    import json

    from cli_checks import ok

    from activebayes_cli._model import DEFAULT_FIRST

    assert DEFAULT_FIRST == "auto"
    with open("t.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "a", "b", "label"])
        for i in range(100):
            writer.writerow([f"r{i}", f"{i % 5 + 0.01 * i:.3f}", f"{(7 * i) % 11:.1f}", "abcde"[i % 5]])
    ok("init", "--name", "t")
    ok("pool", "add", "t.csv", "--test-fraction", "0.2", "--label-column", "label", "--key-column", "id")
    tiny = ("--oracle", "truth", "--device", "cpu", "--samples", "2", "--epochs", "2", "--k", "2", "--acquisition", "bald")
    first = " ".join(ok("round", *tiny).stdout.split())
    assert "(TypiClust's typical items: no labels yet, 5 classes)" in first
    second = " ".join(ok("round", *tiny).stdout.split())
    assert "(TypiClust's typical items: 2 labels so far, 5 classes)" in second
    for _ in range(4):
        ok("round", *tiny)
    rounds = json.loads(ok("--json", "status").stdout)["rounds"]
    assert [r.get("typical", {}).get("labels") for r in rounds] == [0, 2, 4, 6, 8, None]
    assert all(r["typical"]["classes"] == 5 for r in rounds[:5]) and rounds[0]["first"] == "auto"
    assert "bald, typical: 8 labels, 5 classes" in " ".join(ok("status").stdout.split())
    ok("init", "--name", "u")
    ok("--project", "u", "pool", "add", "t.csv", "--test-fraction", "0.2", "--label-column", "label", "--key-column", "id")
    ok("--project", "u", "round", "--first", "random", *tiny)
    ok("--project", "u", "round", "--first", "random", *tiny)
    plain = json.loads(ok("--project", "u", "--json", "status").stdout)["rounds"]
    assert not any("typical" in r for r in plain) and plain[0]["first"] == "random"


def test_a_typical_round_has_no_estimate_and_says_why():
    from activebayes.round_estimates import TYPICAL, round_estimate

    rnd = SimpleNamespace(acquisition_settings={"candidates": 90, "typical": {"labels": 10, "classes": 10}})
    queries = [SimpleNamespace(rank=i, prediction={"class": "a", "p": 0.5}, probability=None, value="a") for i in range(3)]
    assert round_estimate(rnd, queries, "classification", ["a", "b"]).reason == TYPICAL


@pytest.mark.parametrize("arm, problem", [("power-epig/auto", None), ("power-epig/uniform", "is not one of typical, random, auto")])
def test_the_benchmark_takes_auto_as_a_first_batch(arm, problem):
    from test_benchmark import _module

    run = _module("run")
    found = run.arm_problem(arm, "classification")
    assert (found is None) if problem is None else (problem in found)
    np.testing.assert_equal(run.arm_parts(arm)[:2], arm.split("/"))


def test_auto_takes_typical_batches_on_classification_only():
    from activebayes.acquisition.typical import first_batch_as_run

    assert first_batch_as_run("auto", "classification") == "auto" and first_batch_as_run("auto", "regression") == "random"
    for task in ("classification", "regression"):
        assert first_batch_as_run("random", task) == "random" and first_batch_as_run("typical", task) == "typical"


def test_the_loop_and_the_benchmark_read_the_rule_from_one_place(monkeypatch):
    """Were `first="auto"` typical on a regression too, the loop's rounds and the benchmark's
    marking of the default arm would both say so."""
    import activebayes.acquisition.typical as typical
    from test_benchmark import _module

    from activebayes_cli._model import default_acquisition

    arms, acquisition = _module("arms"), default_acquisition("regression")
    assert rule(task="regression", classes=5) is None and arms.is_default(f"{acquisition}/random", "regression")
    monkeypatch.setattr(typical, "first_batch_as_run", lambda first, task: first, raising=False)
    assert rule(task="regression", classes=5) == {"labels": 0, "classes": 5}
    assert not arms.is_default(f"{acquisition}/random", "regression") and arms.is_default(f"{acquisition}/auto", "regression")
