"""The contract every posterior follows (activebayes/posteriors/base.py), run over all of them.

To add a network posterior, append one entry to POSTERIOR_CASES:

    pytest.param(factory, id="cli-name")

where factory(seed: int) returns an UNFITTED posterior for 2-feature, 2-class inputs (the
two-moons data of the `moons` fixture, 200 points), configured so that `fit` takes about a
second on a CPU core and `predict` returns S >= 2 samples; and its own bad arguments to
BAD_OPTIONS. The Gaussian process (regression, no network) has its own test at the end.
"""

from __future__ import annotations

import inspect

import pytest
import torch

from activebayes import ConfigError, NotFittedError, Predictive
from activebayes.nets import mlp
from activebayes.posteriors import (
    MFVI,
    POSTERIORS,
    SWAG,
    BatchEnsemble,
    DeepEnsemble,
    Laplace,
    MCDropout,
    NetworkPosterior,
    Posterior,
    SnapshotEnsemble,
    clone,
)
from activebayes.posteriors._network import SHARED_PARAMS, NetworkArgs
from activebayes.training import TrainConfig, build_model, train

_NET = mlp(2, 2, hidden=(32, 32), dropout=0.2)
_TRAIN = TrainConfig(epochs=100, lr=1e-2, batch_size=100)

POSTERIOR_CASES = [
    pytest.param(lambda seed: MCDropout(_NET, n_samples=16, train=_TRAIN, seed=seed, device="cpu"), id="mc-dropout"),
    pytest.param(
        lambda seed: DeepEnsemble(_NET, n_samples=4, train=TrainConfig(epochs=60, lr=1e-2, batch_size=100), seed=seed, device="cpu"),
        id="deep-ensemble",
    ),
    pytest.param(
        lambda seed: SnapshotEnsemble(
            _NET, n_samples=4, epochs_per_cycle=25, lr_max=2e-2, train=TrainConfig(batch_size=100), seed=seed, device="cpu"
        ),
        id="snapshot-ensemble",
    ),
    pytest.param(
        lambda seed: Laplace(_NET, hessian="full", prior_precision=1.0, n_samples=16, train=_TRAIN, seed=seed, device="cpu"),
        id="laplace",
    ),
    pytest.param(
        lambda seed: SWAG(_NET, rank=10, n_snapshots=20, snapshot_steps=25, n_samples=16, train=_TRAIN, seed=seed, device="cpu"),
        id="swag",
    ),
    pytest.param(
        lambda seed: MFVI(_NET, kl_weight=0.1, init_std=0.05, n_samples=16, train=_TRAIN, seed=seed, device="cpu"),
        id="mfvi",
    ),
    pytest.param(
        lambda seed: BatchEnsemble(_NET, n_members=4, train=_TRAIN, seed=seed, device="cpu"),
        id="batch-ensemble",
    ),
    pytest.param(
        lambda seed: BatchEnsemble(_NET, n_members=4, rank1="gaussian", kl_weight=0.1, n_samples=16, train=_TRAIN, seed=seed,
                                   device="cpu"),
        id="batch-ensemble-rank1",
    ),
]

#: The sampling-free predictive (predictive="analytic") of the posteriors that offer it, run
#: through the same contract (`case` covers POSTERIOR_CASES + ANALYTIC_CASES).
ANALYTIC_CASES = [
    pytest.param(
        lambda seed: MFVI(_NET, kl_weight=0.1, init_std=0.05, n_samples=16, train=_TRAIN, seed=seed, device="cpu", predictive="analytic"),
        id="mfvi-analytic",
    ),
    pytest.param(
        lambda seed: Laplace(_NET, hessian="diag", prior_precision=10.0, n_samples=16, train=_TRAIN, seed=seed, device="cpu",
                             predictive="analytic"),
        id="laplace-analytic",
    ),
    pytest.param(
        lambda seed: SWAG(_NET, rank=10, n_snapshots=20, snapshot_steps=25, n_samples=16, train=_TRAIN, seed=seed, device="cpu",
                          predictive="analytic"),
        id="swag-analytic",
    ),
]

