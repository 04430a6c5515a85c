"""Batched runs (`activebayes.batched_runs`) against the per-run path, seed for seed: the dropout
noise, the stacked optimiser, the training, the MC dropout predictions, and a digits study.

Tolerances: the batched kernels (a batched matmul for R linear layers) may round differently from
R separate ones, so weights and outputs are compared within 1e-5 and queries wherever the
selection is not within that of a tie (the k-th and (k+1)-th score more than 1e-4 apart)."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from activebayes.batched_runs import batching_refusal
from activebayes.batched_runs.prepared_posterior import PreparedMCDropout
from activebayes.batched_runs.stacked_network import DropoutSite, RunsRandomness, StackedSequential
from activebayes.batched_runs.stacked_prediction import deterministic_probs, independent_logits, shared_logits
from activebayes.batched_runs.stacked_training import train_stacked
from activebayes.errors import ConfigError
from activebayes.nets import gal_cnn, mlp
from activebayes.posteriors import MCDropout
from activebayes.study import StudyConfig, run_study
from activebayes.training import TrainConfig, build_model, train

ROOT = Path(__file__).resolve().parents[1]
DIGITS_TOML = ROOT / "studies" / "gal2017" / "digits.toml"
TOL = 1e-5


def data(r: int, n: int, shape: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(100 + r)
    return torch.rand(n, *shape, generator=g), torch.randint(0, 10, (n,), generator=g)


def largest_difference(a: list[nn.Module], b: list[nn.Module]) -> float:
    return max(float((p - q).detach().abs().max()) for m, k in zip(a, b) for p, q in zip(m.parameters(), k.parameters()))


@pytest.mark.parametrize("layer", [nn.Dropout(0.3), nn.Dropout2d(0.5)])
def test_each_run_draws_the_noise_its_own_dropout_layer_draws(layer):
    x = torch.rand(2, 7, 3, 3, 4)[0]  # [B, C, H, W]
    expected = []
    with torch.random.fork_rng(devices=[]):
        for seed in (5, 9):
            torch.manual_seed(seed)  # as `train` seeds a run's dropout
            expected.append([layer.train()(x), layer.train()(x)])  # two passes in a row
    site = DropoutSite(0, layer, tuple(x.shape[1:]))
    randomness = RunsRandomness([5, 9], torch.device("cpu"))
    before = torch.get_rng_state()
    for step in range(2):
        noise = randomness.noise([site], x.shape[0], x.dtype)[0]  # [R, B, ...]
        for r in range(2):
            assert torch.equal(x * noise[r], expected[r][step])
    assert torch.equal(torch.get_rng_state(), before)  # the caller's generator is left alone


def test_one_optimiser_over_stacked_leaves_updates_each_run_as_its_own():
    g = torch.Generator().manual_seed(0)
    params = [torch.randn(4, 3, generator=g) for _ in range(3)]
    grads = [[torch.randn(4, 3, generator=g) for _ in range(3)] for _ in range(20)]
    from activebayes._optimizers import SGD, Adam

    for make in (lambda p: Adam(p, lr=1e-2, weight_decay=0.3), lambda p: SGD(p, lr=1e-2, momentum=0.9, weight_decay=0.3)):
        alone = [p.clone().requires_grad_() for p in params]
        optimisers = [make([p]) for p in alone]
        stacked = torch.stack(params).requires_grad_()
        together = make([stacked])
        for step in grads:
            for p, g, opt in zip(alone, step, optimisers):
                p.grad = g.clone()
                opt.step()
            stacked.grad = torch.stack(step)
            together.step()
        assert all(torch.equal(stacked[r].detach(), alone[r].detach()) for r in range(3))  # elementwise: bit for bit


@pytest.mark.parametrize("config", [
    TrainConfig(epochs=20, lr=3e-3, batch_size=8, weight_decay=0.05),
    TrainConfig(epochs=5, lr=1e-2, batch_size=16, epoch_samples=70, optimizer="sgd"),
])  # fmt: skip
def test_training_the_runs_together_gives_each_run_its_own_weights(config):
    model_fn, seeds = mlp(12, 10, hidden=(16,), dropout=0.4), [3, 4, 11]
    pairs = [data(r, 30, (12,)) for r in range(3)]
    alone = [train(build_model(model_fn, s), x, y, config, seed=s, device="cpu") for s, (x, y) in zip(seeds, pairs)]
    together = train_stacked([build_model(model_fn, s) for s in seeds], [x for x, _ in pairs], [y for _, y in pairs], config, seeds, device="cpu")
    assert largest_difference(alone, together) <= TOL
    assert not any(m.training for m in together)


def test_training_a_cnn_together_gives_each_run_its_own_weights():
    model_fn, seeds, config = gal_cnn((1, 12, 12), 10, hidden=8), [1, 2], TrainConfig(epochs=2, lr=1e-3, batch_size=4)
    pairs = [data(r, 10, (1, 12, 12)) for r in range(2)]
    alone = [train(build_model(model_fn, s), x, y, config, seed=s, device="cpu") for s, (x, y) in zip(seeds, pairs)]
    together = train_stacked([build_model(model_fn, s) for s in seeds], [x for x, _ in pairs], [y for _, y in pairs], config, seeds, device="cpu")
    assert largest_difference(alone, together) <= TOL


def test_training_together_refuses_what_it_cannot_reproduce():
    x, y = data(0, 10, (4,))
    with pytest.raises(ConfigError, match="early stopping"):
        train_stacked([build_model(mlp(4, 10), 0)], [x], [y], TrainConfig(validation_fraction=0.2), [0], device="cpu")
    with pytest.raises(ConfigError, match="buffers"):
        net = lambda: nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Dropout(0.5), nn.Linear(8, 10))  # noqa: E731
        train_stacked([build_model(net, 0)], [x], [y], TrainConfig(epochs=1), [0], device="cpu")


@pytest.mark.parametrize("masks", ["shared", "independent"])
@pytest.mark.parametrize("network,shape", [(mlp(12, 10, hidden=(16, 16)), (12,)), (gal_cnn((1, 12, 12), 10, hidden=8), (1, 12, 12))])
def test_predicting_together_gives_each_run_its_own_outputs(masks, network, shape):
    posteriors = [MCDropout(network, n_samples=6, masks=masks, train=TrainConfig(epochs=2, batch_size=8), seed=20 + r, device="cpu").fit(*data(r, 16, shape))
                  for r in range(3)]  # fmt: skip
    x = torch.stack([data(10 + r, 9, shape)[0] for r in range(3)])  # [R, n, ...]: each run its own items
    stacked, seeds, split = StackedSequential([p.model_ for p in posteriors]), [p.seed_ for p in posteriors], posteriors[0].split_
    if masks == "independent":
        logits = independent_logits(stacked, split, x, seeds, 6)
    else:
        logits = shared_logits(stacked, [p.model_ for p in posteriors], split, x, seeds, 6)
    probs = deterministic_probs(stacked, x)
    for r, posterior in enumerate(posteriors):
        assert float((logits[r] - posterior.predict_logits(x[r])).abs().max()) <= TOL
        assert float((probs[r] - posterior.predict_proba_deterministic(x[r])).abs().max()) <= TOL


def test_a_prepared_posterior_keeps_its_installed_fit_and_computes_what_it_was_not_given():
    x, y = data(0, 20, (12,))
    posterior = PreparedMCDropout(mlp(12, 10, hidden=(8,)), n_samples=4, train=TrainConfig(epochs=3), seed=7, device="cpu")
    job = posterior.defer_fit(x, y)
    assert posterior.model_ is None and job.seed == 7
    trained = train_stacked([job.model], [job.x], [job.y], job.config, [job.seed], device="cpu")[0]
    posterior.install(trained)
    given = torch.full((5, 10), 0.1)
    posterior.remember("deterministic", x[:5], given)
    assert posterior.fit(x, y).model_ is trained  # the same data: the installed network stays
    assert posterior.predict_proba_deterministic(x[:5]) is given
    reference = MCDropout(mlp(12, 10, hidden=(8,)), n_samples=4, train=TrainConfig(epochs=3), seed=7, device="cpu").fit(x, y)
    assert torch.allclose(posterior.predict_proba_deterministic(x[5:9]), reference.predict_proba_deterministic(x[5:9]), atol=TOL)
    assert torch.allclose(posterior.predict_logits(x[5:9]), reference.predict_logits(x[5:9]), atol=TOL)
    posterior.fit(x[:10], y[:10])  # other data: trained as MCDropout trains
    assert posterior.model_ is not trained


def digits_config(**changes) -> StudyConfig:
    return dataclasses.replace(StudyConfig.from_toml(DIGITS_TOML), **changes)


def study_records(database: Path) -> dict[str, list[tuple]]:
    """project -> [(labels, accuracy, nll, queried keys, candidate scores or None), ...] per round."""
    from activebayes.store import PoolStore

    with PoolStore(f"sqlite:///{database}") as store:
        return {name: [(r.labelled_count, r.metrics.get("accuracy"), r.metrics.get("nll"), [q.key for q in store.queries(name, r.number)],
                        store.round_scores(name, r.number)) for r in store.rounds(name)]
                for name in store.projects()}  # fmt: skip


def rounds_that_agree(a: dict[str, list[tuple]], b: dict[str, list[tuple]]) -> int:
    """Check two studies' records round by round (labels; nll within 10·TOL; accuracy within one
    of the 540 test items; candidate scores within 1e-4; the same queries) up to a near-tie at
    the selection's cut, after which a run may part; the number of rounds compared."""
    assert set(a) == set(b)
    compared = 0
    for name in a:
        for (labels, acc, nll, keys, scores), (labels_b, acc_b, nll_b, keys_b, scores_b) in zip(a[name], b[name]):
            assert labels == labels_b
            assert abs(nll - nll_b) <= TOL * 10 and abs(acc - acc_b) <= 1 / 540 + 1e-12  # at most one test item on a tie
            if scores is not None:  # bald: every candidate's score, within tolerance
                assert np.array_equal(scores[0], scores_b[0]) and np.abs(scores[1] - scores_b[1]).max() <= 1e-4
                ranked = np.sort(scores[1])[::-1]
                if ranked[len(keys) - 1] - ranked[len(keys)] <= 1e-4:
                    break  # a near-tie at the cut: the two paths may part from here on
            assert keys == keys_b
            compared += 1
    return compared


