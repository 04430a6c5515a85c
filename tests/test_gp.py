"""GaussianProcess: closed forms, sklearn reference, Gauss–Hermite moments, EIG, contract."""

import math

import numpy as np
import pytest
import torch
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, WhiteKernel

from activebayes.acquisition.registry import greedy, resolve_acquisition
from activebayes.acquisition.scores import bald, eig, entropy, variance
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
    _, observed = gp.predict_mean_var(xq, observation_noise=True)  # y's variance: σ² + σ_ε²
    torch.testing.assert_close(observed.double(), var.double() + gp.noise_, atol=1e-6, rtol=1e-6)
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
    """True I[y; f(x)] = ½ log(1 + σ²/σ_ε²), from `predict_mean_var`, at σ/σ_ε from ~0 to 100.

    This used to hold only for the moment-matched estimator: the default quadrature read the 16
    Gauss–Hermite nodes as a 16-component mixture, whose EIG is capped by the entropy of the node
    weights (1.668 nats) and fell below the truth as σ/σ_ε grew. `predict` now declares the latent
    Gaussian, so every estimator returns the closed form."""
    x = torch.linspace(0, 1, 10).unsqueeze(-1)
    gp = GaussianProcess(lengthscale=0.2, outputscale=1.0, noise=0.1, device="cpu").fit(x, torch.sin(6 * x[:, 0]))
    xq = torch.tensor([[0.05], [0.5], [0.8], [1.3], [3.0], [50.0]])
    _, sigma2 = gp.predict_mean_var(xq)
    truth = 0.5 * torch.log1p(sigma2.double() / gp.noise_)
    pred = gp.predict(xq, n_samples=16)
    for estimator in ("quadrature", "moment-matched"):
        torch.testing.assert_close(eig(pred, estimator=estimator).double(), truth, atol=1e-7, rtol=1e-6)
    torch.testing.assert_close(bald(pred).double(), truth, atol=1e-7, rtol=1e-6)
    entropy_truth = 0.5 * torch.log(2 * math.pi * math.e * (sigma2.double() + gp.noise_))
    torch.testing.assert_close(entropy(pred).double(), entropy_truth, atol=1e-7, rtol=1e-6)


def test_eig_does_not_saturate_at_high_signal_to_noise():
    """σ_f/σ_ε = 100 (prior variance 1, noise 1e-4): I = ½ log(1 + 10⁴) = 4.605 nats far from the data,
    where the 16-node mixture reading was capped at H[w] = 1.668."""
    x = torch.tensor([[0.0], [1.0]])
    gp = GaussianProcess(lengthscale=0.1, outputscale=1.0, noise=1e-4, device="cpu").fit(x, torch.tensor([0.0, 1.0]))
    xq = torch.tensor([[100.0], [0.5], [0.9], [0.99]])
    _, sigma2 = gp.predict_mean_var(xq)
    assert float(sigma2[0]) == pytest.approx(1.0, rel=1e-6)  # the prior variance, far away
    truth = 0.5 * torch.log1p(sigma2.double() / gp.noise_)
    pred = gp.predict(xq)
    got = eig(pred).double()
    assert float(got[0]) == pytest.approx(0.5 * math.log1p(1e4), rel=1e-6)
    torch.testing.assert_close(got, truth, atol=1e-7, rtol=1e-6)
    cap = float(-(pred.weights.double() * pred.weights.double().log()).sum())
    assert cap == pytest.approx(1.668, abs=1e-3)
    nodes_only = GaussianPredictive(pred.mean, pred.var, pred.weights)  # the old reading of predict
    assert float(eig(nodes_only)[0]) <= cap + 1e-4  # I[y; θ] <= H[θ] for a discrete θ
    assert float(got[0]) > cap + 2.9