#: Arguments every network posterior refuses in __init__, and the argument its error names.
BAD_SHARED = [
    ({"n_samples": 0}, "n_samples"),
    ({"n_samples": 2.5}, "n_samples"),
    ({"train": {"epochs": 3}}, "train"),
    ({"seed": "zero"}, "seed"),
    ({"device": "gpu please"}, "device"),
    ({"likelihood": "poisson"}, "likelihood"),
    ({"model_fn": None}, "model_fn"),  # neither model_fn nor model
    ({"model": torch.nn.Linear(2, 2)}, "model_fn"),  # both
    ({"model_fn": torch.nn.Linear(2, 2)}, "model_fn"),  # a network where a factory belongs
]
#: Each posterior's own options, refused in __init__.
BAD_OPTIONS = {
    "mc-dropout": [({"masks": "sometimes"}, "masks"), ({"weight_decay_scale": -1.0}, "weight_decay_scale"),
                   ({"prefix_cache": "yes"}, "prefix_cache")],
    "deep-ensemble": [],
    "snapshot-ensemble": [({"epochs_per_cycle": 0}, "epochs_per_cycle"), ({"lr_max": -1.0}, "lr_max"),
                          ({"warm_start": 1}, "warm_start")],
    "laplace": [({"hessian": "lowrank"}, "hessian"), ({"link": "bridge"}, "link"), ({"prior_precision": 0.0}, "prior_precision"),
                ({"subset": "some"}, "subset"),
                ({"prior_precision": "offline"}, "prior_precision")],
    "swag": [({"n_snapshots": 1}, "n_snapshots"), ({"schedule": "step"}, "schedule"), ({"swa_optimizer": "rmsprop"}, "swa_optimizer"),
             ({"swa_lr": 0.0}, "swa_lr"), ({"scale": -1.0}, "scale"), ({"rank": 2.5}, "rank"), ({"n_snapshots": 5.0}, "n_snapshots"),
             ({"diag_only": "no"}, "diag_only"), ({"var_clamp": -1.0}, "var_clamp")],
    "mfvi": [({"prior_std": 0.0}, "prior_std"), ({"kl_weight": -1.0}, "kl_weight"), ({"kl_anneal_epochs": 1.5}, "kl_anneal_epochs"),
             ({"init_std": -1.0}, "init_std")],
    "batch-ensemble": [({"n_members": 0}, "n_members"), ({"rank1": "laplace"}, "rank1"), ({"n_samples": 5}, "n_samples"),
                       ({"fast_init": "zeros"}, "fast_init"), ({"prior_std": 0.0}, "prior_std"), ({"init_std": -1.0}, "init_std"),
                       ({"kl_weight": -1.0}, "kl_weight")],
    "batch-ensemble-rank1": [({"n_members": 2.5}, "n_members"), ({"rank1": None}, "rank1"), ({"prior_std": -1.0}, "prior_std")],
}  # fmt: skip

BAD_OPTIONS["mfvi-analytic"] = [*BAD_OPTIONS["mfvi"], ({"predictive": "exact"}, "predictive")]
BAD_OPTIONS["laplace-analytic"] = [*BAD_OPTIONS["laplace"], ({"predictive": "exact"}, "predictive"), ({"link": "mc"}, "link")]
BAD_OPTIONS["swag-analytic"] = [*BAD_OPTIONS["swag"], ({"predictive": "exact"}, "predictive")]

_FITTED: dict[str, object] = {}


@pytest.fixture(params=POSTERIOR_CASES + ANALYTIC_CASES)
def case(request):
    return request.node.callspec.id, request.param


@pytest.fixture
def fitted(case, moons):
    """The case's posterior fitted on two moons with seed 0, fitted once per test session."""
    name, factory = case
    if name not in _FITTED:
        _FITTED[name] = factory(0).fit(*moons)
    return _FITTED[name]


def _far_points() -> torch.Tensor:
    """24 points on a circle of radius 2.5 around the moons' centre (0.5, 0.25); the data lie
    within 1.85 of that centre, so every point is at least 0.65 away from them."""
    angle = torch.linspace(0, 2 * torch.pi, 25)[:-1]
    return torch.stack([0.5 + 2.5 * angle.cos(), 0.25 + 2.5 * angle.sin()], dim=1)


