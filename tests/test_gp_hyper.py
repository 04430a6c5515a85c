"""GaussianProcess(hyper_samples=K): the hyper-parameters' posterior against closed forms and a
brute-force quadrature, and the mixture predictive's contract."""

import math
from dataclasses import replace

import pytest
import torch
from gpytorch.priors import LogNormalPrior
from scipy.stats import multivariate_t

from activebayes.acquisition.scores import variance
from activebayes.errors import ConfigError
from activebayes.posteriors._gp_hyper import HyperModel, _factor, draw_t, log_evidence, log_prior
from activebayes.posteriors._gp_kernels import Kernel, parts
from activebayes.posteriors.gp import GaussianProcess

LENGTHSCALE, OUTPUTSCALE, NOISE = 0.7, 1.8, 0.05


def _data(n=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 1, generator=g, dtype=torch.float64) * 3.0
    y = torch.sin(2 * x[:, 0]) + 0.3 * torch.randn(n, generator=g, dtype=torch.float64)
    return x, y, torch.linspace(-0.5, 3.5, 5, dtype=torch.float64)[:, None]


def _units(x, y):
    """(x̃ [N, 1], ỹ [N], lo, range, m_y, s_y) as the GP normalises and standardises."""
    lo, span = x.min(), x.max() - x.min()
    return (x - lo) / span, (y - y.mean()) / y.std(), lo, span, y.mean(), y.std()


def _by_hand(xt, yt, qt, ls, a, noise):
    """Evidence log p(ỹ) and latent μ [M], σ² [M] at qt of the RBF GP (ℓ̃, a, σ̃²), torch.linalg."""
    def k(u, v):
        return a * torch.exp(-0.5 * torch.cdist(u, v) ** 2 / ls**2)

    c = k(xt, xt) + noise * torch.eye(len(xt), dtype=torch.float64)
    evidence = torch.distributions.MultivariateNormal(torch.zeros(len(xt), dtype=torch.float64), c).log_prob(yt)
    ks = k(xt, qt)
    mean = ks.T @ torch.linalg.solve(c, yt)
    var = a - (ks * torch.linalg.solve(c, ks)).sum(0)
    return float(evidence), mean, var


@pytest.mark.parametrize("free", ["noise", "outputscale", "lengthscale"])
def test_mixture_matches_quadrature_over_one_free_hyperparameter(free):
    """One hyper-parameter learnt, the others fixed: the predictive's mean and variance by
    importance sampling (K = 3000) against the trapezoid rule on a fine grid of its log,
    p(φ | y) ∝ p(ỹ | φ) p(φ) in log coordinates (LogNormal priors: a Normal of φ; flat on a: e^φ)."""
    x, y, q = _data()
    xt, yt, lo, span, m_y, s_y = _units(x, y)
    qt = (q - lo) / span
    fixed = {"lengthscale": LENGTHSCALE, "outputscale": OUTPUTSCALE, "noise": NOISE}
    fixed.pop(free)
    gp = GaussianProcess(kernel="rbf", hyper_samples=3000, seed=0, device="cpu", **fixed).fit(x, y)
    assert gp.hyper_ is not None and gp.hyper_.ess > 1000

    internal = {"lengthscale": LENGTHSCALE / float(span), "outputscale": OUTPUTSCALE / float(s_y) ** 2, "noise": NOISE / float(s_y) ** 2}
    grid = torch.linspace(-9.0, 6.0, 3001, dtype=torch.float64)
    log_post, means, variances, noises = [], [], [], []
    for phi in grid:
        value = dict(internal, **{free: math.exp(float(phi))})
        if (free == "noise" and value["noise"] < 1e-4) or (free == "lengthscale" and value["lengthscale"] < 0.025):
            continue  # the MAP fit's lower bounds truncate the prior
        evidence, mean, var = _by_hand(xt, yt, qt, value["lengthscale"], value["outputscale"], value["noise"])
        if free == "noise":
            prior = -0.5 * ((float(phi) + 4.0) / 1.0) ** 2
        elif free == "lengthscale":
            prior = -0.5 * ((float(phi) - math.sqrt(2.0)) / math.sqrt(3.0)) ** 2
        else:
            prior = float(phi)
        log_post.append(evidence + prior)
        means.append(mean), variances.append(var), noises.append(value["noise"])
    post = torch.tensor(log_post, dtype=torch.float64)
    w = torch.exp(post - post.max())
    w[0], w[-1] = w[0] / 2, w[-1] / 2  # the trapezoid rule on the equally spaced grid
    w = w / w.sum()
    mu = torch.stack(means)  # [G, M]
    mean = w @ mu
    var_f = w @ (torch.stack(variances) + mu**2) - mean**2
    var_y = var_f + w @ torch.tensor(noises, dtype=torch.float64)

    got_mean, got_var = (t.double() for t in gp.predict_mean_var(q, observation_noise=True))
    assert torch.allclose(got_mean, mean * s_y + m_y, atol=0.02 * float(var_y.sqrt().min() * s_y))
    assert torch.allclose(got_var, var_y * s_y**2, rtol=0.03)