@pytest.mark.parametrize("name", ["eig", "bald", "entropy", "power-bald", "power-entropy", "softmax-bald"])
def test_four_points_at_the_ends_pick_the_middle(name):
    """Training points at 0, 0.02, 0.98, 1 and noise 1e-4: the posterior variance, and so every
    information score, peaks at x = 0.5 and falls strictly towards the data on each side. With
    the mixture reading of the nodes, 81 of the 101 candidates tied at the 1.668-nat cap and
    `eig` picked 0.57. The layout is mirror-symmetric, so x and 1 − x score the same; the
    candidates on each side are strictly ordered."""
    x = torch.tensor([[0.0], [0.02], [0.98], [1.0]])
    gp = GaussianProcess(lengthscale=0.2, outputscale=1.0, noise=1e-4, device="cpu").fit(x, torch.sin(6 * x[:, 0]))
    xq = torch.linspace(0, 1, 101, dtype=torch.float64).unsqueeze(-1)
    pred = gp.predict(xq)
    acq = resolve_acquisition(name)
    scores = acq.score(pred)
    _, sigma2 = gp.predict_mean_var(xq)
    if name.endswith("entropy"):
        truth = 0.5 * torch.log(2 * math.pi * math.e * (sigma2.double() + gp.noise_))
    else:
        truth = 0.5 * torch.log1p(sigma2.double() / gp.noise_)
    torch.testing.assert_close(scores.double(), truth, atol=1e-6, rtol=1e-6)
    assert int(scores.argmax()) == 50 and int((scores == scores.max()).sum()) == 1
    assert bool((scores[50:99].diff() < 0).all()) and bool((scores[2:51].diff() > 0).all())  # 0.5 -> 0.98, 0.02 -> 0.5
    if acq.selector is greedy:
        assert acq.select(pred, 1).indices.tolist() == [50]


def test_predict_declares_the_latent_gaussian():
    x, y, xq = _data()
    gp = _fixed().fit(x, y)
    pred = gp.predict(xq)
    mu, sigma2 = gp.predict_mean_var(xq)
    assert torch.equal(pred.latent_mean, mu) and torch.equal(pred.latent_var, sigma2)
    full = GaussianPredictive(pred.mean, pred.var, pred.weights, latent_mean=pred.latent_mean, latent_var=pred.latent_var)
    assert full.has_latent  # passes full validation
    picked = pred.candidates(torch.tensor([4, 1]))
    assert torch.equal(picked.latent_var, sigma2[[4, 1]]) and torch.equal(pred.to("cpu").latent_mean, mu)
    torch.testing.assert_close(eig(picked), eig(pred)[[4, 1]], atol=0, rtol=0)


def test_learnt_hyperparameters_on_noisy_sine():
    g = torch.Generator().manual_seed(1)
    x = torch.rand(40, 1, generator=g) * 6.0
    y = torch.sin(x[:, 0]) + 0.1 * torch.randn(40, generator=g)
    gp = GaussianProcess(seed=0, device="cpu").fit(x, y)  # defaults: rbf, BoTorch priors (MAP), L-BFGS-B
    assert 0.05 <= math.sqrt(gp.noise_) <= 0.2
    # sklearn's L-BFGS maximum of the same evidence (prior mean ȳ, C * RBF + white noise); the MAP
    # fit under BoTorch's priors lands within 0.05 nats of it (0.024 seen), and never above it.
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
    """Was Adam for 10 steps; training_iters is now the L-BFGS-B iteration cap."""
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


# ------------------------------------------------------------------ BoTorch backend
def _fitted_ls(gp):
    """The fitted lengthscales in original units, float64 (lengthscale_ is float32 for display)."""
    model = gp.model_.model if gp.approximate_ else gp.model_
    bounds = gp.model_.input_transform.bounds
    ls = model.covar_module.base_kernel.lengthscale.detach().reshape(-1)
    return ls * (bounds[1] - bounds[0] if gp.ard else (bounds[1] - bounds[0])[:1])


