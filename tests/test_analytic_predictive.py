"""The sampling-free (analytic) predictive: moment propagation's rules in closed form and against
Monte Carlo (activebayes/posteriors/_moment_propagation.py), whole networks against Monte Carlo of
the same diagonal Gaussian posterior, and `predictive="analytic"` on MFVI, Laplace and SWAG:
agreement with their own sampled predictive, seeded pool-consistent samples, regression."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn
from torch.func import functional_call, vmap

from activebayes import ConfigError, GaussianPredictive, Predictive
from activebayes.nets import Standardize, batchbald_cnn, gal_cnn, mlp
from activebayes.posteriors._moment_propagation import (
    check_propagatable,
    conv2d_moments,
    elementwise_moments,
    linear_moments,
    max_pool2d_moments,
    mean_field_softmax,
    probit_softmax,
    propagate,
    relu_moments,
)
from activebayes.posteriors.laplace import Laplace
from activebayes.posteriors.mfvi import MFVI
from activebayes.posteriors.swag import SWAG
from activebayes.training import TrainConfig

_F64 = torch.float64


def _weight_draws(net: nn.Module, variances: dict[str, torch.Tensor], n: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
    """n draws {name: [n, *shape]} of every parameter: N(value, variance) where a variance is given, else fixed."""
    out = {}
    for name, p in net.named_parameters():
        p = p.detach()
        if name in variances:
            out[name] = p + variances[name].sqrt() * torch.randn(n, *p.shape, generator=generator, dtype=p.dtype)
        else:
            out[name] = p.expand(n, *p.shape)
    return out


def _monte_carlo_outputs(net: nn.Module, x: torch.Tensor, variances: dict[str, torch.Tensor], n: int, seed: int) -> torch.Tensor:
    draws = _weight_draws(net, variances, n, torch.Generator().manual_seed(seed))
    with torch.no_grad():
        return vmap(lambda p: functional_call(net, p, (x,)))(draws)  # [n, N, ...]


# ---------------------------------------------------------------------------- the rules
def test_linear_rule_matches_the_exact_moments_by_hand_and_monte_carlo():
    m, v = torch.tensor([[1.0, -2.0]], dtype=_F64), torch.tensor([[0.5, 0.1]], dtype=_F64)
    w, w_var = torch.tensor([[0.3, 0.4], [-1.0, 2.0]], dtype=_F64), torch.tensor([[0.01, 0.04], [0.09, 0.0]], dtype=_F64)
    b, b_var = torch.tensor([0.1, -0.2], dtype=_F64), torch.tensor([0.02, 0.03], dtype=_F64)
    mean, var = linear_moments(m, v, w, w_var, b, b_var)
    # output j: Σ_i W_ji a_i + b_j; Var(W a) = Σ_i [V_ji (m_i² + v_i) + M_ji² v_i]
    hand_mean = [0.3 * 1 + 0.4 * -2 + 0.1, -1 * 1 + 2 * -2 - 0.2]
    hand_var = [0.01 * 1.5 + 0.09 * 0.5 + 0.04 * 4.1 + 0.16 * 0.1 + 0.02,
                0.09 * 1.5 + 1.0 * 0.5 + 0.0 * 4.1 + 4.0 * 0.1 + 0.03]
    torch.testing.assert_close(mean, torch.tensor([hand_mean], dtype=_F64))
    torch.testing.assert_close(var, torch.tensor([hand_var], dtype=_F64))
    # 200k joint draws of the input, the weights and the bias
    g, n = torch.Generator().manual_seed(0), 200_000
    a = m + v.sqrt() * torch.randn(n, 2, generator=g, dtype=_F64)
    ws = w + w_var.sqrt() * torch.randn(n, 2, 2, generator=g, dtype=_F64)
    bs = b + b_var.sqrt() * torch.randn(n, 2, generator=g, dtype=_F64)
    out = torch.einsum("nji,ni->nj", ws, a) + bs
    torch.testing.assert_close(out.mean(0), mean[0], atol=0.01, rtol=0)
    torch.testing.assert_close(out.var(0), var[0], atol=0, rtol=0.02)
    # fixed weights: the same op with squared weights on v, no bias; a fixed input: no v term
    fixed_mean, fixed_var = linear_moments(m, v, w, None, b, None)
    torch.testing.assert_close(fixed_mean, mean)
    torch.testing.assert_close(fixed_var, v @ w.square().T)
    assert linear_moments(m, None, w, None, b, None)[1] is None
    torch.testing.assert_close(linear_moments(m, None, w, w_var, b, None)[1], m.square() @ w_var.T)


def test_conv2d_rule_matches_monte_carlo():
    g = torch.Generator().manual_seed(1)
    conv = nn.Conv2d(2, 3, kernel_size=3, padding=1, stride=2).to(_F64)
    m = torch.randn(1, 2, 5, 5, generator=g, dtype=_F64)
    v = torch.rand(1, 2, 5, 5, generator=g, dtype=_F64) * 0.2
    w_var = torch.rand(3, 2, 3, 3, generator=g, dtype=_F64) * 0.02
    b_var = torch.full((3,), 0.01, dtype=_F64)
    mean, var = conv2d_moments(conv, m, v, conv.weight.detach(), w_var, conv.bias.detach(), b_var)
    n = 50_000
    a = m + v.sqrt() * torch.randn(n, 2, 5, 5, generator=g, dtype=_F64)
    ws = conv.weight.detach() + w_var.sqrt() * torch.randn(n, 3, 2, 3, 3, generator=g, dtype=_F64)
    bs = conv.bias.detach() + b_var.sqrt() * torch.randn(n, 3, generator=g, dtype=_F64)
    out = vmap(lambda x, w, b: torch.nn.functional.conv2d(x.unsqueeze(0), w, b, stride=2, padding=1)[0])(a, ws, bs)
    assert mean.shape == var.shape == (1, 3, 3, 3)
    torch.testing.assert_close(out.mean(0), mean[0], atol=0.02, rtol=0)
    torch.testing.assert_close(out.var(0), var[0], atol=0.005, rtol=0.05)


def test_relu_linearised_by_hand_and_exact_moments_against_monte_carlo():
    m, v = torch.tensor([-1.0, 2.0, 0.3], dtype=_F64), torch.tensor([0.5, 0.3, 0.2], dtype=_F64)
    mean, var = relu_moments(m, v, mode="linearised")
    torch.testing.assert_close(mean, torch.tensor([0.0, 2.0, 0.3], dtype=_F64))
    torch.testing.assert_close(var, torch.tensor([0.0, 0.3, 0.2], dtype=_F64))
    exact_mean, exact_var = relu_moments(m, v)  # the default
    draws = (m + v.sqrt() * torch.randn(400_000, 3, generator=torch.Generator().manual_seed(2), dtype=_F64)).clamp_min(0)
    torch.testing.assert_close(exact_mean, draws.mean(0), atol=3e-3, rtol=0)
    torch.testing.assert_close(exact_var, draws.var(0), atol=3e-3, rtol=0)


def test_other_activations_are_linearised_at_the_mean():
    m, v = torch.tensor([0.5, -1.0], dtype=_F64), torch.tensor([0.2, 0.1], dtype=_F64)
    mean, var = elementwise_moments(nn.Tanh(), m, v)
    torch.testing.assert_close(mean, m.tanh())
    torch.testing.assert_close(var, (1 - m.tanh().square()).square() * v)
    mean, var = elementwise_moments(nn.Sigmoid(), m, v)
    s = m.sigmoid()
    torch.testing.assert_close(var, (s * (1 - s)).square() * v)


def test_max_pool_carries_the_variance_of_the_means_argmax():
    m = torch.tensor([[[[1.0, 3.0], [2.0, 0.0]]]])
    v = torch.tensor([[[[0.1, 0.2], [0.3, 0.4]]]])
    mean, var = max_pool2d_moments(nn.MaxPool2d(2), m, v)
    assert mean.item() == 3.0 and var.item() == pytest.approx(0.2)


def test_probit_softmax_by_hand():
    # σ² = 8/π halves the squared logit: κ = 1/√2
    mean = torch.tensor([[1.0, 0.0]], dtype=_F64)
    var = torch.tensor([[8 / math.pi, 0.0]], dtype=_F64)
    scaled = 1 / math.sqrt(2)
    expected = torch.tensor([[math.exp(scaled), 1.0]], dtype=_F64) / (math.exp(scaled) + 1)
    torch.testing.assert_close(probit_softmax(mean, var), expected)
    torch.testing.assert_close(probit_softmax(mean, torch.zeros_like(var)), torch.softmax(mean, -1))


def test_exact_relu_moments_over_the_whole_range_against_monte_carlo():
    """E[ReLU(a)] = m Φ(m/s) + s φ(m/s) and E[ReLU(a)²] = (m² + v) Φ(m/s) + m s φ(m/s) for
    a ~ N(m, s²), from units far below 0 to far above it, against 1,000,000 draws each (the
    Monte Carlo error of the mean is under s/1000); by hand at m = 0: s/√(2π) and s²/2."""
    m = torch.tensor([-3.0, -1.0, -0.2, 0.0, 0.4, 1.5, 4.0], dtype=_F64)
    v = torch.tensor([1.0, 4.0, 0.3, 2.0, 0.01, 9.0, 0.5], dtype=_F64)
    mean, var = relu_moments(m, v)
    draws = (m + v.sqrt() * torch.randn(1_000_000, 7, generator=torch.Generator().manual_seed(0), dtype=_F64)).clamp_min(0)
    torch.testing.assert_close(mean, draws.mean(0), atol=5e-3 * float(v.sqrt().max()) / 3, rtol=0)
    assert bool(((var - draws.var(0)).abs() <= 0.01 * draws.var(0) + 1e-4 * v).all())
    torch.testing.assert_close(mean[3], torch.tensor(math.sqrt(2.0) / math.sqrt(2 * math.pi), dtype=_F64))
    torch.testing.assert_close(var[3] + mean[3] ** 2, torch.tensor(1.0, dtype=_F64))  # E[ReLU(a)²] = v/2
    linearised_mean, linearised_var = relu_moments(m, v, mode="linearised")  # the old rule: off near 0
    assert float((linearised_mean - draws.mean(0)).abs()[3]) > 0.5


def test_mean_field_softmax_by_hand():
    mean = torch.tensor([[1.0, -0.5, 2.0], [0.0, 0.0, 0.0]], dtype=_F64)
    torch.testing.assert_close(mean_field_softmax(mean, torch.zeros_like(mean)), torch.softmax(mean, -1))  # no variance
    torch.testing.assert_close(mean_field_softmax(mean, torch.full_like(mean, 5.0))[1], torch.full((3,), 1 / 3, dtype=_F64))
    # two classes: the probit of the logit difference, sigmoid((μ₁ − μ₂) / sqrt(1 + π/8 (σ₁² + σ₂²)))
    two, var = torch.tensor([[1.5, -0.5]], dtype=_F64), torch.tensor([[2.0, 6.0]], dtype=_F64)
    p1 = torch.sigmoid(torch.tensor(2.0 / math.sqrt(1 + math.pi / 8 * 8.0), dtype=_F64))
    torch.testing.assert_close(mean_field_softmax(two, var), torch.stack([p1, 1 - p1]).unsqueeze(0))


def test_mean_field_softmax_is_chunked_without_changing_it(monkeypatch):
    from activebayes.posteriors import _moment_propagation

    g = torch.Generator().manual_seed(0)
    mean, var = torch.randn(37, 6, generator=g), torch.rand(37, 6, generator=g)
    whole = mean_field_softmax(mean, var)
    monkeypatch.setattr(_moment_propagation, "_PAIR_ELEMENTS", 5 * 36)  # 5 rows a chunk
    torch.testing.assert_close(mean_field_softmax(mean, var), whole)
    torch.testing.assert_close(whole.sum(-1), torch.ones(37))


@pytest.mark.parametrize("seed", [0, 1])
def test_mean_field_softmax_against_monte_carlo_of_gaussian_logits(seed):
    """E[softmax(f)], f ~ N(μ, diag σ²) with μ ~ N(0, 4), σ² ~ U(0, 2), C = 10, against 40,000
    draws (error < 0.005). Measured at seeds 0-5: the mean-field approximation's largest error
    0.081-0.092 and mean 0.011-0.012, the probit's 0.146-0.186 and 0.0135-0.0156."""
    g = torch.Generator().manual_seed(seed)
    mean, var = 2 * torch.randn(60, 10, generator=g, dtype=_F64), 2 * torch.rand(60, 10, generator=g, dtype=_F64)
    monte_carlo = sum(torch.softmax(mean + var.sqrt() * torch.randn(10_000, 60, 10, generator=g, dtype=_F64), -1).sum(0)
                      for _ in range(4)) / 40_000
    mean_field, probit = (mean_field_softmax(mean, var) - monte_carlo).abs(), (probit_softmax(mean, var) - monte_carlo).abs()
    assert float(mean_field.max()) < 0.12 and float(mean_field.mean()) < 0.015
    assert float(mean_field.max()) < 0.7 * float(probit.max()) and float(mean_field.mean()) < float(probit.mean())