def test_log_evidence_is_botorchs_at_the_map():
    """log p(ỹ | φ̂) of `_gp_hyper` at the MAP's φ̂ = the fitted model's marginal likelihood."""
    x, y, _ = _data(n=12)
    for kernel in ("rbf", "matern52+linear"):
        gp = GaussianProcess(kernel=kernel, hyper_samples=4, seed=0, device="cpu").fit(x, y)
        value = log_evidence(gp.hyper_.x, gp.hyper_.y, _map_logs(gp)[None], gp.hyper_.model)
        assert math.isclose(float(value) - 12 * math.log(float(y.std())), gp.log_marginal_likelihood_, abs_tol=1e-8)


def _map_logs(gp):
    """φ̂ [P]: the logs of the fitted MAP's hyper-parameters (lengthscales, a, [v], σ̃²)."""
    scaled, linear = parts(gp.model_.covar_module)
    values = [scaled.base_kernel.lengthscale.reshape(-1), scaled.outputscale.reshape(1)]
    values += [linear.variance.reshape(1)] if linear is not None else []
    return torch.cat(values + [gp.model_.likelihood.noise.reshape(1)]).log()


def test_one_draw_at_the_map_predicts_as_the_map():
    """The mixture's machinery with the single draw φ̂ gives the MAP GP's latent moments."""
    x, y, q = _data(n=15)
    gp = GaussianProcess(kernel="matern52+linear", hyper_samples=4, seed=0, device="cpu").fit(x, y)
    mixture = gp.hyper_
    start = _map_logs(gp)[None]
    gp.hyper_ = replace(mixture, phi=start, weights=torch.ones(1, dtype=torch.float64), chol=_factor(mixture.x, start, mixture.model)[0])
    mean, var = gp.predict_mean_var(q)
    gp.hyper_ = None
    map_mean, map_var = gp.predict_mean_var(q)
    assert torch.allclose(mean, map_mean, rtol=1e-5, atol=1e-6) and torch.allclose(var, map_var, rtol=1e-4, atol=1e-7)


def test_log_prior_is_the_lognormal_priors_in_log_coordinates():
    """Differences of log_prior between two φ = those of LogNormal densities times the Jacobian
    e^φ (ℓ̃, σ̃²), and of e^φ (flat on a and v)."""
    model = HyperModel(Kernel.RBF_LINEAR, torch.zeros(2), torch.ones(5, dtype=torch.bool), (1.2, 1.7), (-4.0, 1.0), 0.025, 1e-4)
    phi = torch.tensor([[0.1, -0.5, 0.3, -1.0, -3.0], [1.0, 0.2, -0.4, 0.5, -6.0]], dtype=torch.float64)
    ls, noise = LogNormalPrior(1.2, 1.7), LogNormalPrior(-4.0, 1.0)

    def by_hand(p):
        v = p.exp()
        return float(ls.log_prob(v[:2]).sum() + p[:2].sum() + p[2] + p[3] + noise.log_prob(v[4]) + p[4])

    got = log_prior(phi, model)
    assert math.isclose(float(got[0] - got[1]), by_hand(phi[0]) - by_hand(phi[1]), rel_tol=1e-6)  # gpytorch's priors hold float32 parameters
    below = phi[:1].clone()
    below[0, 4] = math.log(1e-5)
    assert float(log_prior(below, model)) == -math.inf and math.isfinite(float(log_prior(below, model, truncate=False)))