def _closed_form(gp, x, y, xq, kernel="rbf"):
    """μ, σ², log p(y) from the textbook formulas with the GP's fitted hyper-parameters (original units)."""
    x, y, xq = x.double(), y.double(), xq.double()
    ls, a, s2 = _fitted_ls(gp), gp.outputscale_, gp.noise_

    def k(u, v):
        r = torch.cdist(u / ls, v / ls)
        if kernel == "rbf":
            return a * torch.exp(-0.5 * r**2)
        return a * (1 + math.sqrt(5) * r + 5 * r**2 / 3) * torch.exp(-math.sqrt(5) * r)

    ybar = y.mean()
    c = torch.linalg.cholesky(k(x, x) + s2 * torch.eye(len(x), dtype=torch.float64))
    ks = k(x, xq)
    alpha = torch.cholesky_solve((y - ybar)[:, None], c)[:, 0]
    v = torch.linalg.solve_triangular(c, ks, upper=False)
    mean, var = ybar + ks.T @ alpha, a - (v * v).sum(0)
    lml = -0.5 * (y - ybar) @ alpha - torch.log(torch.diagonal(c)).sum() - 0.5 * len(x) * math.log(2 * math.pi)
    return mean, var, float(lml)


@pytest.mark.parametrize("kernel", ["rbf", "matern52"])
@pytest.mark.parametrize("ard", [True, False])
@pytest.mark.parametrize("priors", [True, False])
def test_learnt_posterior_and_evidence_match_closed_form(kernel, ard, priors):
    """With the LEARNT hyper-parameters plugged into k_*ᵀ(K + σ²I)⁻¹(y − ȳ), k** − k_*ᵀ(K + σ²I)⁻¹k_*
    and −½ yᵀ(K + σ²I)⁻¹y − ½ log det(K + σ²I) − N/2 log 2π: float64 to 1e-9, float32 outputs to 1e-6."""
    x, y, xq = _data()
    gp = GaussianProcess(kernel=kernel, ard=ard, priors=priors, seed=0, device="cpu").fit(x, y)
    assert type(gp.model_).__name__ == "SingleTaskGP" and gp.approximate_ is False
    mean, var, lml = _closed_form(gp, x, y, xq, kernel)
    mu64, var64 = gp._latent(xq)
    torch.testing.assert_close(mu64, mean, atol=1e-9, rtol=0)
    torch.testing.assert_close(var64, var, atol=1e-9, rtol=0)
    mu32, var32 = gp.predict_mean_var(xq)
    torch.testing.assert_close(mu32.double(), mean, atol=1e-6, rtol=0)
    torch.testing.assert_close(var32.double(), var, atol=1e-6, rtol=0)
    assert gp.log_marginal_likelihood_ == pytest.approx(lml, abs=1e-6)
    assert gp.lengthscale_.shape == ((2,) if ard else (1,))
    torch.testing.assert_close(gp.lengthscale_, _fitted_ls(gp).float())


def test_fixed_hyperparameters_are_reproduced_exactly_in_original_units():
    """Converted into the normalised/standardised units and back: equal to float64 round-off."""
    x, y, _ = _data()
    for ard in (True, False):
        gp = _fixed(ard=ard).fit(x, y)
        assert gp.noise_ == pytest.approx(NOISE, rel=1e-12) and gp.outputscale_ == pytest.approx(OUTPUTSCALE, rel=1e-12)
        torch.testing.assert_close(_fitted_ls(gp), torch.full_like(_fitted_ls(gp), LENGTHSCALE), atol=0, rtol=1e-12)
    # partly fixed: the given values stay, the rest are learnt
    gp = GaussianProcess(noise=NOISE, lengthscale=LENGTHSCALE, seed=0, device="cpu").fit(x, y)
    assert gp.noise_ == pytest.approx(NOISE, rel=1e-12)
    torch.testing.assert_close(_fitted_ls(gp), torch.full((2,), LENGTHSCALE, dtype=torch.float64), atol=0, rtol=1e-12)
    assert gp.outputscale_ != pytest.approx(gp.model_.outcome_transform.stdvs.item() ** 2, rel=1e-6)  # moved off a = 1
    # a fixed noise below BoTorch's learnt-noise floor (1e-4 standardised) is honoured
    tiny = GaussianProcess(noise=1e-8, device="cpu").fit(x, y)
    assert tiny.noise_ == pytest.approx(1e-8, rel=1e-12)