def test_predict_before_fit_raises(case, moons):
    _, factory = case
    posterior = factory(0)
    with pytest.raises(NotFittedError, match="fit"):
        posterior.predict(moons[0][:3])
    with pytest.raises(NotFittedError):
        posterior.predict_proba(moons[0][:3])


def test_predictive_shapes_and_rows(fitted, moons):
    x = moons[0][:7]
    pred = fitted.predict(x)
    assert isinstance(pred, Predictive)
    S, N, C = pred.probs.shape
    assert S >= 2 and N == 7 and C == 2
    assert torch.allclose(pred.probs.sum(-1), torch.ones(S, N), atol=1e-5)
    assert bool((pred.probs >= 0).all())
    Predictive(pred.probs)  # passes the validating constructor
    proba = fitted.predict_proba(x)
    assert proba.shape == (7, 2)
    assert torch.allclose(proba.sum(-1), torch.ones(7), atol=1e-5)
    assert fitted.predict(x, n_samples=2).probs.shape == (2, 7, 2)


def test_fitted_posterior_classifies_training_data(fitted, moons):
    x, y = moons
    accuracy = (fitted.predict_proba(x).argmax(-1) == y).float().mean()
    assert accuracy > 0.95


def test_fit_returns_self_and_the_rebuilt_posterior_gives_identical_predictions(case, fitted, moons):
    """get_params round trip: type(p)(**p.get_params()) with the same seed fits to the same samples."""
    _, factory = case
    params = factory(0).get_params()
    again = type(fitted)(**params)
    assert again.get_params() == params
    assert again.fit(*moons) is again
    x = torch.cat([moons[0][:20], _far_points()])
    assert torch.equal(fitted.predict(x).probs, again.predict(x).probs)
    assert torch.equal(fitted.predict(x).probs, fitted.predict(x).probs)  # predict itself is repeatable
    assert again.seed_ == 0 and again.likelihood_ == "categorical" and again.device_.type == "cpu"


def test_get_params_names_every_constructor_argument_and_clone_is_unfitted(case, fitted):
    _, factory = case
    posterior = factory(0)
    assert isinstance(posterior, NetworkPosterior) and isinstance(fitted, Posterior)
    own = [name for name in inspect.signature(type(posterior)).parameters if name != "shared"]
    assert set(posterior.get_params()) == {*own, *NetworkArgs.__annotations__} == {*SHARED_PARAMS, *type(posterior).options}
    copy = fitted.clone()
    assert type(copy) is type(fitted) and copy.get_params() == fitted.get_params()
    assert clone(fitted).get_params() == fitted.get_params()
    with pytest.raises(NotFittedError):
        copy.predict(torch.zeros(2, 2))


def test_bad_arguments_are_refused_in_init_with_one_line_naming_them(case):
    name, factory = case
    params = factory(0).get_params()
    for bad, argument in [*BAD_SHARED, *BAD_OPTIONS[name]]:
        with pytest.raises(ConfigError, match=f"^{argument}: ") as info:
            type(factory(0))(**(params | bad))
        assert "\n" not in str(info.value), (bad, str(info.value))


@pytest.fixture(scope="module")
def trained(moons):
    """Two networks trained on the two moons, outside any posterior."""
    return [train(build_model(_NET, seed), *moons, _TRAIN, seed=seed, device="cpu") for seed in (0, 1)]


def _weights(network: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in network.parameters()])


def test_an_already_trained_network_is_used_as_model(case, trained, moons):
    """model= instead of model_fn: the network is copied, never changed; MC dropout, the deep
    ensemble (model = its members) and Laplace skip training; the snapshot ensemble starts its
    cycles and SWAG its SWA phase from it."""
    name, factory = case
    before = [_weights(net).clone() for net in trained]
    params = factory(0).get_params() | {"model_fn": None}
    if name == "deep-ensemble":
        params |= {"model": trained, "n_samples": 2}
        with pytest.raises(ConfigError, match="^model: "):
            type(factory(0))(**(params | {"model": trained[0]}))
        with pytest.raises(ConfigError, match="^n_samples: "):
            type(factory(0))(**(params | {"n_samples": 3}))
        assert type(factory(0))(model=trained).n_samples == 2  # the members given count themselves
    else:
        params |= {"model": trained[0]}
    posterior = type(factory(0))(**params).fit(*moons)
    x, y = moons
    pred = posterior.predict(x[:7])
    assert isinstance(pred, Predictive) and pred.probs.shape[1:] == (7, 2)
    assert (posterior.predict_proba(x).argmax(-1) == y).float().mean() > 0.95
    assert all(torch.equal(_weights(net), w) for net, w in zip(trained, before))  # the given networks are untouched
    if name in ("mc-dropout", "laplace"):
        assert posterior.model_ is not trained[0] and torch.equal(_weights(posterior.model_), before[0])
    if name == "deep-ensemble":
        assert all(torch.equal(_weights(m), w) for m, w in zip(posterior.stack_.members, before))
    assert type(posterior)(**posterior.get_params()).fit(*moons).predict(x[:7]).probs.equal(pred.probs)