def test_every_module_of_the_default_networks_is_supported_and_others_are_refused():
    for net in (mlp(784, 10)(), gal_cnn()(), batchbald_cnn()()):
        check_propagatable(net)
        net.eval()
        x = torch.rand(3, 1, 28, 28)
        mean, var = propagate(net, x, {})
        torch.testing.assert_close(mean, net(x))  # no Gaussian weights: the plain forward pass, zero variance
        assert torch.equal(var, torch.zeros_like(mean))
    bad = nn.Sequential(nn.Linear(2, 4), nn.LayerNorm(4), nn.Linear(4, 2))
    with pytest.raises(ConfigError, match=r"^predictive: .*module '1' \(LayerNorm\)"):
        check_propagatable(bad)
    with pytest.raises(ConfigError, match="LayerNorm"):
        propagate(bad, torch.zeros(1, 2), {})
    with pytest.raises(ConfigError, match="BatchNorm1d"):
        propagate(nn.BatchNorm1d(2).eval(), torch.zeros(3, 2), {})
    with pytest.raises(ConfigError, match="0.weight"):  # a Gaussian on a parameter no rule consumes
        propagate(nn.Sequential(Standardize(0.0, 1.0)), torch.zeros(1, 2), {"0.weight": torch.ones(2)})


# ---------------------------------------------------------------------------- whole networks
def _random_mlp(seed: int, widths=(2, 16, 16, 3)) -> nn.Sequential:
    torch.manual_seed(seed)
    layers: list[nn.Module] = []
    for fan_in, fan_out in zip(widths[:-1], widths[1:]):
        layers += [nn.Linear(fan_in, fan_out), nn.ReLU(), nn.Dropout(0.3)]
    return nn.Sequential(*layers[:-2]).eval()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_analytic_predictive_of_a_small_mlp_matches_monte_carlo(seed):
    """2-16-16-3 ReLU MLP with random weights, every weight and bias N(θ, (0.15 |θ| + 0.02)²)."""
    net = _random_mlp(seed)
    variances = {name: (0.15 * p.detach().abs() + 0.02).square() for name, p in net.named_parameters()}
    x = 2 * torch.randn(64, 2, generator=torch.Generator().manual_seed(seed))
    mean, var = propagate(net, x, variances)
    logits = _monte_carlo_outputs(net, x, variances, 1000, seed)
    monte_carlo = torch.softmax(logits, -1).mean(0)
    assert (probit_softmax(mean, var) - monte_carlo).abs().max() < 0.02
    # the propagated moments themselves are close to the logits' sample moments
    assert (mean - logits.mean(0)).abs().max() < 0.1 * logits.std(0).max() + 0.05
    assert ((var.sqrt() - logits.std(0)).abs() / logits.std(0)).median() < 0.1
    # the exact ReLU moments are an option of the same pass (here, at modest variance, close to the linearised ones)
    exact_mean, exact_var = propagate(net, x, variances, relu="exact")
    assert (probit_softmax(exact_mean, exact_var) - monte_carlo).abs().max() < 0.02
    with pytest.raises(ConfigError, match="^relu: "):
        propagate(net, x, variances, relu="smooth")