def test_maximum_likelihood_without_priors_matches_sklearn():
    """priors=False is type-II maximum likelihood: the same optimum as sklearn's L-BFGS fit of the
    same model (prior mean ȳ, C * RBF + white noise); with BoTorch's priors (MAP) the evidence is lower."""
    g = torch.Generator().manual_seed(1)
    x = torch.rand(40, 1, generator=g) * 6.0
    y = torch.sin(x[:, 0]) + 0.1 * torch.randn(40, generator=g)
    mle = GaussianProcess(priors=False, seed=0, device="cpu").fit(x, y)
    k = ConstantKernel(1.0) * RBF(1.0) + WhiteKernel(0.1)
    reg = GaussianProcessRegressor(kernel=k, alpha=1e-12).fit(x.double().numpy(), (y - y.mean()).double().numpy())
    assert mle.log_marginal_likelihood_ == pytest.approx(reg.log_marginal_likelihood_value_, abs=1e-4)
    assert float(mle.lengthscale_[0]) == pytest.approx(reg.kernel_.k1.k2.length_scale, rel=1e-2)
    assert mle.noise_ == pytest.approx(reg.kernel_.k2.noise_level, rel=1e-2)
    assert mle.outputscale_ == pytest.approx(reg.kernel_.k1.k1.constant_value, rel=1e-2)
    map_ = GaussianProcess(seed=0, device="cpu").fit(x, y)
    assert map_.log_marginal_likelihood_ < mle.log_marginal_likelihood_


def test_fit_is_deterministic_for_a_seed_and_leaves_the_global_rng_alone():
    x, y, xq = _data()
    state = torch.get_rng_state()
    a = GaussianProcess(seed=5, device="cpu").fit(x, y)
    assert torch.equal(torch.get_rng_state(), state)
    b = GaussianProcess(seed=5, device="cpu").fit(x, y)
    assert a.noise_ == b.noise_ and a.outputscale_ == b.outputscale_ and torch.equal(a.lengthscale_, b.lengthscale_)
    assert a.log_marginal_likelihood_ == b.log_marginal_likelihood_
    assert torch.equal(a._latent(xq)[0], b._latent(xq)[0]) and torch.equal(a._latent(xq)[1], b._latent(xq)[1])


def test_retries_draw_from_the_seeded_rng(monkeypatch):
    """fit_gpytorch_mll retries a failed attempt from values drawn by sample_all_priors (torch RNG).
    Failing the first attempt of every fit exercises those draws: same seed, same result; and when
    every attempt fails, a RuntimeWarning and the starting values instead of BoTorch's error."""
    import warnings

    from botorch.exceptions.warnings import OptimizationWarning
    from botorch.optim import fit as optim_fit

    import activebayes.posteriors.gp as gp_module

    calls = []

    def first_fails(mll, **kw):
        result = optim_fit.fit_gpytorch_mll_scipy(mll, **kw)
        calls.append(1)
        if len(calls) == 1:
            warnings.warn("forced failure", OptimizationWarning)
        return result

    monkeypatch.setattr(gp_module, "fit_gpytorch_mll_scipy", first_fails)
    x, y, _ = _data()
    runs = []
    for seed in (1, 1, 2):
        calls.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gp = GaussianProcess(seed=seed, device="cpu").fit(x, y)
        assert len(calls) == 2
        runs.append((gp.noise_, gp.outputscale_, gp.lengthscale_.tolist()))
    assert runs[0] == runs[1] and runs[0] != runs[2]

    def always_fails(mll, **kw):
        warnings.warn("forced failure", OptimizationWarning)
        return optim_fit.fit_gpytorch_mll_scipy(mll, **kw)

    monkeypatch.setattr(gp_module, "fit_gpytorch_mll_scipy", always_fails)
    with pytest.warns(RuntimeWarning, match="every attempt"), warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=OptimizationWarning)  # BoTorch re-raises each attempt's
        gp = GaussianProcess(priors=True, seed=0, device="cpu").fit(x, y)
    s_y = gp.model_.outcome_transform.stdvs.item()
    assert gp.outputscale_ == pytest.approx(s_y**2) and gp.noise_ == pytest.approx(math.exp(-5.0) * s_y**2)


