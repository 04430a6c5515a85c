"""`StandardisedTargets`: network posteriors fitted to regression targets in units of their
spread. Checked by equivariance, not by how well anything trains: the same seed on y and on
a·y + b gives the same standardised targets, so its predictions must be the same affine map
of each other."""

from __future__ import annotations

import pickle

import pytest
import torch
from torch import nn

from activebayes import DeepEnsemble, GaussianProcess, Laplace, MCDropout, MFVI, NotFittedError, TrainConfig
from activebayes.posteriors.base import clone
from activebayes.posteriors.standardised import StandardisedTargets, standardised, unwrapped

A, B = 2.5e5, 3.0e5  # house prices from a target of order one


def data():
    g = torch.Generator().manual_seed(0)
    x = torch.rand(60, 2, generator=g) * 4 - 2
    y = torch.sin(x[:, 0]) + 0.5 * x[:, 1] + 0.1 * torch.randn(60, generator=g)
    return x, y


def net():
    return nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Dropout(0.1), nn.Linear(32, 1))


POSTERIORS = {
    "mc-dropout": lambda: MCDropout(net, n_samples=6, seed=0, device="cpu", train=TrainConfig(epochs=30, lr=1e-2)),
    "deep-ensemble": lambda: DeepEnsemble(net, n_samples=3, seed=0, device="cpu", train=TrainConfig(epochs=20, lr=1e-2)),
    "laplace": lambda: Laplace(net, seed=0, device="cpu", train=TrainConfig(epochs=30, lr=1e-2)),
    "mfvi": lambda: MFVI(net, n_samples=6, seed=0, device="cpu", train=TrainConfig(epochs=30, lr=1e-2)),
}


@pytest.mark.parametrize("name", sorted(POSTERIORS))
def test_predictions_follow_an_affine_change_of_the_targets(name):
    x, y = data()
    small = StandardisedTargets(POSTERIORS[name]()).fit(x, y)
    big = StandardisedTargets(POSTERIORS[name]()).fit(x, A * y + B)
    assert big.scale_ == pytest.approx(A * small.scale_, rel=1e-6) and big.location_ == pytest.approx(A * small.location_ + B, rel=1e-6)
    p, q = small.predict(x[:7]), big.predict(x[:7])
    torch.testing.assert_close(q.mean.double(), A * p.mean.double() + B, rtol=1e-4, atol=1e-4 * A)
    torch.testing.assert_close(q.var.double(), A**2 * p.var.double(), rtol=1e-3, atol=1e-6 * A**2)
    noise_small, noise_big = torch.as_tensor(small.noise_).double(), torch.as_tensor(big.noise_).double()
    torch.testing.assert_close(noise_big, A**2 * noise_small, rtol=1e-3, atol=0.0)
    if hasattr(small.posterior, "predict_mean_var"):
        (m1, v1), (m2, v2) = small.predict_mean_var(x[:7]), big.predict_mean_var(x[:7])
        torch.testing.assert_close(m2.double(), A * m1.double() + B, rtol=1e-4, atol=1e-4 * A)
        torch.testing.assert_close(v2.double(), A**2 * v1.double(), rtol=1e-3, atol=1e-6 * A**2)


def test_the_network_sees_targets_of_order_one():
    """What the wrapped network is fitted to: (y − m) / s, whatever the targets' units."""
    x, y = data()
    seen = {}

    class Spy(MCDropout):
        def _fit_network(self, x, y):
            seen["y"] = y.clone()
            super()._fit_network(x, y)

    wrapped = StandardisedTargets(Spy(net, n_samples=2, seed=0, device="cpu", train=TrainConfig(epochs=2))).fit(x, 1e-6 * y + 5e-6)
    assert float(seen["y"].mean()) == pytest.approx(0.0, abs=1e-6) and float(seen["y"].std(correction=0)) == pytest.approx(1.0, rel=1e-5)
    assert wrapped.scale_ == pytest.approx(1e-6 * float(y.double().std(correction=0)), rel=1e-5)