def test_a_cnn_with_gaussian_dense_layers_matches_monte_carlo():
    """Gal's CNN on 12x12 inputs (convolutions fixed, the dense layers Gaussian, as MFVI has it)."""
    torch.manual_seed(0)
    net = gal_cnn((1, 12, 12), 4)().eval()
    variances = {name: (0.2 * p.detach().abs() + 0.01).square() for name, p in net.named_parameters() if name.startswith(("7.", "10."))}
    x = torch.rand(16, 1, 12, 12, generator=torch.Generator().manual_seed(0))
    mean, var = propagate(net, x, variances)
    monte_carlo = torch.softmax(_monte_carlo_outputs(net, x, variances, 1000, 0), -1).mean(0)
    assert (probit_softmax(mean, var) - monte_carlo).abs().max() < 0.02


# ---------------------------------------------------------------------------- the posteriors
_TOY_TRAIN = TrainConfig(epochs=40, lr=1e-2, batch_size=50)
_TOY_NET = mlp(2, 2, hidden=(16, 16), dropout=0.1)


def _pair(make, moons):
    """The same posterior fitted with predictive="sampled" and "analytic" (the fit does not depend on it)."""
    return make("sampled").fit(*moons), make("analytic").fit(*moons)


POSTERIORS = {
    "mfvi": lambda predictive: MFVI(_TOY_NET, init_std=0.01, kl_weight=0.001, train=_TOY_TRAIN, seed=0, device="cpu",
                                    predictive=predictive),
    "laplace-diag": lambda predictive: Laplace(_TOY_NET, hessian="diag", prior_precision=100.0, train=_TOY_TRAIN, seed=0,
                                               device="cpu", predictive=predictive),
    "swag-diag": lambda predictive: SWAG(_TOY_NET, diag_only=True, n_snapshots=10, snapshot_steps=None, swa_lr=0.01,
                                         train=_TOY_TRAIN, seed=0, device="cpu", predictive=predictive),
    "swag": lambda predictive: SWAG(_TOY_NET, rank=5, n_snapshots=10, snapshot_steps=None, swa_lr=0.01, train=_TOY_TRAIN,
                                    seed=0, device="cpu", predictive=predictive),
}
# Posterior variances kept modest (σ ≈ 0.01-0.03 for MFVI, δ = 100 for Laplace, SWAG's snapshots
# one 4-step epoch apart; with SWAG's default 100 steps apart, SWAG-diagonal's analytic predictive
# is 0.02 from its Monte Carlo, and was 0.19 with the linearised ReLU and the probit): the analytic
# predictive drops the correlations between activations and between logits and the probit formula
# is an approximation, errors which grow with the variance (MFVI with init_std=0.05, kl_weight=0.1
# here: 0.09 max abs difference; Laplace at δ = 1: 0.06, the probit's own error).
_FITTED: dict[str, tuple] = {}


