"""Per-candidate acquisition scores: closed forms, hand-computed cases, weights, edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from activebayes import ConfigError, GaussianPredictive, Predictive, ShapeError
from activebayes.acquisition import MixtureEntropy
from activebayes.acquisition.scores import bald, eig, entropy, least_confidence, margin, mean_std, random_scores, variance, variation_ratio

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
CATEGORICAL = [bald, eig, entropy, least_confidence, margin, mean_std, variation_ratio, variance]


def H(*p: float) -> float:
    return -sum(x * math.log(x) for x in p if x > 0)


def dirichlet(S: int, N: int, C: int, seed: int, concentration: float = 1.0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    alpha = torch.full((S, N, C), concentration)
    return torch._sample_dirichlet(alpha, generator=g)


# Two samples, one candidate: p = (0.9, 0.1) and (0.1, 0.9).
TWO = torch.tensor([[[0.9, 0.1]], [[0.1, 0.9]]])


def test_hand_computed_unweighted():
    assert entropy(TWO).item() == pytest.approx(math.log(2), abs=1e-6)
    assert bald(TWO).item() == pytest.approx(math.log(2) - H(0.9, 0.1), abs=1e-6)
    assert eig(TWO).item() == pytest.approx(bald(TWO).item(), abs=1e-7)
    assert variance(TWO, "total").item() == pytest.approx(0.5, abs=1e-6)  # 1 − 0.5² − 0.5²
    assert variance(TWO, "aleatoric").item() == pytest.approx(2 * 0.9 * 0.1, abs=1e-6)
    assert variance(TWO, "epistemic").item() == pytest.approx(2 * 0.4**2, abs=1e-6)
    assert mean_std(TWO).item() == pytest.approx(0.4, abs=1e-6)  # σ_c = 0.4 for both classes
    assert variation_ratio(TWO).item() == pytest.approx(0.5, abs=1e-7)
    assert margin(TWO).item() == pytest.approx(1.0, abs=1e-6)
    assert least_confidence(TWO).item() == pytest.approx(0.5, abs=1e-6)


def test_hand_computed_weighted():
    pred = Predictive(TWO, torch.tensor([0.75, 0.25]))  # p̄ = (0.7, 0.3)
    assert entropy(pred).item() == pytest.approx(H(0.7, 0.3), abs=1e-6)
    assert bald(pred).item() == pytest.approx(H(0.7, 0.3) - H(0.9, 0.1), abs=1e-6)
    assert variance(pred).item() == pytest.approx(1 - 0.7**2 - 0.3**2, abs=1e-6)
    assert variance(pred, "aleatoric").item() == pytest.approx(0.18, abs=1e-6)
    epistemic = 2 * (0.75 * 0.2**2 + 0.25 * 0.6**2)  # Σ_c Σ_s w_s (p_sc − p̄_c)²
    assert variance(pred, "epistemic").item() == pytest.approx(epistemic, abs=1e-6)
    assert mean_std(pred).item() == pytest.approx(math.sqrt(0.75 * 0.2**2 + 0.25 * 0.6**2), abs=1e-6)
    assert variation_ratio(pred).item() == pytest.approx(0.25, abs=1e-7)
    assert margin(pred).item() == pytest.approx(1 - 0.4, abs=1e-6)
    assert least_confidence(pred).item() == pytest.approx(0.3, abs=1e-6)


def test_variation_ratio_of_votes():
    votes = [1, 2, 1, 1, 4]  # the modal class 1 gets 3 of 5 votes
    probs = torch.full((5, 1, 5), 0.1)
    for s, c in enumerate(votes):
        probs[s, 0, c] = 0.6
    assert variation_ratio(probs).item() == pytest.approx(0.4, abs=1e-6)
    weights = torch.tensor([0.1, 0.5, 0.1, 0.1, 0.2])  # class 2 now holds half the weight
    assert variation_ratio(Predictive(probs, weights)).item() == pytest.approx(0.5, abs=1e-6)


@pytest.mark.parametrize("fn", CATEGORICAL)
def test_weights_equal_replicated_samples(fn):
    probs = dirichlet(3, 7, 4, seed=1)
    weighted = Predictive(probs, torch.tensor([0.25, 0.5, 0.25]))
    replicated = probs[[0, 1, 1, 2]]
    torch.testing.assert_close(fn(weighted), fn(replicated), atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("fn", CATEGORICAL)
def test_bare_tensor_equals_predictive(fn):
    probs = dirichlet(4, 6, 3, seed=2)
    torch.testing.assert_close(fn(probs), fn(Predictive(probs)))


def test_law_of_total_variance_and_bald_bounds():
    probs = dirichlet(16, 200, 10, seed=3, concentration=0.3)
    labels = torch.randint(0, 10, (16, 20), generator=torch.Generator().manual_seed(0))
    probs[:, :20] = torch.nn.functional.one_hot(labels, 10).float()  # exact 0 and 1
    for pred in (Predictive(probs), Predictive(probs, torch.softmax(torch.arange(16.0), 0))):
        total = variance(pred, "total")
        torch.testing.assert_close(total, variance(pred, "epistemic") + variance(pred, "aleatoric"), atol=1e-6, rtol=0)
        b, h = bald(pred), entropy(pred)
        assert bool((b >= 0).all()) and bool((b <= h + 1e-6).all())
        assert bool((h <= math.log(10) + 1e-6).all())


def test_exact_zero_and_one_probabilities_are_finite():
    disagree = torch.tensor([[[1.0, 0.0, 0.0]], [[0.0, 1.0, 0.0]]])  # sure but disagreeing
    agree = torch.tensor([[[1.0, 0.0, 0.0]], [[1.0, 0.0, 0.0]]])
    for fn in CATEGORICAL:
        for probs in (disagree, agree):
            assert bool(torch.isfinite(fn(probs)).all()), fn.__name__
    assert bald(disagree).item() == pytest.approx(math.log(2), abs=1e-6)  # the label settles θ
    assert bald(agree).item() == 0.0 and entropy(agree).item() == 0.0
    assert mean_std(agree).item() == 0.0 and variance(agree).item() == 0.0


def test_identical_samples_have_no_epistemic_uncertainty():
    probs = dirichlet(1, 30, 5, seed=4).expand(8, 30, 5).contiguous()
    assert float(bald(probs).max()) < 1e-6
    assert float(variance(probs, "epistemic").max()) < 1e-7
    assert float(mean_std(probs).max()) < 1e-3  # sqrt of a rounding-level variance
    assert float(variation_ratio(probs).max()) == 0.0


def test_float64_and_dtype_kept():
    probs = dirichlet(4, 5, 3, seed=5).double()
    for fn in CATEGORICAL:
        assert fn(probs).dtype == torch.float64
        assert fn(probs.float()).dtype == torch.float32


@pytest.mark.parametrize("device", DEVICES)
def test_scores_run_on_device_without_host_sync(device):
    probs = dirichlet(8, 50, 10, seed=6).to(device)
    pred = Predictive(probs, check=False)
    gauss = GaussianPredictive(torch.randn(8, 50, device=device), torch.rand(8, 50, device=device) + 0.1, check=False)
    latent = _latent(torch.randn(50).tolist(), (torch.rand(50) * 1e4).tolist(), [1e-4] * 50).to(device)
    eig(gauss)  # the first call per device copies the quadrature nodes over once
    if device == "cuda":
        torch.cuda.set_sync_debug_mode("error")
    try:
        outs = [fn(pred) for fn in CATEGORICAL] + [eig(gauss), variance(gauss, "epistemic"), entropy(gauss)]
        outs += [eig(latent), bald(latent), entropy(latent), variance(latent, "epistemic")]
    finally:
        if device == "cuda":
            torch.cuda.set_sync_debug_mode("default")
    for out in outs:
        assert out.shape == (50,) and out.device.type == device


def test_random_is_seeded_and_uniform():
    probs = dirichlet(2, 1000, 3, seed=7)
    a = random_scores(probs, torch.Generator().manual_seed(3))
    b = random_scores(probs, torch.Generator().manual_seed(3))
    c = random_scores(probs, torch.Generator().manual_seed(4))
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert a.shape == (1000,) and 0.0 <= float(a.min()) and float(a.max()) < 1.0
    assert abs(float(a.mean()) - 0.5) < 0.05
    gauss = GaussianPredictive(torch.zeros(2, 10), torch.ones(2, 10))
    assert random_scores(gauss, torch.Generator().manual_seed(0)).shape == (10,)


def test_options_and_wrong_inputs_raise():
    with pytest.raises(ConfigError, match="part"):
        variance(TWO, "both")
    with pytest.raises(ConfigError, match="estimator"):
        eig(GaussianPredictive(torch.zeros(2, 1), torch.ones(2, 1)), estimator="sampling")
    with pytest.raises(ShapeError, match="C=2"):
        margin(torch.ones(2, 3, 1))
    gauss = GaussianPredictive(torch.zeros(2, 3), torch.ones(2, 3))
    for fn in (mean_std, variation_ratio, margin, least_confidence):
        with pytest.raises(ShapeError, match="GaussianPredictive"):
            fn(gauss)
    with pytest.raises(ShapeError):
        bald(torch.rand(3, 4))


# ---------------------------------------------------------------- Gaussian (regression) -------


def test_gaussian_variance_parts():
    mean = torch.tensor([[0.0, 1.0], [2.0, 1.0]])
    var = torch.tensor([[1.0, 0.5], [3.0, 0.5]])
    pred = GaussianPredictive(mean, var, torch.tensor([0.5, 0.5]))
    torch.testing.assert_close(variance(pred, "aleatoric"), torch.tensor([2.0, 0.5]))
    torch.testing.assert_close(variance(pred, "epistemic"), torch.tensor([1.0, 0.0]))
    torch.testing.assert_close(variance(pred), torch.tensor([3.0, 0.5]))
    weighted = GaussianPredictive(mean, var, torch.tensor([0.25, 0.75]))  # μ̄ = 1.5
    torch.testing.assert_close(variance(weighted, "epistemic"), torch.tensor([0.25 * 2.25 + 0.75 * 0.25, 0.0]))


@pytest.mark.parametrize("estimator", list(MixtureEntropy))
def test_eig_of_equal_components_is_zero(estimator):
    mean = torch.tensor([0.3, -2.0, 5.0]).expand(6, 3)
    var = torch.tensor([0.5, 2.0, 1e-3]).expand(6, 3)
    pred = GaussianPredictive(mean.contiguous(), var.contiguous())
    assert float(eig(pred, estimator=estimator).abs().max()) < 1e-5
    single = GaussianPredictive(torch.randn(1, 4), torch.rand(1, 4) + 0.1)
    assert float(eig(single, estimator=estimator).abs().max()) < 1e-5
    closed = 0.5 * torch.log(2 * math.pi * math.e * single.var[0])
    torch.testing.assert_close(entropy(single), closed, atol=1e-5, rtol=0)


def test_eig_of_separated_components_is_log_two():
    pred = GaussianPredictive(torch.tensor([[-50.0], [50.0]]), torch.ones(2, 1))
    assert eig(pred).item() == pytest.approx(math.log(2), abs=1e-4)
    weighted = GaussianPredictive(pred.mean, pred.var, torch.tensor([0.2, 0.8]))
    assert eig(weighted).item() == pytest.approx(H(0.2, 0.8), abs=1e-4)


def test_moment_matched_closed_form_and_upper_bound():
    g = torch.Generator().manual_seed(8)
    mean = 2.0 * torch.randn(5, 40, generator=g)
    var = torch.full((5, 40), 0.7)
    pred = GaussianPredictive(mean, var)
    moment = eig(pred, estimator="moment-matched")
    closed = 0.5 * torch.log(1 + mean.var(0, unbiased=False) / 0.7)  # equal σ²
    torch.testing.assert_close(moment, closed, atol=1e-5, rtol=1e-5)
    assert bool((moment >= eig(pred) - 1e-5).all())


def test_quadrature_eig_matches_monte_carlo():
    g = torch.Generator().manual_seed(9)
    S, N = 4, 6
    mean = 1.5 * torch.randn(S, N, generator=g, dtype=torch.float64)
    var = 0.2 + torch.rand(S, N, generator=g, dtype=torch.float64)
    weights = torch.softmax(torch.randn(S, generator=g, dtype=torch.float64), 0)
    pred = GaussianPredictive(mean, var, weights)
    # Monte Carlo: y ~ mixture, H ≈ mean of −log p(y).
    draws = 200_000
    comp = torch.multinomial(weights.expand(N, S), draws, replacement=True, generator=g).T  # [draws, N]
    cols = torch.arange(N)
    y = mean[comp, cols] + var[comp, cols].sqrt() * torch.randn(draws, N, generator=g, dtype=torch.float64)
    log_norm = torch.log(weights)[None, :, None] - 0.5 * torch.log(2 * math.pi * var)[None]
    log_comp = log_norm - (y[:, None, :] - mean[None]) ** 2 / (2 * var[None])  # [draws, S, N]
    neg_log = -torch.logsumexp(log_comp, dim=1)  # [draws, N]
    mc_eig = neg_log.mean(0) - (weights[:, None] * 0.5 * torch.log(2 * math.pi * math.e * var)).sum(0)
    se = neg_log.std(0) / math.sqrt(draws)
    quad = eig(pred)
    assert bool(((quad - mc_eig).abs() < 4 * se + 2e-3).all()), (quad, mc_eig, se)


def test_noise_free_gaussian_samples_stay_finite():
    pred = GaussianPredictive(torch.tensor([[0.0, 1.0], [0.0, 2.0]]), torch.zeros(2, 2))
    out = eig(pred)
    assert bool(torch.isfinite(out).all())
    assert out[0].item() == pytest.approx(0.0, abs=1e-5) and out[1].item() == pytest.approx(math.log(2), abs=1e-4)


def _mixture_entropy_reference(mean, var, weights, points=400_001):
    """−∫ p log p dy by a float64 trapezoid on a grid 100x finer than the estimator's (numpy)."""
    mean, sd, weights = np.asarray(mean, float), np.sqrt(np.asarray(var, float)), np.asarray(weights, float)
    y = np.linspace((mean - 12 * sd).min(), (mean + 12 * sd).max(), points)
    p = (weights[:, None] * np.exp(-0.5 * ((y - mean[:, None]) / sd[:, None]) ** 2) / (sd[:, None] * math.sqrt(2 * math.pi))).sum(0)
    f = -p * np.log(np.where(p > 0, p, 1.0))
    return float(np.trapezoid(f, y))