def test_it_passes_through_where_it_does_not_apply():
    x, y = data()
    labels = (y > 0).long()
    clf = StandardisedTargets(MCDropout(lambda: nn.Sequential(nn.Linear(2, 8), nn.Dropout(0.1), nn.Linear(8, 2)), n_samples=3,
                                        seed=0, device="cpu", train=TrainConfig(epochs=2))).fit(x, labels)  # fmt: skip
    assert (clf.location_, clf.scale_) == (0.0, 1.0) and clf.predict_proba(x[:3]).shape == (3, 2)
    hetero = StandardisedTargets(MCDropout(lambda: nn.Sequential(nn.Linear(2, 8), nn.Dropout(0.1), nn.Linear(8, 2)), n_samples=3,
                                           likelihood="heteroscedastic", seed=0, device="cpu", train=TrainConfig(epochs=2))).fit(x, 100 * y)
    assert (hetero.location_, hetero.scale_) == (0.0, 1.0)  # it standardises its own targets
    gp = GaussianProcess(seed=0)
    assert standardised(gp) is gp and unwrapped(standardised(gp)) is gp  # so does the GP


def test_it_clones_pickles_and_moves_like_a_posterior():
    x, y = data()
    fitted = StandardisedTargets(POSTERIORS["mc-dropout"]()).fit(x, A * y + B)
    copy = clone(fitted)
    assert isinstance(copy, StandardisedTargets)
    with pytest.raises(NotFittedError):  # an unfitted copy
        copy.predict(x[:2])
    again = pickle.loads(pickle.dumps(fitted))
    torch.testing.assert_close(again.predict(x[:4]).mean, fitted.predict(x[:4]).mean)
    assert fitted.to("cpu") is fitted and fitted.seed_ == 0  # the wrapped posterior's attributes
    assert isinstance(standardised(POSTERIORS["laplace"]()), StandardisedTargets)


def test_the_loop_fits_a_regression_round_in_target_units(tmp_path):
    """A regression project whose targets are prices: the loop's round records its predictions
    and test RMSE in the targets' units, the same map of a project of order one."""
    import numpy as np

    from activebayes import ActiveLearningLoop, PoolStore, SimulatedOracle

    x, y = data()
    results = {}
    for name, target in (("unit", y), ("prices", A * y + B)):
        path = tmp_path / f"{name}.npz"
        np.savez(path, x=x.numpy(), y=target.double().numpy())
        with PoolStore(f"sqlite:///{tmp_path / name}.db") as store:
            store.create_project(name, task="regression")
            store.import_pool(name, path, pool_rows=np.arange(10, 60), test_rows=np.arange(10),
                              observations=[(str(r), float(target[r])) for r in range(20)])  # fmt: skip
            factory = lambda seed: MCDropout(net, n_samples=6, seed=seed, device="cpu", train=TrainConfig(epochs=30, lr=1e-2))  # noqa: E731
            loop = ActiveLearningLoop(factory, "variance", store, name, SimulatedOracle(target.double().numpy()), batch_size=4, seed=0)
            result = loop.step()
            results[name] = (result.metrics["rmse"], [q.prediction for q in store.queries(name, result.number)])
    (rmse_unit, unit), (rmse_prices, prices) = results["unit"], results["prices"]
    assert rmse_prices == pytest.approx(A * rmse_unit, rel=1e-3)
    for u, p in zip(unit, prices):
        assert p["mean"] == pytest.approx(A * u["mean"] + B, rel=1e-4) and p["sd"] == pytest.approx(A * u["sd"], rel=1e-3)


def test_the_cli_s_sized_fit_fits_in_target_units():
    """`round`'s posteriors come from SizedFit (training sized to the labels): it fits them in
    StandardisedTargets too (house prices gave MC dropout a test RMSE of 4.4e5 on diabetes x 1000
    + 3e5, against 6.5e4 now, 1,000 times its RMSE on diabetes itself)."""
    from activebayes_cli._model import SizedFit

    x, y = data()
    kwargs = {"n_samples": 4, "device": "cpu"}
    small = SizedFit(MCDropout, net, kwargs, seed=0, epochs=20).fit(x, y)
    big = SizedFit(MCDropout, net, kwargs, seed=0, epochs=20).fit(x, A * y + B)
    assert isinstance(big, StandardisedTargets)
    torch.testing.assert_close(big.predict(x[:5]).mean.double(), A * small.predict(x[:5]).mean.double() + B, rtol=1e-4, atol=1e-4 * A)
