"""The first batch (TypiClust's typical points) and `auto` (EXP3 over strategies with a random
share), checked by hand-computed values and deterministic geometry, never by a training outcome."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from activebayes.acquisition.auto import choose, probabilities, random_count, replay, round_reward, update
from activebayes.acquisition.typical import embed, typical_batch, typicality
from activebayes.errors import ConfigError


def test_typicality_by_hand():
    points = np.asarray([[0.0], [1.0], [3.0]])  # K = min(20, 2) = 2 neighbours each
    # point 0: distances 1, 3 -> mean 2; point 1: 1, 2 -> 1.5; point 3: 3, 2 -> 2.5
    assert typicality(points) == pytest.approx([1 / 2, 1 / 1.5, 1 / 2.5])
    assert typicality(np.zeros((1, 2))).tolist() == [1.0]


def blobs(sizes=(60, 40, 25), seed=0) -> tuple[np.ndarray, np.ndarray]:
    """Well-separated Gaussian blobs (sd 0.3, centres 10 apart) and each point's blob."""
    rng = np.random.default_rng(seed)
    centres = np.asarray([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    x = np.concatenate([centres[b] + 0.3 * rng.normal(size=(n, 2)) for b, n in enumerate(sizes)])
    which = np.concatenate([np.full(n, b) for b, n in enumerate(sizes)])
    return x.astype(np.float32), which


def test_typical_batch_takes_one_central_point_per_cluster():
    x, which = blobs()
    x = np.concatenate([x, [[30.0, 30.0]]]).astype(np.float32)  # an outlier: never typical
    which = np.append(which, -1)
    chosen = typical_batch(x, 3, seed=0)
    assert sorted(which[chosen.numpy()].tolist()) == [0, 1, 2]
    for i in chosen.tolist():  # the most typical point lies near its blob's centre
        members = x[which == which[i]]
        assert np.linalg.norm(x[i] - members.mean(axis=0)) < 0.5
    assert torch.equal(chosen, typical_batch(x, 3, seed=0))  # the same seed, the same batch


def test_typical_batch_skips_covered_clusters():
    x, which = blobs()
    labelled = x[which == 0][:3]  # blob 0 is covered
    chosen = typical_batch(x, 2, labelled=labelled, seed=0)
    assert sorted(which[chosen.numpy()].tolist()) == [1, 2]


def test_typical_batch_shapes_and_images():
    images = np.random.default_rng(0).random((80, 1, 10, 10)).astype(np.float32)
    assert embed(images).shape == (80, 50)  # 100 pixels -> 50 principal components
    chosen = typical_batch(images, 5, seed=1)
    assert chosen.shape == (5,) and len(set(chosen.tolist())) == 5
    assert typical_batch(np.zeros((4, 2)), 4).sort().values.tolist() == [0, 1, 2, 3]  # identical points: still k distinct
    with pytest.raises(ConfigError, match="k=5 exceeds the 4 candidates"):
        typical_batch(np.zeros((4, 2)), 5)


def test_embed_overwrite_gives_the_same_points_and_only_then_changes_the_input():
    wide = np.random.default_rng(2).normal(size=(120, 70)).astype(np.float32)  # > 64 columns: the PCA
    kept = wide.copy()
    points = embed(wide, seed=3)
    assert np.array_equal(wide, kept)  # a copy was centred
    assert np.array_equal(embed(torch.from_numpy(wide), seed=3, overwrite=True), points)
    assert not np.array_equal(wide, kept)  # the PCA centred the caller's rows in place
    assert torch.equal(typical_batch(kept.copy(), 4, seed=1, overwrite=True), typical_batch(kept, 4, seed=1))


def test_exp3_probabilities_and_update_by_hand():
    assert probabilities([0.0, 0.0], gamma=0.2) == pytest.approx([0.5, 0.5])
    # w = [ln 3, 0]: softmax [0.75, 0.25]; p = 0.8·softmax + 0.1
    assert probabilities([math.log(3), 0.0], gamma=0.2) == pytest.approx([0.7, 0.3])
    # arm 1 (p = 0.5) earns 1: w_1 += 0.2·1 / (0.5·2) = 0.2
    assert update([0.0, 0.0], 1, 1.0, gamma=0.2) == pytest.approx([0.0, 0.2])
    with pytest.raises(ConfigError, match=r"reward must lie in \[0, 1\]"):
        update([0.0], 0, 1.5)
    assert [random_count(k) for k in (1, 2, 5, 10, 20)] == [0, 1, 1, 2, 4]


def q(rank: int, value, prediction) -> SimpleNamespace:
    return SimpleNamespace(rank=rank, value=value, prediction=prediction)


def test_round_reward_reads_the_random_share_only():
    queries = [q(0, "a", {"label": "b", "probability": 0.9}),  # chosen by the arm: not counted
               q(1, "a", {"label": "a", "probability": 0.6}),
               q(2, "b", {"label": "a", "probability": 0.7}),
               q(3, None, {"label": "a", "probability": 0.7})]  # fmt: skip
    assert round_reward(queries, 3, "classification") == pytest.approx(0.5)  # 1 right of 2 labelled
    assert round_reward(queries[:1], 0, "classification") is None
    cold = [q(0, "a", None), q(1, "b", None)]
    assert round_reward(cold, 2, "classification") is None
    reg = [q(0, "1.0", {"mean": 0.0, "sd": 1.0}), q(1, "3.0", {"mean": 1.0, "sd": 1.0})]
    assert round_reward(reg, 1, "regression", label_variance=2.0) == pytest.approx(math.exp(-4 / 4))


def test_replay_credits_each_reward_to_the_previous_arm():
    past = [({"arm": "bald"}, None), ({"arm": "random"}, 0.5), ({"arm": "bald"}, 1.0)]
    weights, credited = replay(past, ["bald", "random"], gamma=0.2)
    assert credited == [("bald", 0.5), ("random", 1.0)]
    w = update(update([0.0, 0.0], 0, 0.5, 0.2), 1, 1.0, 0.2)
    assert weights == pytest.approx(w)
    first = choose([], ["epig", "bald", "random"], 10, seed=3)
    assert first.n_random == 2 and first.probabilities == pytest.approx((1 / 3,) * 3)
    assert choose([], ["epig", "bald", "random"], 10, seed=3).arm == first.arm  # seeded
    draws = [choose([], ["a", "b"], 10, seed=s).arm for s in range(400)]
    assert 150 < draws.count("a") < 250  # uniform before any reward


# ---- in the loop ---------------------------------------------------------------------------------


def _run(tmp_path, name: str, pool_scores: dict | None = None, **loop_options) -> list:
    """[(acquisition settings, [(key, rank, score)])] of 4 rounds; `pool_scores` (when given)
    receives {round number: {key: the stored pool score of each query's item}} of scored rounds."""
    from test_loop import make_project, tiny_factory

    from activebayes.loop import ActiveLearningLoop
    from activebayes.oracles import SimulatedOracle
    from activebayes.store import PoolStore

    with PoolStore(f"sqlite:///{tmp_path / (name + '.db')}") as store:
        truth = make_project(store, tmp_path, name)
        loop = ActiveLearningLoop(tiny_factory, store=store, project=name, oracle=SimulatedOracle(truth), batch_size=10, seed=7, **loop_options)
        loop.run(4)
        for r in store.rounds(name) if pool_scores is not None else []:
            if r.number not in set(store.scored_rounds(name)):
                continue
            ids, scores = store.round_scores(name, r.number)
            by_id = dict(zip(ids.tolist(), scores.tolist()))
            pool_scores[r.number] = {q.key: by_id[q.item_id] for q in store.queries(name, r.number) if q.item_id in by_id}
        return [(r.acquisition_settings, [(q.key, q.rank, q.score) for q in store.queries(name, r.number)]) for r in store.rounds(name)]


def test_the_loop_starts_with_typical_points(tmp_path):
    from activebayes.data import load_dataset

    rounds = _run(tmp_path, "typ", acquisition="bald", first="typical")
    assert rounds[0][0]["first"] == "typical" and "first" not in rounds[1][0]
    x = load_dataset(tmp_path / "digits.npz").x[:300]
    seed = __import__("activebayes.loop", fromlist=["round_seed"]).round_seed(7, 1)
    expected = typical_batch(x, 10, seed=seed).tolist()
    assert [int(k) for k, _, _ in rounds[0][1]] == expected  # candidates are the pool rows 0..299, in order
    random_start = _run(tmp_path, "rnd", acquisition="bald")
    assert random_start[0][0]["first"] == "random"


def test_auto_records_its_choice_and_random_share_and_repeats(tmp_path):
    pool_scores: dict = {}
    rounds = _run(tmp_path, "auto1", pool_scores, acquisition="auto", auto_arms=["bald", "random"])
    again = _run(tmp_path, "auto2", acquisition="auto", auto_arms=["bald", "random"])
    assert [q for _, q in rounds] == [q for _, q in again]  # the same seed, the same queries
    assert "auto" not in rounds[0][0] and rounds[0][0]["first"] == "random"  # no model, no arm
    for settings, queries in rounds[1:]:
        auto = settings["auto"]
        assert auto["arm"] in ("bald", "random") and auto["random"] == 2 and sum(auto["probabilities"]) == pytest.approx(1)
    later = [s["auto"] for s, _ in rounds[1:]]
    assert later[-1]["rewards"] == [[later[0]["arm"], pytest.approx(later[-1]["rewards"][0][1])]]  # round 3's reward, to round 2's arm
    for number, (settings, queries) in enumerate(rounds[1:], start=2):  # the random share: the arm's pool scores (0: none)
        expected = [pool_scores.get(number, {}).get(key, 0.0) for key, rank, _ in queries if rank >= 8]
        assert [score for _, rank, score in queries if rank >= 8] == pytest.approx(expected, rel=1e-6)


def test_cli_auto_and_first_are_shown_by_status(cli_db, tmp_path):
    import csv
    import json

    from cli_checks import ok

    rng = np.random.default_rng(0)
    with open("t.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "a", "b", "label"])
        for i in range(80):
            c = i % 2
            writer.writerow([f"r{i}", f"{c + rng.normal():.3f}", f"{rng.normal():.3f}", "xy"[c]])
    ok("init", "--name", "t")
    ok("pool", "add", "t.csv", "--test-fraction", "0.25")
    tiny = ("--oracle", "truth", "--device", "cpu", "--samples", "2", "--epochs", "2")
    ok("round", "--acquisition", "auto", *tiny)
    ok("round", "--acquisition", "auto", *tiny)
    from activebayes_cli._model import default_first

    rounds = json.loads(ok("--json", "status").stdout)["rounds"]
    assert rounds[0]["first"] == default_first() and "auto" not in rounds[0]  # the CLI's first batch
    assert rounds[1]["auto"]["random"] == 2 and rounds[1]["auto"]["arm"] in ("epig", "bald", "random")
    shown = ok("status").stdout
    assert "first: random" in shown and "2 random" in shown  # two classes: --first auto draws uniformly


def test_defaults_without_joint_samples_leave_epig_out():
    from activebayes_cli._model import auto_arms, default_acquisition

    assert default_acquisition("classification") == "power-margin" and default_acquisition("regression") == "auto"
    # power-margin reads the mean prediction alone, so options without joint samples keep it
    assert default_acquisition("classification", {"masks": "independent"}) == "power-margin"
    assert default_acquisition("classification", {"predictive": "analytic"}) == "power-margin"
    assert "epig" in auto_arms("regression") and "epig" not in auto_arms("regression", {"predictive": "analytic"})


def test_cover_classes_draws_uniformly_while_a_class_is_unlabelled(tmp_path):
    """Round by round, from the recorded labels: a round with labels, a class still unlabelled
    and fewer than 5 labels a class records {"seen", "classes"} and draws its batch as the cold
    start does (zero scores, the round generator's permutation of the candidates); other rounds
    score with the acquisition. Without cover_classes no round covers."""
    from test_loop import POOL

    from activebayes.loop import round_seed

    rounds = _run(tmp_path, "cover", acquisition="bald", cover_classes=True)
    truth = np.load(tmp_path / "digits.npz")["y"]
    labelled: list[int] = []
    covered = 0
    for number, (settings, queries) in enumerate(rounds, start=1):
        seen = len({int(truth[r]) for r in labelled})
        expect_cover = 0 < len(labelled) < 50 and seen < 10
        assert ("cover" in settings) == expect_cover
        if expect_cover:
            covered += 1
            assert settings["cover"] == {"seen": seen, "classes": 10}
            candidates = [r for r in range(POOL) if r not in labelled]
            order = torch.randperm(len(candidates), generator=torch.Generator().manual_seed(round_seed(7, number)))[:10]
            assert [int(k) for k, _, _ in queries] == [candidates[i] for i in order.tolist()]
            assert {score for _, _, score in queries} == {0.0}
        elif labelled:
            assert any(score != 0.0 for _, _, score in queries)  # BALD's scores
        labelled += [int(k) for k, _, _ in queries]
    assert covered >= 1  # 10 random digits of 10 classes: some class is missing (here, and checked above)
    assert all(s["cover_classes"] is True for s, _ in rounds)  # every round of the loop says it covers
    assert not any("cover" in s or "cover_classes" in s for s, _ in _run(tmp_path, "plain", acquisition="bald"))
    assert _run(tmp_path, "cover2", acquisition="bald", cover_classes=True) == rounds  # the same seed, the same queries


def test_cover_classes_stops_at_five_labels_a_class(tmp_path):
    """An 11th class that the pool never holds is never labelled: rounds draw uniformly up to
    5 · 11 = 55 labels (rounds fitted on 10..50), then score with the acquisition."""
    from test_loop import POOL, TEST, tiny_factory

    from activebayes.data import write_digits
    from activebayes.loop import ActiveLearningLoop
    from activebayes.oracles import SimulatedOracle
    from activebayes.store import PoolStore

    path = write_digits(tmp_path / "digits.npz")
    truth = np.load(path)["y"]
    with PoolStore(f"sqlite:///{tmp_path / 'c.db'}") as store:
        store.create_project("c", task="classification", classes=range(11), data_path=path)
        store.add_items("c", rows=np.arange(POOL))
        store.add_items("c", rows=np.arange(POOL, POOL + TEST), split="test")
        store.record_observations("c", [(str(r), int(truth[r])) for r in range(POOL, POOL + TEST)], who="truth", source="import")
        loop = ActiveLearningLoop(tiny_factory, "bald", store, "c", SimulatedOracle(truth), batch_size=10, seed=3, cover_classes=True)
        loop.run(7)
        covers = [(r.acquisition_settings or {}).get("cover") for r in store.rounds("c")]
    assert covers[0] is None and all(c is not None and c["classes"] == 11 and c["seen"] <= 10 for c in covers[1:6])
    assert covers[6] is None  # 60 labels: past 5 a class


def test_cli_covers_the_classes_and_says_so(cli_db, tmp_path):
    """Five classes, one of them in no row, a first batch of 2: with --cover-classes round 2
    draws uniformly, says how many classes have no label, and status and --json status show it;
    without it (the CLI's default) later rounds score, class e still unlabelled."""
    import csv
    import json

    from cli_checks import ok

    with open("t.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "a", "label"])
        for i in range(80):
            writer.writerow([f"r{i}", f"{i % 4 + 0.01 * i:.3f}", "abcd"[i % 4]])
    ok("init", "--name", "t", "--classes", "a,b,c,d,e")  # e: no item of the pool has it
    ok("pool", "add", "t.csv", "--test-fraction", "0.25")
    # --first random: under the default (auto) rounds up to 10 labels would take typical items
    tiny = ("--oracle", "truth", "--device", "cpu", "--samples", "2", "--epochs", "2", "--k", "2", "--first", "random")
    ok("round", "--acquisition", "bald", *tiny)
    shown = ok("round", "--acquisition", "bald", "--cover-classes", *tiny).stdout
    rounds = json.loads(ok("--json", "status").stdout)["rounds"]
    cover = rounds[1]["cover"]
    assert cover["classes"] == 5 and cover["seen"] <= 2
    assert f"a uniform draw: {5 - cover['seen']} of 5 classes have no label yet" in " ".join(shown.split())
    assert f"uniform: {5 - cover['seen']} of 5 classes unlabelled" in " ".join(ok("status").stdout.split())
    ok("round", "--acquisition", "bald", *tiny)
    ok("round", "--acquisition", "bald", *tiny)
    from activebayes_cli._model import DEFAULT_COVER_CLASSES

    assert not DEFAULT_COVER_CLASSES
    later = json.loads(ok("--json", "status").stdout)["rounds"][2:]
    assert [r["number"] for r in later] == [3, 4] and not any("cover" in r for r in later)


def test_the_labelling_page_repeats_cover_classes():
    """`activebayes serve` runs its next round with the latest round's options: --cover-classes
    when that round's loop covered the classes, not otherwise."""
    from activebayes_cli.serve import round_arguments

    def store(acquisition_settings):
        latest = SimpleNamespace(number=2, posterior="mc-dropout", acquisition="bald", posterior_settings={"model": "mlp"},
                                 acquisition_settings=acquisition_settings)  # fmt: skip
        first = SimpleNamespace(acquisition_settings={"first": "auto"} | acquisition_settings)
        return SimpleNamespace(latest_round=lambda project: latest, queries=lambda project, number: [1, 2],
                               rounds=lambda project: [first, latest])  # fmt: skip

    base = ["--posterior", "mc-dropout", "--acquisition", "bald", "--k", "2", "--model", "mlp", "--first", "auto"]
    assert round_arguments(store({"batch_size": 2, "cover_classes": True}), "p") == [*base, "--cover-classes"]
    assert round_arguments(store({"batch_size": 2}), "p") == base