@pytest.mark.slow
def test_a_batched_digits_study_equals_the_per_run_study(tmp_path, monkeypatch):
    from activebayes.batched_runs import lockstep

    calls = []
    monkeypatch.setattr(lockstep, "train_stacked", lambda models, *args, **kwargs: calls.append(len(models)) or train_stacked(models, *args, **kwargs))
    config = digits_config(max_labels=40)  # 2 repeats x (bald, random), 3 rounds each
    one = run_study(config, tmp_path / "one")
    both = run_study(dataclasses.replace(config, batched=True), tmp_path / "both")
    assert calls == [4, 4, 4]  # each round, the 4 runs trained together
    assert one.config.to_dict() == both.config.to_dict()
    a, b = study_records(tmp_path / "one" / "study.db"), study_records(tmp_path / "both" / "study.db")
    assert set(a) == {"bald-r1", "bald-r2", "random-r1", "random-r2"}
    assert rounds_that_agree(a, b) >= 8  # compared on most of the 12 rounds


@pytest.mark.slow
def test_batched_runs_resume_a_study_started_one_by_one(tmp_path, monkeypatch):
    from activebayes.batched_runs import lockstep

    monkeypatch.setattr(lockstep, "CPU_BATCH_BYTES", 1)  # nothing fits two at a time: each loop fits and predicts itself
    config = digits_config(max_labels=40, repeats=1)

    def stop_after_two(done: int, total: int, text: str) -> None:
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_study(config, tmp_path / "mixed", progress=stop_after_two)
    mixed = run_study(dataclasses.replace(config, batched=True), tmp_path / "mixed")  # bald at round 3, random at 1
    run_study(config, tmp_path / "whole")
    assert [[n for n, _ in run] for runs in mixed.runs.values() for run in runs] == [[20, 30, 40]] * 2
    assert rounds_that_agree(study_records(tmp_path / "mixed" / "study.db"), study_records(tmp_path / "whole" / "study.db")) >= 4