def _mixture(mean, var, weights=None):
    """A GaussianPredictive of one candidate per column: mean, var [S, N] (float64)."""
    as64 = lambda v: torch.tensor(v, dtype=torch.float64)  # noqa: E731
    return GaussianPredictive(as64(mean), as64(var), None if weights is None else as64(weights))


def test_mixture_entropy_of_overlapping_components_of_different_widths():
    """½N(0, 0.01) + ½N(0, 1): H = 0.7010 nats. The former per-component 32-node Gauss–Hermite
    estimate gave 0.820 (log p has a spike of width 0.1 that the wide component's nodes miss)."""
    reference = _mixture_entropy_reference([0.0, 0.0], [0.01, 1.0], [0.5, 0.5])
    assert reference == pytest.approx(0.7009567, abs=1e-6)
    pred = _mixture([[0.0], [0.0]], [[0.01], [1.0]])
    assert entropy(pred).item() == pytest.approx(reference, abs=1e-6)
    assert entropy(GaussianPredictive(pred.mean.float(), pred.var.float())).item() == pytest.approx(reference, abs=1e-6)
    # EIG = H − Σ_s w_s ½ log(2πe σ_s²)
    expected = reference - 0.5 * (0.5 * math.log(2 * math.pi * math.e * 0.01) + 0.5 * math.log(2 * math.pi * math.e))
    assert eig(pred).item() == pytest.approx(expected, abs=1e-6)