@pytest.fixture(params=list(POSTERIORS))
def pair(request, moons):
    name = request.param
    if name not in _FITTED:
        _FITTED[name] = _pair(POSTERIORS[name], moons)
    return name, *_FITTED[name]


def _query_points(moons) -> torch.Tensor:
    angle = torch.linspace(0, 2 * torch.pi, 17)[:-1]
    far = torch.stack([0.5 + 2.0 * angle.cos(), 0.25 + 2.0 * angle.sin()], dim=1)
    return torch.cat([moons[0][::5], far])


def test_fitted_posteriors_analytic_agrees_with_their_own_monte_carlo(pair, moons):
    name, sampled, analytic = pair
    x = _query_points(moons)
    assert analytic.get_params() == sampled.get_params() | {"predictive": "analytic"}
    if name != "swag":  # the diagonal posteriors: the analytic and sampled predictives are of the same posterior
        monte_carlo = sampled.predict(x, n_samples=1000).mean()
        assert (analytic.predict_proba(x) - monte_carlo).abs().max() < 0.02
    else:  # full SWAG: its marginals only (correlations dropped), so the agreement is looser
        assert (analytic.predict_proba(x) - sampled.predict_proba(x)).abs().max() < 0.1
    # predict's samples are draws of the propagated Gaussian: their mean is close to the probit
    assert (analytic.predict(x, n_samples=1000).mean() - analytic.predict_proba(x)).abs().max() < 0.03