def test_to_device_keeps_the_predictions(case, fitted, moons):
    """Every posterior has to(device) -> self; moving a fitted posterior (here to the CPU it is on;
    tests/test_devices.py moves them to CUDA when present) keeps its samples."""
    _, factory = case
    with pytest.raises(NotFittedError):
        factory(0).to("cpu")
    posterior = fitted
    x = moons[0][:11]
    before = posterior.predict(x).probs
    assert posterior.to("cpu") is posterior
    after = posterior.predict(x).probs
    assert after.device.type == "cpu"
    torch.testing.assert_close(after, before)


def test_predictions_independent_of_batch_split(fitted, moons):
    x = torch.cat([moons[0][:50], _far_points()])
    whole = fitted.predict(x).probs
    parts = torch.cat([fitted.predict(x[i : i + 9]).probs for i in range(0, x.shape[0], 9)], dim=1)
    reversed_order = fitted.predict(x.flip(0)).probs.flip(1)
    torch.testing.assert_close(parts, whole, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(reversed_order, whole, rtol=1e-5, atol=1e-6)


def test_bald_far_from_data_exceeds_bald_on_training_points(fitted, moons, bald):
    train_bald = bald(fitted.predict(moons[0]))
    far_bald = bald(fitted.predict(_far_points()))
    # ReLU networks stay confident in many directions far away, so compare averages: the
    # posterior disagrees with itself off the data, on average, well beyond its disagreement on it
    # (not the maxima: a posterior with a real spread, as SWAG's, disagrees most on the training
    # points at the boundary between the moons, and that extreme is a training outcome)
    assert far_bald.mean() > 2 * train_bald.mean()


def test_every_registered_posterior_is_covered():
    assert {param.id for param in POSTERIOR_CASES} | {"gp"} == set(POSTERIORS) | {"batch-ensemble-rank1"}


def test_gaussian_process_follows_the_protocol():
    """The GP (regression, no network) is not a NetworkPosterior, but fits, predicts, moves,
    rebuilds from get_params and refuses bad arguments in __init__ the same way."""
    from activebayes.posteriors.gp import GaussianProcess

    x = torch.linspace(0, 1, 24).unsqueeze(-1)
    y = torch.sin(6 * x[:, 0])
    gp = GaussianProcess(n_samples=5, seed=0, device="cpu")
    assert not isinstance(gp, NetworkPosterior)
    assert set(gp.get_params()) == set(inspect.signature(GaussianProcess).parameters)
    with pytest.raises(NotFittedError):
        gp.to("cpu")
    assert gp.fit(x, y) is gp
    pred = gp.predict(x[:7])
    assert pred.mean.shape == pred.var.shape == (5, 7)
    assert gp.to("cpu") is gp and torch.equal(gp.predict(x[:7]).mean, pred.mean)
    again = type(gp)(**gp.get_params())
    assert again.get_params() == gp.get_params() and torch.equal(again.fit(x, y).predict(x[:7]).mean, pred.mean)
    with pytest.raises(NotFittedError):
        gp.clone().predict(x)
    for bad, argument in (({"n_samples": 1}, "n_samples"), ({"kernel": "cubic"}, "kernel"), ({"noise": -1.0}, "noise"),
                          ({"seed": 1.5}, "seed")):
        with pytest.raises(ConfigError, match=f"^{argument}: ") as info:
            GaussianProcess(**(gp.get_params() | bad))
        assert "\n" not in str(info.value)