def test_mixture_entropy_matches_reference_on_random_mixtures():
    g = np.random.default_rng(3)
    S, N = 5, 8
    mean = g.normal(size=(S, N)) * g.uniform(0.1, 4.0, size=N)
    var = np.exp(g.uniform(-4.0, 1.0, size=(S, N)))
    weights = g.dirichlet(np.ones(S))
    got = entropy(_mixture(mean, var, weights)).numpy()
    reference = [_mixture_entropy_reference(mean[:, n], var[:, n], weights) for n in range(N)]
    np.testing.assert_allclose(got, reference, atol=1e-4, rtol=0)


def test_mixture_entropy_of_equal_components_is_the_gaussian_entropy():
    var = [0.3, 5e-3, 40.0]
    pred = _mixture([[1.0, -7.0, 100.0]] * 4, [var] * 4, [0.1, 0.2, 0.3, 0.4])
    closed = [0.5 * math.log(2 * math.pi * math.e * v) for v in var]
    np.testing.assert_allclose(entropy(pred).numpy(), closed, atol=1e-7, rtol=0)


def test_mixture_entropy_of_separated_components():
    """H = Σ_s w_s ½ log(2πe σ_s²) + H[w] when the components do not overlap: one candidate on
    the grid (spread 60 ≪ 255 σ_min), one on the Gauss–Hermite fallback (spread 1e4 ≫ 255 σ_min),
    in one call."""
    weights = [0.2, 0.3, 0.5]
    var = [[0.5, 1.0], [1.0, 1.0], [2.0, 1.0]]
    pred = _mixture([[-30.0, 0.0], [0.0, 1e4], [30.0, -1e4]], var, weights)
    expected = [
        sum(w * 0.5 * math.log(2 * math.pi * math.e * var[s][n]) for s, w in enumerate(weights)) + H(*weights)
        for n in range(2)
    ]
    np.testing.assert_allclose(entropy(pred).numpy(), expected, atol=1e-6, rtol=0)
    np.testing.assert_allclose(eig(pred).numpy(), [H(*weights)] * 2, atol=1e-6, rtol=0)


