"""GaussianProcess: closed forms, sklearn reference, Gauss–Hermite moments, EIG, contract."""

import math

import numpy as np
import pytest
import torch
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, WhiteKernel

from activebayes.acquisition.scores import eig, variance
from activebayes.errors import ConfigError, NotFittedError, ShapeError
from activebayes.posteriors import resolve_posterior
from activebayes.posteriors.gp import GaussianProcess
from activebayes.predictive import GaussianPredictive

LENGTHSCALE, OUTPUTSCALE, NOISE = 0.7, 1.8, 0.05


def _data(n=25, d=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, d, generator=g) * torch.tensor([2.0, 5.0])[:d]  # features on different scales
    y = torch.sin(3 * x[:, 0]) + 0.3 * x[:, -1] + 0.1 * torch.randn(n, generator=g)
    xq = torch.rand(30, d, generator=g) * 6.0 - 1.0  # in and out of the data
    return x, y, xq


def _fixed(**kw):
    return GaussianProcess(lengthscale=LENGTHSCALE, outputscale=OUTPUTSCALE, noise=NOISE, device="cpu", **kw)


def _by_hand(x, y, xq, kernel="rbf"):
    """μ = ȳ + K*ᵀ(K + σ²I)⁻¹(y − ȳ), σ² = k** − K*ᵀ(K + σ²I)⁻¹K*, float64 with torch.linalg."""
    x, y, xq = x.double(), y.double(), xq.double()

    def k(a, b):
        r = torch.cdist(a, b) / LENGTHSCALE
        if kernel == "rbf":
            return OUTPUTSCALE * torch.exp(-0.5 * r**2)
        return OUTPUTSCALE * (1 + math.sqrt(5) * r + 5 * r**2 / 3) * torch.exp(-math.sqrt(5) * r)

    ybar = y.mean()
    K = k(x, x) + NOISE * torch.eye(len(x), dtype=torch.float64)
    Ks = k(x, xq)
    mean = ybar + Ks.T @ torch.linalg.solve(K, y - ybar)
    var = OUTPUTSCALE - (Ks * torch.linalg.solve(K, Ks)).sum(0)
    return mean, var


def _sklearn(x, y, xq, kernel="rbf"):
    base = RBF(LENGTHSCALE, "fixed") if kernel == "rbf" else Matern(LENGTHSCALE, "fixed", nu=2.5)
    k = ConstantKernel(OUTPUTSCALE, "fixed") * base + WhiteKernel(NOISE, "fixed")
    ybar = float(y.double().mean())
    reg = GaussianProcessRegressor(kernel=k, optimizer=None, alpha=1e-12)
    reg.fit(x.double().numpy(), y.double().numpy() - ybar)
    mean, std = reg.predict(xq.double().numpy(), return_std=True)
    return torch.from_numpy(mean + ybar), torch.from_numpy(std**2 - NOISE)  # latent variance


@pytest.mark.parametrize("kernel", ["rbf", "matern52"])
@pytest.mark.parametrize("ard", [True, False])
def test_fixed_hyperparameters_match_closed_form_and_sklearn(kernel, ard):
    x, y, xq = _data()
    gp = _fixed(kernel=kernel, ard=ard).fit(x, y)
    mean, var = gp.predict_mean_var(xq)
    assert mean.dtype == torch.float32 and var.dtype == torch.float32
    for ref_mean, ref_var in (_by_hand(x, y, xq, kernel), _sklearn(x, y, xq, kernel)):
        torch.testing.assert_close(mean.double(), ref_mean, atol=1e-5, rtol=0)
        torch.testing.assert_close(var.double(), ref_var, atol=1e-5, rtol=0)
    # Fixed values are reported back in original units, unchanged.
    assert gp.noise_ == pytest.approx(NOISE) and gp.outputscale_ == pytest.approx(OUTPUTSCALE)
    torch.testing.assert_close(gp.lengthscale_, torch.full_like(gp.lengthscale_, LENGTHSCALE))