def test_laplace_diag_analytic_is_the_propagation_of_its_last_layer_gaussian(moons):
    _, la = _FITTED.get("laplace-diag") or _pair(POSTERIORS["laplace-diag"], moons)
    post = la.posterior_
    var = 1.0 / (post.eigenvalues + la.prior_precision_)
    c, d = post.n_classes, post.n_features
    name = next(n for n, m in la.model_.named_modules() if m is la.layer_)
    variances = {f"{name}.weight": var[: c * d].reshape(c, d).float(), f"{name}.bias": var[c * d :].float()}
    x = _query_points(moons)
    mean, f_var = propagate(la.model_, x, variances)
    out_mean, out_var = la.output_moments(x)
    torch.testing.assert_close(out_mean, mean)
    torch.testing.assert_close(out_var, f_var, rtol=1e-4, atol=1e-6)
    # and predict_proba is the probit of these moments, the same with either predictive
    torch.testing.assert_close(la.predict_proba(x), probit_softmax(mean, f_var), rtol=1e-4, atol=1e-6)


def test_analytic_predict_is_seeded_and_independent_of_batch_split(pair, moons):
    name, _, analytic = pair
    x = _query_points(moons)
    whole = analytic.predict(x, n_samples=12)
    assert isinstance(whole, Predictive) and whole.probs.shape == (12, x.shape[0], 2)
    Predictive(whole.probs)  # valid rows
    assert torch.equal(analytic.predict(x, n_samples=12).probs, whole.probs)
    parts = torch.cat([analytic.predict(x[i : i + 7], n_samples=12).probs for i in range(0, x.shape[0], 7)], dim=1)
    torch.testing.assert_close(parts, whole.probs, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(analytic.predict(x.flip(0), n_samples=12).probs.flip(1), whole.probs, rtol=1e-5, atol=1e-6)
    assert whole.probs.std(0).max() > 0  # the samples differ
    again = POSTERIORS[name]("analytic").fit(*moons)  # the same seed fits and predicts the same
    torch.testing.assert_close(again.predict(x, n_samples=12).probs, whole.probs)


def test_bad_predictive_options_are_refused():
    for make in (lambda **kw: MFVI(_TOY_NET, **kw), lambda **kw: SWAG(_TOY_NET, **kw), lambda **kw: Laplace(_TOY_NET, **kw)):
        with pytest.raises(ConfigError, match="^predictive: "):
            make(predictive="exact")
    with pytest.raises(ConfigError, match="^link: "):
        Laplace(_TOY_NET, link="mc", predictive="analytic")
    unsupported = lambda: nn.Sequential(nn.Linear(2, 8), nn.LayerNorm(8), nn.Linear(8, 2))  # noqa: E731
    x, y = torch.randn(20, 2), torch.randint(0, 2, (20,))
    with pytest.raises(ConfigError, match="LayerNorm"):
        MFVI(unsupported, train=TrainConfig(epochs=1), predictive="analytic", seed=0, device="cpu").fit(x, y)


def test_regression_gives_the_propagated_gaussian():
    g = torch.Generator().manual_seed(0)
    x = torch.rand(80, 1, generator=g) * 4 - 2
    y = torch.sin(2 * x[:, 0]) + 0.1 * torch.randn(80, generator=g)
    net = mlp(1, 1, hidden=(16,), dropout=0.0)
    train = TrainConfig(epochs=60, lr=1e-2, batch_size=40)
    vi = MFVI(net, init_std=0.05, kl_weight=0.1, train=train, seed=0, device="cpu", predictive="analytic").fit(x, y)
    query = torch.linspace(-3, 3, 13).unsqueeze(1)
    mean, var = vi.predict_mean_var(query)
    assert mean.shape == var.shape == (13,) and bool((var > 0).all())
    total = vi.predict_mean_var(query, observation_noise=True)[1]
    torch.testing.assert_close(total, var + vi.noise_)
    pred = vi.predict(query, n_samples=9)
    assert isinstance(pred, GaussianPredictive) and pred.mean.shape == (9, 13) and pred.has_latent
    torch.testing.assert_close(pred.latent_mean, mean)
    torch.testing.assert_close(pred.latent_var, var)
    # against Monte Carlo over the same q
    variances = {k: s.square() for k, s in vi.std_.items()}
    outputs = _monte_carlo_outputs(vi.model_, query, variances, 4000, 0)[..., 0]
    assert (mean - outputs.mean(0)).abs().max() < 0.1 * outputs.std(0).max() + 0.02
    assert ((var.sqrt() - outputs.std(0)).abs() / outputs.std(0)).max() < 0.2
    with pytest.raises(ConfigError, match="^predict_proba: "):
        vi.predict_proba(query)
    la = Laplace(net, hessian="diag", prior_precision=1.0, train=train, seed=0, device="cpu", predictive="analytic").fit(x, y)
    la_mean, la_var = la.predict_mean_var(query)
    pred = la.predict(query, n_samples=5)
    torch.testing.assert_close(pred.latent_var, la_var)
    torch.testing.assert_close(pred.latent_mean, la_mean)