def test_mixture_options_raise():
    pred = _mixture([[0.0], [1.0]], [[1.0], [1.0]])
    with pytest.raises(ConfigError, match="n_grid"):
        eig(pred, n_grid=1)
    with pytest.raises(ConfigError, match="n_nodes"):
        eig(pred, n_nodes=0)
    coarse, fine = eig(pred, n_grid=40), eig(pred, n_grid=4000)  # the grid size is a real knob
    assert coarse.item() == pytest.approx(fine.item(), abs=1e-6)


# ---------------------------------------------------------------- exactly Gaussian (latent) ---


def _latent(latent_mean, latent_var, noise, dtype=torch.float32, nodes=4):
    """A latent-Gaussian predictive whose `nodes` samples are Gauss–Hermite nodes of f."""
    t, w = np.polynomial.hermite.hermgauss(nodes)
    latent_mean = torch.tensor(latent_mean, dtype=torch.float64)
    latent_var = torch.tensor(latent_var, dtype=torch.float64)
    mean = latent_mean + math.sqrt(2) * latent_var.sqrt() * torch.tensor(t)[:, None]
    var = torch.tensor(noise, dtype=torch.float64).expand_as(mean)
    return GaussianPredictive(
        mean.to(dtype), var.to(dtype), torch.tensor(w / math.sqrt(math.pi), dtype=dtype),
        latent_mean=latent_mean.to(dtype), latent_var=latent_var.to(dtype),
    )  # fmt: skip


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_latent_gaussian_scores_are_closed_forms(dtype):
    f_var = [0.0, 1e-8, 0.3, 1.0, 1e4, 1e8]
    noise = [0.5, 1e-4, 0.3, 1e-4, 1.0, 1e-2]
    pred = _latent([0.0, 1.0, -2.0, 3.0, 0.0, 5.0], f_var, noise, dtype)
    info = torch.tensor([0.5 * math.log1p(f / n) for f, n in zip(f_var, noise)], dtype=torch.float64)
    ent = torch.tensor([0.5 * math.log(2 * math.pi * math.e * (f + n)) for f, n in zip(f_var, noise)], dtype=torch.float64)
    for estimator in MixtureEntropy:  # the closed form replaces both estimators
        out = eig(pred, estimator=estimator)
        assert out.dtype == dtype
        torch.testing.assert_close(out.double(), info, rtol=1e-6, atol=1e-12)
    torch.testing.assert_close(bald(pred), eig(pred), rtol=0, atol=0)
    assert entropy(pred).dtype == dtype
    torch.testing.assert_close(entropy(pred).double(), ent, rtol=1e-6, atol=1e-12)
    torch.testing.assert_close(variance(pred, "epistemic").double(), torch.tensor(f_var, dtype=torch.float64), rtol=1e-6, atol=0)
    torch.testing.assert_close(variance(pred, "aleatoric").double(), torch.tensor(noise, dtype=torch.float64), rtol=1e-6, atol=0)
    total = torch.tensor([f + n for f, n in zip(f_var, noise)], dtype=torch.float64)
    torch.testing.assert_close(variance(pred).double(), total, rtol=1e-6, atol=0)