def test_to_moves_and_predicts_the_same():
    import copy

    x, y, xq = _data()
    gp = GaussianProcess(seed=0, device="cpu").fit(x, y)
    ref = gp._latent(xq)
    moved = copy.deepcopy(gp)
    assert moved.to("cpu") is moved and moved.device_ == torch.device("cpu")
    assert torch.equal(moved._latent(xq)[0], ref[0]) and torch.equal(moved._latent(xq)[1], ref[1])
    assert moved.model_.train_inputs[0].device.type == "cpu"


def test_botorch_model_is_the_fitted_singletaskgp_in_original_units():
    """`model_` / `botorch_model()` is BoTorch's SingleTaskGP with Normalize and Standardize: its
    posterior (original units) equals predict_mean_var, and BoTorch acquisitions accept it."""
    from botorch.acquisition.active_learning import qNegIntegratedPosteriorVariance
    from botorch.models import SingleTaskGP
    from botorch.models.transforms.input import Normalize
    from botorch.models.transforms.outcome import Standardize

    x, y, xq = _data()
    gp = GaussianProcess(seed=0, device="cpu").fit(x, y)
    model = gp.botorch_model()
    assert model is gp.model_ and isinstance(model, SingleTaskGP)
    assert isinstance(model.input_transform, Normalize) and isinstance(model.outcome_transform, Standardize)
    post = model.posterior(xq.double())
    mu, var = gp._latent(xq)
    torch.testing.assert_close(post.mean.squeeze(-1), mu, atol=1e-9, rtol=0)
    torch.testing.assert_close(post.variance.squeeze(-1), var, atol=1e-9, rtol=0)
    acq = qNegIntegratedPosteriorVariance(model, mc_points=xq.double())
    assert acq(xq[:4, None, :].double()).shape == (4,)
    with pytest.raises(NotFittedError):
        GaussianProcess().botorch_model()


def test_above_max_exact_the_variational_gp_is_used():
    """N > max_exact: SingleTaskVariationalGP. With fixed hyper-parameters and as many inducing points
    as data it recovers the exact posterior, and its ELBO is a lower bound on the exact evidence."""
    from botorch.models import SingleTaskVariationalGP

    x, y, xq = _data()
    exact = _fixed(max_exact=25).fit(x, y)  # N = 25 = max_exact: still exact
    assert exact.approximate_ is False
    svgp = _fixed(max_exact=24, training_iters=500).fit(x, y)
    assert svgp.approximate_ is True and isinstance(svgp.botorch_model(), SingleTaskVariationalGP)
    assert svgp.noise_ == pytest.approx(NOISE, rel=1e-12) and svgp.outputscale_ == pytest.approx(OUTPUTSCALE, rel=1e-12)
    mu, var = svgp.predict_mean_var(xq)
    ref_mu, ref_var = exact.predict_mean_var(xq)
    torch.testing.assert_close(mu, ref_mu, atol=1e-3, rtol=0)  # 1.1e-4 seen (Kuu jitter)
    torch.testing.assert_close(var, ref_var, atol=1e-3, rtol=0)  # 3e-5 seen
    assert exact.log_marginal_likelihood_ - 1e-2 < svgp.log_marginal_likelihood_ <= exact.log_marginal_likelihood_ + 1e-9
    # fewer inducing points, learnt hyper-parameters: a usable, deterministic fit
    few = GaussianProcess(max_exact=10, n_inducing=8, seed=0, device="cpu").fit(x, y)
    again = GaussianProcess(max_exact=10, n_inducing=8, seed=0, device="cpu").fit(x, y)
    assert few.approximate_ and torch.equal(few.predict(xq).mean, again.predict(xq).mean)
    pred = few.predict(xq, n_samples=4)
    assert pred.mean.shape == (4, 30) and bool((pred.latent_var >= 0).all())
    assert few.to("cpu") is few and torch.equal(few.predict(xq, n_samples=4).mean, pred.mean)
    assert few.log_marginal_likelihood_ <= exact.log_marginal_likelihood_ + 50  # finite, an ELBO


def test_bad_backend_config_raises_config_error():
    for kwargs in ({"max_exact": 0}, {"n_inducing": 0}, {"training_iters": -1}, {"seed": "a"}, {"lr": float("nan")}):
        with pytest.raises(ConfigError):
            GaussianProcess(**kwargs)