def test_batched_falls_back_one_by_one_with_a_note(tmp_path, caplog):
    config = digits_config(max_labels=30, repeats=1, acquisitions=("random",), posterior_options={"prefix_cache": False}, batched=True)
    assert "prefix_cache" in (batching_refusal(config) or "")
    with caplog.at_level(logging.WARNING, logger="activebayes"):
        result = run_study(config, tmp_path / "out")
    assert [r.getMessage() for r in caplog.records if "batched" in r.getMessage()] == [
        "[run] batched: model.options.prefix_cache = false predicts with full passes; running the runs one by one"]
    assert [n for n, _ in result.runs["random"][0]] == [20, 30]


def test_the_run_table_sets_batched_and_is_not_part_of_the_recorded_config(tmp_path):
    text = DIGITS_TOML.read_text(encoding="utf-8")
    path = tmp_path / "study.toml"
    path.write_text(text + "\n[run]\nbatched = true\n", encoding="utf-8")
    config = StudyConfig.from_toml(path)
    assert config.batched and "batched" not in config.to_dict()
    assert config.to_dict() == StudyConfig.from_toml(DIGITS_TOML).to_dict()
    path.write_text(text + "\n[run]\nbatched = \"yes\"\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="run.batched: expected true or false"):
        StudyConfig.from_toml(path)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_on_cuda_the_runs_draw_and_train_as_their_own():
    model_fn, seeds, config = mlp(12, 10, hidden=(16,), dropout=0.4), [3, 4], TrainConfig(epochs=5, lr=3e-3, batch_size=8)
    pairs = [data(r, 30, (12,)) for r in range(2)]
    alone = [train(build_model(model_fn, s), x, y, config, seed=s, device="cuda") for s, (x, y) in zip(seeds, pairs)]
    together = train_stacked([build_model(model_fn, s) for s in seeds], [x for x, _ in pairs], [y for _, y in pairs], config, seeds, device="cuda")
    assert largest_difference(alone, together) <= TOL
    posteriors = [MCDropout(model_fn, n_samples=5, masks="independent", train=config, seed=s, device="cuda").fit(*pair) for s, pair in zip(seeds, pairs)]
    x = torch.stack([data(10 + r, 9, (12,))[0] for r in range(2)]).cuda()
    logits = independent_logits(StackedSequential([p.model_ for p in posteriors]), posteriors[0].split_, x, seeds, 5)
    for r, posterior in enumerate(posteriors):
        assert float((logits[r] - posterior.predict_logits(x[r])).abs().max()) <= TOL