def test_latent_scores_do_not_saturate_where_the_node_mixture_does():
    """Read as a 4-component mixture, the nodes' EIG is capped by H[w] (the information about a
    discrete θ is at most its entropy); the latent closed form keeps growing with σ_f²/σ_ε²."""
    ratios = [1e2, 1e4, 1e6]
    pred = _latent([0.0] * 3, ratios, [1.0] * 3, torch.float64)
    nodes_only = GaussianPredictive(pred.mean, pred.var, pred.weights)
    cap = H(*pred.weights.tolist())
    assert bool((eig(nodes_only) <= cap + 1e-6).all())
    torch.testing.assert_close(eig(pred), 0.5 * torch.log1p(torch.tensor(ratios, dtype=torch.float64)), rtol=1e-12, atol=0)
    assert bool((eig(pred).diff() > 2.0).all())


def test_latent_scores_follow_candidates_and_noise_free_samples_stay_finite():
    pred = _latent([0.0, 1.0, 2.0], [1.0, 2.0, 3.0], [0.5] * 3)
    torch.testing.assert_close(eig(pred.candidates(torch.tensor([2, 0]))), eig(pred)[[2, 0]])
    noise_free = _latent([0.0, 0.0], [1.0, 0.0], [0.0, 0.0])
    out = eig(noise_free)
    assert bool(torch.isfinite(out).all()) and out[1].item() == 0.0
    assert out[0].item() == pytest.approx(0.5 * math.log1p(1.0 / 1e-12), rel=1e-6)  # σ_ε² clamped at min_var
