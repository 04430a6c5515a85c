"""Deep and snapshot ensembles: member diversity, vectorised prediction, the cyclic schedule."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from activebayes import ConfigError
from activebayes.nets import gal_cnn, mlp
from activebayes.posteriors import DeepEnsemble, SnapshotEnsemble
from activebayes.posteriors import ensembles as ensembles_module
from activebayes.posteriors.ensembles import MemberStack
from activebayes.training import cosine_cycle_lr
from activebayes.training import TrainConfig


@pytest.fixture(scope="module")
def data():
    x = torch.randn(96, 3, generator=torch.Generator().manual_seed(0))
    return x, (x[:, 0] - x[:, 2] > 0).long()


def _flat(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def test_deep_ensemble_members_differ_and_predict_in_eval_mode(data):
    x, y = data
    ens = DeepEnsemble(mlp(3, 2, hidden=(16,)), n_samples=3, train=TrainConfig(epochs=3), seed=0, device="cpu").fit(x, y)
    members = ens.stack_.members
    assert len(members) == 3 and all(not m.training for m in members)
    assert not torch.equal(_flat(members[0]), _flat(members[1]))
    pred = ens.predict(x)
    with torch.no_grad():
        expected = torch.softmax(torch.stack([m(x) for m in members]), -1)  # eval: dropout off
    torch.testing.assert_close(pred.probs, expected, rtol=1e-5, atol=1e-6)
    assert ens.predict(x, n_samples=2).probs.shape == (2, 96, 2)
    with pytest.raises(ConfigError, match="n_samples"):
        ens.predict(x, n_samples=4)


def test_members_differ_by_initialisation_and_by_data_order(data, monkeypatch):
    x, y = data
    seen = []
    real_train = ensembles_module.train

    def recording_train(model, *args, **kwargs):
        seen.append((_flat(model).clone(), kwargs["seed"]))
        return real_train(model, *args, **kwargs)

    monkeypatch.setattr(ensembles_module, "train", recording_train)
    DeepEnsemble(mlp(3, 2, hidden=(8,)), n_samples=3, train=TrainConfig(epochs=1), seed=4, device="cpu").fit(x, y)
    inits, seeds = zip(*seen)
    assert len(set(seeds)) == 3  # each member shuffles the data with its own seed
    assert not torch.equal(inits[0], inits[1]) and not torch.equal(inits[1], inits[2])


@pytest.mark.parametrize(
    "make, item_shape",
    [(mlp(3, 4, hidden=(8, 8)), (3,)), (gal_cnn((1, 12, 12), 4), (1, 12, 12))],
    ids=["mlp", "gal-cnn"],
)
def test_vectorised_members_equal_a_loop(make, item_shape):
    members = []
    for seed in range(4):
        torch.manual_seed(seed)  # test-local: four different initialisations
        members.append(make().eval())
    stack = MemberStack(members)
    assert stack.vectorised
    x = torch.randn(7, *item_shape, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        looped = torch.stack([m(x) for m in members])
        torch.testing.assert_close(stack.logits(x, 4), looped, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(stack.logits(x, 2), looped[:2], rtol=1e-5, atol=1e-5)


def test_members_of_different_architectures_fall_back_to_a_loop():
    members = [mlp(3, 2, hidden=(8,))().eval(), mlp(3, 2, hidden=(5,))().eval()]
    stack = MemberStack(members)
    assert not stack.vectorised
    x = torch.randn(4, 3)
    with torch.no_grad():
        torch.testing.assert_close(stack.logits(x, 2), torch.stack([m(x) for m in members]))


def test_cosine_cycle_lr_closed_form():
    assert cosine_cycle_lr(0, 10, 0.2) == pytest.approx(0.2)
    assert cosine_cycle_lr(5, 10, 0.2) == pytest.approx(0.1)
    assert cosine_cycle_lr(10, 10, 0.2) == pytest.approx(0.2)  # restarts
    assert cosine_cycle_lr(13, 10, 0.2) == pytest.approx(0.1 * (math.cos(math.pi * 0.3) + 1))


def test_cosine_schedule_of_a_train_config_anneals_over_the_run(monkeypatch):
    from activebayes._optimizers import Adam
    from activebayes.training import TrainConfig, train

    seen = []
    real_step = Adam.step

    def recording_step(self, *args, **kwargs):
        seen.append(self.param_groups[0]["lr"])
        return real_step(self, *args, **kwargs)

    monkeypatch.setattr(Adam, "step", recording_step)
    x, y = torch.randn(40, 3), torch.arange(40) % 2
    train(mlp(3, 2, hidden=(4,))(), x, y, TrainConfig(epochs=2, lr=0.1, batch_size=10, schedule="cosine"), seed=0, device="cpu")
    assert seen == pytest.approx([0.05 * (1 + math.cos(math.pi * t / 8)) for t in range(8)])


def test_snapshot_ensemble_follows_the_cyclic_schedule(data, monkeypatch):
    x, y = data
    calls = {}
    real_train = ensembles_module.train

    def recording_train(model, x, y, config, **kwargs):
        calls.update(config=config, lr_at=kwargs["lr_at"])
        return real_train(model, x, y, config, **kwargs)

    monkeypatch.setattr(ensembles_module, "train", recording_train)
    ens = SnapshotEnsemble(
        mlp(3, 2, hidden=(8,)), n_samples=3, epochs_per_cycle=2, lr_max=0.05, train=TrainConfig(batch_size=32), seed=0, device="cpu"
    ).fit(x, y)
    assert calls["config"].epochs == 6 and calls["config"].validation_fraction == 0.0
    steps_per_cycle = 2 * 3  # 2 epochs of ceil(96 / 32) steps
    assert [calls["lr_at"](t) for t in range(13)] == [cosine_cycle_lr(t, steps_per_cycle, 0.05) for t in range(13)]
    snapshots = ens.stack_.members
    assert len(snapshots) == 3
    assert not torch.equal(_flat(snapshots[0]), _flat(snapshots[1]))
    assert torch.equal(_flat(snapshots[-1]), _flat(ens.model_))  # the last cycle ends the run
    assert ens.predict(x).probs.shape == (3, 96, 2)


def test_snapshot_warm_start_continues_from_the_previous_fit(data):
    x, y = data
    kwargs = dict(n_samples=2, epochs_per_cycle=1, lr_max=1e-7, seed=0, device="cpu")
    cold = SnapshotEnsemble(mlp(3, 2, hidden=(8,)), lr_max=0.05, **{k: v for k, v in kwargs.items() if k != "lr_max"})
    trained = _flat(cold.fit(x, y).model_)
    warm = SnapshotEnsemble(mlp(3, 2, hidden=(8,)), warm_start=True, **kwargs)
    warm.model_ = cold.model_  # as if a previous round had fitted these weights
    start_again = SnapshotEnsemble(mlp(3, 2, hidden=(8,)), warm_start=False, **kwargs)
    start_again.model_ = cold.model_
    # a tiny learning rate: warm-started weights stay at the previous fit's, a cold start does not
    assert (_flat(warm.fit(x, y).model_) - trained).abs().max() < 1e-4
    assert (_flat(start_again.fit(x, y).model_) - trained).abs().max() > 1e-2
    assert warm.model_ is not cold.model_  # the previous fit's network is copied, not changed


def test_bad_configuration_is_refused(data):
    x, y = data
    with pytest.raises(ConfigError, match="n_samples"):
        DeepEnsemble(mlp(3, 2), n_samples=0, device="cpu").fit(x, y)
    with pytest.raises(ConfigError, match="lr_max"):
        SnapshotEnsemble(mlp(3, 2), lr_max=-1.0, device="cpu").fit(x, y)