def test_log_marginal_likelihood_matches_sklearn():
    x, y, _ = _data()
    gp = _fixed().fit(x, y)
    k = ConstantKernel(OUTPUTSCALE, "fixed") * RBF(LENGTHSCALE, "fixed") + WhiteKernel(NOISE, "fixed")
    reg = GaussianProcessRegressor(kernel=k, optimizer=None, alpha=1e-12)
    reg.fit(x.double().numpy(), y.double().numpy() - float(y.double().mean()))
    assert gp.log_marginal_likelihood_ == pytest.approx(reg.log_marginal_likelihood_value_, abs=1e-6)


@pytest.mark.parametrize("s", [2, 5, 16, 40])
def test_gauss_hermite_representation_reproduces_moments(s):
    x, y, xq = _data()
    gp = _fixed().fit(x, y)
    pred = gp.predict(xq, n_samples=s)
    mu, sigma2 = gp.predict_mean_var(xq)
    w = pred.weights.double()
    assert pred.mean.shape == (s, 30) and pred.var.shape == (s, 30) and pred.weights.shape == (s,)
    assert float(w.sum()) == pytest.approx(1.0, abs=1e-6)
    centre = torch.einsum("s,sn->n", w, pred.mean.double())
    spread = torch.einsum("s,sn->n", w, (pred.mean.double() - mu.double()) ** 2)
    torch.testing.assert_close(centre, mu.double(), atol=1e-6, rtol=0)
    torch.testing.assert_close(spread, sigma2.double(), atol=1e-6, rtol=0)
    torch.testing.assert_close(variance(pred, part="epistemic").double(), sigma2.double(), atol=1e-6, rtol=0)
    torch.testing.assert_close(variance(pred, part="aleatoric"), torch.full((30,), NOISE), atol=1e-7, rtol=0)
    torch.testing.assert_close(variance(pred, part="total").double(), sigma2.double() + NOISE, atol=1e-6, rtol=0)


def test_predict_is_independent_of_batching():
    x, y, xq = _data()
    gp = _fixed().fit(x, y)
    whole = gp.predict(xq)
    parts = [gp.predict(xq[i : i + 7]) for i in range(0, 30, 7)]
    assert torch.equal(whole.mean, torch.cat([p.mean for p in parts], dim=1))
    assert torch.equal(whole.weights, parts[0].weights)


def test_eig_matches_half_log_one_plus_snr():
    """True I[y; f(x)] = ½ log(1 + σ²/σ_ε²). Moment matching is exact for this representation; the
    default S-node quadrature is biased low once σ/σ_ε is large (here SNR <= ~10 at S=16)."""
    x = torch.linspace(0, 1, 10).unsqueeze(-1)
    gp = GaussianProcess(lengthscale=0.2, outputscale=1.0, noise=0.1, device="cpu").fit(x, torch.sin(6 * x[:, 0]))
    xq = torch.tensor([[0.05], [0.5], [0.8], [1.3], [3.0]])
    _, sigma2 = gp.predict_mean_var(xq)
    truth = 0.5 * torch.log1p(sigma2.double() / 0.1)
    pred = gp.predict(xq, n_samples=16)
    torch.testing.assert_close(eig(pred, estimator="moment-matched").double(), truth, atol=1e-5, rtol=0)
    quad = eig(pred).double()
    assert float((quad - truth).abs().max()) < 5e-3
    assert bool((quad <= truth + 1e-5).all())
    # Where the ratio is small the quadrature is exact to float precision.
    assert float((quad - truth).abs()[:3].max()) < 1e-4


def test_learnt_hyperparameters_on_noisy_sine():
    g = torch.Generator().manual_seed(1)
    x = torch.rand(40, 1, generator=g) * 6.0
    y = torch.sin(x[:, 0]) + 0.1 * torch.randn(40, generator=g)
    gp = GaussianProcess(seed=0, device="cpu").fit(x, y)  # defaults: rbf, Adam 100 steps at lr 0.1
    assert 0.05 <= math.sqrt(gp.noise_) <= 0.2
    # sklearn's L-BFGS maximum of the same evidence (prior mean ȳ, C * RBF + white noise).
    k = ConstantKernel(1.0) * RBF(1.0) + WhiteKernel(0.1)
    reg = GaussianProcessRegressor(kernel=k, alpha=1e-12).fit(x.double().numpy(), (y - y.mean()).double().numpy())
    assert gp.log_marginal_likelihood_ == pytest.approx(reg.log_marginal_likelihood_value_, abs=0.05)
    assert gp.log_marginal_likelihood_ <= reg.log_marginal_likelihood_value_ + 1e-6
    assert float(gp.lengthscale_[0]) == pytest.approx(reg.kernel_.k1.k2.length_scale, rel=0.1)
    near, far = gp.predict(x), gp.predict(torch.tensor([[15.0], [-10.0]]))
    assert float(variance(far, part="epistemic").min()) > 10 * float(variance(near, part="epistemic").max())
    mean, _ = gp.predict_mean_var(torch.linspace(0.5, 5.5, 20).unsqueeze(-1))
    assert float((mean - torch.sin(torch.linspace(0.5, 5.5, 20))).abs().max()) < 0.15