def test_t_proposal_density_is_scipys():
    mode = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)
    cov = torch.tensor([[1.0, 0.3, 0.0], [0.3, 0.5, 0.1], [0.0, 0.1, 0.2]], dtype=torch.float64)
    free = torch.tensor([True, True, True])
    phi, log_q = draw_t(mode, cov, free, 6, torch.Generator().manual_seed(0))
    expected = multivariate_t(mode.numpy(), cov.numpy(), df=5.0).logpdf(phi.numpy())
    assert torch.allclose(log_q, torch.from_numpy(expected), atol=1e-10)


def test_mixture_predictive_contract():
    x, y, q = _data(n=10)
    gp = GaussianProcess(hyper_samples=16, n_samples=6, seed=3, device="cpu").fit(x, y)
    w, means, variances = gp.predict_mixture(q)
    k = w.shape[0]
    assert 1 <= k <= 16 and means.shape == variances.shape == (k, 5) and math.isclose(float(w.sum()), 1.0, rel_tol=1e-5)
    pred = gp.predict(q)
    assert pred.mean.shape == pred.var.shape == (k * 6, 5) and not pred.has_latent
    assert math.isclose(float(pred.weights.sum()), 1.0, rel_tol=1e-5)
    mean, var_f = gp.predict_mean_var(q)
    mean_y, var_y = gp.predict_mean_var(q, observation_noise=True)
    assert torch.allclose(mean, w @ means) and torch.allclose(mean_y, mean)
    assert torch.allclose(var_y, w @ (variances + means**2) - mean**2, rtol=1e-4)
    assert torch.allclose(variance(pred, "epistemic"), var_f, rtol=1e-4)  # the nodes' law of total variance
    assert torch.equal(GaussianProcess(hyper_samples=16, n_samples=6, seed=3, device="cpu").fit(x, y).predict(q).mean, pred.mean)
    assert torch.allclose(torch.cat([gp.predict(q[:2]).mean, gp.predict(q[2:]).mean], 1), pred.mean)
    assert gp.to("cpu").predict(q).mean.shape == pred.mean.shape and gp.predict(q[:0]).mean.shape == (k * 6, 0)


def test_fixed_hyperparameters_are_not_drawn_and_few_points_plug_in_the_map():
    x, y, _ = _data(n=10)
    gp = GaussianProcess(lengthscale=LENGTHSCALE, hyper_samples=8, seed=0, device="cpu").fit(x, y)
    assert torch.allclose(gp.hyper_.phi[:, 0], gp.hyper_.phi[0, 0].expand(gp.hyper_.phi.shape[0]))
    assert gp.hyper_.phi[:, 1:].std(0).min() > 0
    assert GaussianProcess(hyper_samples=8, device="cpu").fit(x[:2], y[:2]).hyper_ is None


@pytest.mark.parametrize("bad", [{"hyper_samples": 1}, {"hyper_samples": -2}, {"hyper_samples": 2.5}, {"hyper_samples": 4, "priors": False}])
def test_bad_hyper_samples_is_one_config_error(bad):
    with pytest.raises(ConfigError, match="^hyper_samples: "):
        GaussianProcess(**bad)


def test_the_cli_takes_hyper_samples_as_an_option():
    """`round --option hyper_samples=K` reaches the constructor; K = 1 is one CliError line."""
    from activebayes_cli._model import check_posterior_options
    from activebayes_cli._app import CliError

    check_posterior_options("gp", {"hyper_samples": 32})
    with pytest.raises(CliError, match="^--option hyper_samples: expected 0"):
        check_posterior_options("gp", {"hyper_samples": 1})