def test_same_seed_same_result_and_fixed_parts_stay_fixed():
    x, y, xq = _data()
    a = GaussianProcess(noise=NOISE, training_iters=10, seed=3, device="cpu").fit(x, y).predict(xq)
    b = GaussianProcess(noise=NOISE, training_iters=10, seed=3, device="cpu").fit(x, y)
    assert torch.equal(a.mean, b.predict(xq).mean) and torch.equal(a.var, b.predict(xq).var)
    assert b.noise_ == pytest.approx(NOISE) and b.lengthscale_.shape == (2,)


def test_not_fitted_raises():
    gp = _fixed()
    with pytest.raises(NotFittedError):
        gp.predict(torch.zeros(3, 2))
    with pytest.raises(NotFittedError):
        gp.predict_mean_var(torch.zeros(3, 2))
    assert not hasattr(gp, "predict_proba")


def test_fit_returns_self_and_output_types():
    x, y, xq = _data()
    gp = _fixed(n_samples=6)
    assert gp.fit(x, y) is gp
    pred = gp.predict(xq)
    assert isinstance(pred, GaussianPredictive) and pred.mean.shape == (6, 30)
    assert pred.mean.dtype == pred.var.dtype == pred.weights.dtype == torch.float32
    GaussianPredictive(pred.mean, pred.var, pred.weights)  # passes full validation
    assert gp.predict(xq[:0]).mean.shape == (6, 0)
    assert gp.to("cpu") is gp and torch.equal(gp.predict(xq).mean, pred.mean)


def test_bad_input_raises_shape_error():
    x, y, xq = _data()
    bad_x = x.clone()
    bad_x[3, 1] = float("nan")
    with pytest.raises(ShapeError, match="x"):
        _fixed().fit(bad_x, y)
    with pytest.raises(ShapeError, match="y"):
        _fixed().fit(x, torch.where(torch.arange(25) == 2, float("nan"), y))
    with pytest.raises(ShapeError, match="2 dimensions"):
        _fixed().fit(x[:, 0], y)
    with pytest.raises(ShapeError, match="1 dimension"):
        _fixed().fit(x, y[:, None])
    with pytest.raises(ShapeError, match="N=25"):
        _fixed().fit(x, y[:-1])
    gp = _fixed().fit(x, y)
    with pytest.raises(ShapeError, match="D=2"):
        gp.predict(xq[:, :1])
    with pytest.raises(ShapeError, match="NaN"):
        gp.predict(torch.full((2, 2), float("inf")))


def test_bad_config_raises_config_error():
    for kwargs in ({"kernel": "linear"}, {"noise": -1.0}, {"lengthscale": 0.0}, {"n_samples": 1}, {"lr": 0.0}):
        with pytest.raises(ConfigError):
            GaussianProcess(**kwargs)
    x, y, _ = _data()
    with pytest.raises(ConfigError, match="n_samples"):
        _fixed().fit(x, y).predict(x, n_samples=1)


def test_registry_name_resolves():
    assert resolve_posterior("gp") is GaussianProcess


def test_hermite_rule_integrates_polynomials():
    from activebayes.posteriors.gp import hermite_rule

    t, w = hermite_rule(5)
    z = math.sqrt(2.0) * t  # E[z^k] for z ~ N(0, 1): 1, 0, 1, 0, 3, 0, 15
    moments = [float((w * z**k).sum()) for k in range(7)]
    np.testing.assert_allclose(moments, [1, 0, 1, 0, 3, 0, 15], atol=1e-10)
