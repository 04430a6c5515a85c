"""Heteroscedastic Laplace (activebayes/posteriors/_hetero_laplace.py): the per-item 2x2 GGN block
against autograd's Hessian of the NLL in the natural parameters; the KFAC and diagonal GGN of a
network against J_nᵀ Λ_n J_n built from autograd's Jacobians; a linear model whose posterior,
functional variance and evidence are computed by hand; the linearised predictive's closed-form
moments against Monte Carlo; and `round --posterior laplace --likelihood heteroscedastic`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from torch import nn

from activebayes import ConfigError, GaussianPredictive
from activebayes.likelihoods import heteroscedastic_ggn, heteroscedastic_ggn_square_root, heteroscedastic_nll, natural_nll, natural_parameters
from activebayes.nets import mlp
from activebayes.posteriors._hetero_laplace import linearised_moments
from activebayes.posteriors._kfac import KronBlock, fit_curvature
from activebayes.posteriors.laplace import Laplace
from activebayes.training import TrainConfig

F64 = torch.float64


def random_outputs(n: int, seed: int) -> torch.Tensor:
    """f [n, 2] float64: f₁ ~ N(0, 4), f₂ = log precision ~ U(−2, 2)."""
    g = torch.Generator().manual_seed(seed)
    return torch.stack((2.0 * torch.randn(n, generator=g, dtype=F64), torch.empty(n, dtype=F64).uniform_(-2.0, 2.0, generator=g)), dim=1)


def seeded_net(seed: int, *sizes: int) -> nn.Sequential:
    """Linear(sizes[0], sizes[1]) → Tanh → ... → Linear(·, sizes[-1]), float64, seeded."""
    torch.manual_seed(seed)
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers += [nn.Linear(a, b)] + ([nn.Tanh()] if i < len(sizes) - 2 else [])
    return nn.Sequential(*layers).double()


def block_matrix(block: KronBlock | torch.Tensor) -> torch.Tensor:
    """The dense curvature of one parameter tensor: B ⊗ A (B for a bias), or diag(h)."""
    if not isinstance(block, KronBlock):
        return torch.diag(block)
    b = block.q_g @ torch.diag(block.g) @ block.q_g.T
    if block.q_a is None:
        return b
    return torch.kron(b, block.q_a @ torch.diag(block.a) @ block.q_a.T)


def jacobians(net: nn.Module, x: torch.Tensor) -> list[torch.Tensor]:
    """J_l [N, 2, P_l] per parameter tensor (model.parameters() order), by autograd."""
    params = dict(net.named_parameters())

    def outputs(*values: torch.Tensor) -> torch.Tensor:
        return torch.func.functional_call(net, dict(zip(params, values)), (x,))

    jac = torch.autograd.functional.jacobian(outputs, tuple(params.values()))
    return [j.reshape(x.shape[0], 2, -1) for j in jac]


# ---------------------------------------------------------------------------- the 2x2 block
def test_the_ggn_block_is_autograds_hessian_in_the_natural_parameters_pulled_back():
    """Λ(f) = (∂η/∂f)ᵀ ∇²_η NLL (∂η/∂f) with ∇²_η NLL = −∇²_η log p = Cov[(y, y²)] from autograd,
    and the two backpropagated vectors v₁, v₂ reproduce it: v₁v₁ᵀ + v₂v₂ᵀ = Λ."""
    f = random_outputs(12, seed=0)
    y = torch.randn(12, generator=torch.Generator().manual_seed(1), dtype=F64)
    ggn = heteroscedastic_ggn(f)
    v = heteroscedastic_ggn_square_root(f)
    assert v.shape == (2, 12, 2)
    torch.testing.assert_close(torch.einsum("knc,knd->ncd", v, v), ggn)
    for n in range(12):
        eta = torch.stack(natural_parameters(f[n]))
        hessian = torch.autograd.functional.hessian(lambda e: natural_nll(e[0], e[1], y[n]), eta)
        link = torch.autograd.functional.jacobian(lambda g: torch.stack(natural_parameters(g)), f[n])
        torch.testing.assert_close(link.T @ hessian @ link, ggn[n])
        assert bool((torch.linalg.eigvalsh(hessian) > 0).all())  # the log-likelihood is concave in η


# ---------------------------------------------------------------------------- the network's GGN
def test_kfac_of_one_item_and_the_diagonal_are_autograds_ggn():
    """One item: each tensor's KFAC block B ⊗ A is exactly its block of J₁ᵀ Λ₁ J₁. Several items:
    the diagonal GGN is exactly diag(Σ_n J_nᵀ Λ_n J_n). The evidence's log-likelihood is −Σ NLL."""
    net = seeded_net(0, 3, 4, 2)
    x = torch.randn(6, 3, generator=torch.Generator().manual_seed(2), dtype=F64)
    y = torch.randn(6, generator=torch.Generator().manual_seed(3), dtype=F64)
    with torch.no_grad():
        lam = heteroscedastic_ggn(net(x))
    jac = jacobians(net, x)
    one = fit_curvature(net, x[:1], y[:1], "kron", "heteroscedastic")
    for block, j in zip(one.blocks, jac):
        torch.testing.assert_close(block_matrix(block), j[0].T @ lam[0] @ j[0])
    diag = fit_curvature(net, x, y, "diag", "heteroscedastic")
    for block, j in zip(diag.blocks, jac):
        torch.testing.assert_close(block, torch.einsum("ncp,ncd,ndp->p", j, lam, j))
    with torch.no_grad():
        torch.testing.assert_close(diag.loss, heteroscedastic_nll(net(x), y).sum())


def test_a_linear_models_posterior_variance_and_evidence_by_hand():
    """f(x) = W x + b [2]: J_n = [I₂ ⊗ x_nᵀ, I₂], H = Σ_n J_nᵀ Λ_n J_n on the standardised targets;
    the diagonal Laplace posterior is N(θ*, diag(1 / (diag H + δ))), its functional variance
    J(x) Σ J(x)ᵀ and its evidence log p(D | θ*) − ½ (Σ log(h + δ) − P log δ + δ ‖θ*‖²)."""
    g = torch.Generator().manual_seed(4)
    n, d, delta = 9, 3, 0.7
    x, y = torch.randn(n, d, generator=g, dtype=F64), 5.0 + 3.0 * torch.randn(n, generator=g, dtype=F64)
    net = seeded_net(1, d, 2)
    la = Laplace(model=net, subset="all", hessian="diag", prior_precision=delta, likelihood="heteroscedastic", seed=0, device="cpu").fit(x, y)
    loc, scale = float(y.mean()), float(y.std(correction=0))
    assert (la.target_location_, la.target_scale_) == pytest.approx((loc, scale))
    ys = (y - loc) / scale
    with torch.no_grad():
        f = net(x)
    lam = heteroscedastic_ggn(f)
    eye = torch.eye(2, dtype=F64)

    def jac(rows: torch.Tensor) -> torch.Tensor:  # [M, 2, 2d + 2]
        return torch.cat((torch.stack([torch.kron(eye, r.unsqueeze(0)) for r in rows]), eye.expand(rows.shape[0], 2, 2)), dim=2)

    h = torch.einsum("ncp,ncd,ndq->pq", jac(x), lam, jac(x))
    got = torch.cat([b for b in la.posterior_.curvature.blocks])
    torch.testing.assert_close(got, torch.diagonal(h))
    cov = torch.diag(1.0 / (torch.diagonal(h) + delta))
    new = torch.randn(4, d, generator=g, dtype=F64)
    f_new, var_new = la.functional_variance(new)
    torch.testing.assert_close(var_new, jac(new) @ cov @ jac(new).transpose(1, 2))
    theta = torch.cat((net[0].weight.detach().reshape(-1), net[0].bias.detach()))
    log_lik = -heteroscedastic_nll(f, ys).sum()
    evidence = log_lik - 0.5 * (torch.log(torch.diagonal(h) + delta).sum() - theta.numel() * math.log(delta) + delta * theta.square().sum())
    torch.testing.assert_close(la.log_marginal_likelihood(), evidence)
    # the predictive in the targets' units: E[y] = loc + scale E[μ], Var = scale² (Var[μ] + E[σ²])
    mu, spread, noise = linearised_moments(f_new, var_new)
    mean, var = la.predict_mean_var(new, observation_noise=True)
    torch.testing.assert_close(mean, loc + scale * mu)
    torch.testing.assert_close(var, scale**2 * (spread + noise))
    torch.testing.assert_close(la.predict_mean_var(new)[1], scale**2 * spread)


def test_the_last_layer_posterior_covers_the_last_linear_alone():
    """subset="last_layer": the KFAC of the last nn.Linear only (one item: exact), the rest fixed;
    f_var = J_W Σ_W J_Wᵀ + J_b Σ_b J_bᵀ with Σ = (B ⊗ A + δ)⁻¹ and (B + δ)⁻¹."""
    net = seeded_net(2, 2, 5, 2)
    x = torch.randn(1, 2, generator=torch.Generator().manual_seed(5), dtype=F64)
    la = Laplace(model=net, hessian="kron", prior_precision=2.0, likelihood="heteroscedastic", seed=0, device="cpu").fit(x, torch.ones(1, dtype=F64))
    assert la.layer_ is None and len(la.posterior_.curvature.blocks) == 2 and la.posterior_.layers == [la.model_[2]]
    new = torch.randn(3, 2, generator=torch.Generator().manual_seed(6), dtype=F64)
    with torch.no_grad():
        lam = heteroscedastic_ggn(net(x))[0]
    j_x, j_new = jacobians(net, x), jacobians(net, new)
    expected = torch.zeros(3, 2, 2, dtype=F64)
    for index in (2, 3):  # the last layer's weight and bias
        precision = j_x[index][0].T @ lam @ j_x[index][0] + 2.0 * torch.eye(j_x[index].shape[2], dtype=F64)
        expected += j_new[index] @ torch.linalg.inv(precision) @ j_new[index].transpose(1, 2)
    torch.testing.assert_close(la.functional_variance(new)[1], expected)


# ---------------------------------------------------------------------------- the predictive
def test_linearised_moments_against_monte_carlo():
    """E[μ], Var[μ], E[σ²] of μ = f₁ e^{−f₂}, σ² = e^{−f₂} under correlated f ~ N(m, V), against
    2,000,000 draws; with V = 0 they are the MAP's μ, 0 and σ²."""
    mean = torch.tensor([[0.3, -0.2], [1.5, 0.8], [-2.0, 0.1]], dtype=F64)
    cov = torch.tensor([[[0.20, 0.05], [0.05, 0.10]], [[0.05, -0.03], [-0.03, 0.08]], [[0.5, 0.2], [0.2, 0.3]]], dtype=F64)
    mu, spread, noise = linearised_moments(mean, cov)
    z = torch.randn(2_000_000, 3, 2, generator=torch.Generator().manual_seed(0), dtype=F64)
    f = mean + torch.einsum("nij,snj->sni", torch.linalg.cholesky(cov), z)
    draws_mu, draws_noise = f[..., 0] * torch.exp(-f[..., 1]), torch.exp(-f[..., 1])
    torch.testing.assert_close(mu, draws_mu.mean(0), rtol=5e-3, atol=5e-3)
    torch.testing.assert_close(spread, draws_mu.var(0), rtol=1e-2, atol=0)
    torch.testing.assert_close(noise, draws_noise.mean(0), rtol=5e-3, atol=0)
    mu0, spread0, noise0 = linearised_moments(mean, torch.zeros_like(cov))
    torch.testing.assert_close(mu0, mean[:, 0] * torch.exp(-mean[:, 1]))
    torch.testing.assert_close(spread0, torch.zeros(3, dtype=F64))
    torch.testing.assert_close(noise0, torch.exp(-mean[:, 1]))


def test_samples_are_shared_seeded_and_agree_with_the_closed_form():
    g = torch.Generator().manual_seed(7)
    x, y = torch.randn(30, 2, generator=g, dtype=F64), 10.0 + 2.0 * torch.randn(30, generator=g, dtype=F64)
    net = seeded_net(3, 2, 8, 2)
    make = lambda: Laplace(model=net, subset="all", prior_precision=1.0, likelihood="heteroscedastic", seed=3, device="cpu")  # noqa: E731
    la = make().fit(x, y)
    new = torch.randn(4, 2, generator=g, dtype=F64)
    pred = la.predict(new, n_samples=40_000)
    assert isinstance(pred, GaussianPredictive) and pred.mean.shape == pred.var.shape == (40_000, 4)
    assert bool((pred.var > 0).all())
    mean, var = la.predict_mean_var(new, observation_noise=True)
    got_mean, got_var = pred.moments(observation_noise=True)
    torch.testing.assert_close(got_mean, mean, rtol=0, atol=0.02 * float(var.sqrt().max()))
    torch.testing.assert_close(got_var, var, rtol=0.03, atol=0)
    small = la.predict(new[:2], n_samples=50)
    torch.testing.assert_close(small.mean, la.predict(new, n_samples=50).mean[:, :2])  # one θ_s for every candidate
    assert torch.equal(make().fit(x, y).predict(new, n_samples=50).var, la.predict(new, n_samples=50).var)


def test_marglik_maximises_the_evidence_in_one_precision():
    g = torch.Generator().manual_seed(8)
    x, y = torch.randn(40, 2, generator=g, dtype=F64), torch.randn(40, generator=g, dtype=F64)
    la = Laplace(model=seeded_net(4, 2, 6, 2), subset="all", hessian="kron", likelihood="heteroscedastic", device="cpu").fit(x, y)
    delta = la.prior_precision_
    assert bool((delta == delta[0]).all())
    best = la.log_marginal_likelihood()
    for factor in (0.9, 1.1):
        assert float(la.log_marginal_likelihood(delta[0] * factor)) < float(best)


@pytest.mark.parametrize("subset", ["last_layer", "all"])
def test_a_trained_fit(subset):
    g = torch.Generator().manual_seed(9)
    x = torch.rand(48, 1, generator=g) * 2 - 1
    y = 50.0 + 5.0 * torch.exp(-0.75 * x[:, 0]) * torch.randn(48, generator=g)
    make = lambda: Laplace(mlp(1, 2, hidden=(16,), dropout=0.0), subset=subset, likelihood="heteroscedastic", seed=0,  # noqa: E731
                           device="cpu", n_samples=7, train=TrainConfig(epochs=5, lr=1e-2))
    la = make().fit(x, y)
    assert la.likelihood_ == "heteroscedastic" and la.noise_ is None and la.marglik_ is None
    pred = la.predict(x[:5])
    assert isinstance(pred, GaussianPredictive) and pred.mean.shape == (7, 5)
    mean, var = la.predict_mean_var(x[:5], observation_noise=True)
    assert bool(torch.isfinite(mean).all()) and bool((var > la.predict_mean_var(x[:5])[1]).all())
    assert torch.equal(make().fit(x, y).predict(x[:5]).mean, pred.mean)
    with pytest.raises(ConfigError, match="regression"):
        la.predict_proba(x[:5])


@pytest.mark.parametrize("subset", ["last_layer", "all"])
def test_fits_on_and_moves_to_the_device(subset, device):
    """Fitted on `device` (CUDA on the GPU lane), its predictive lives there; fitted on the CPU and
    moved there, it predicts what it did on the CPU."""
    g = torch.Generator().manual_seed(9)
    x = torch.rand(48, 1, generator=g) * 2 - 1
    y = 50.0 + 5.0 * torch.exp(-0.75 * x[:, 0]) * torch.randn(48, generator=g)
    make = lambda dev: Laplace(mlp(1, 2, hidden=(16,), dropout=0.0), subset=subset, likelihood="heteroscedastic",  # noqa: E731
                               seed=0, device=dev, n_samples=7, train=TrainConfig(epochs=5, lr=1e-2))
    on_device = make(device).fit(x, y)
    mean, var = on_device.predict_mean_var(x[:5], observation_noise=True)
    assert mean.device.type == device and var.device.type == device and on_device.predict(x[:5]).mean.device.type == device
    la = make("cpu").fit(x, y)
    before, (mean_before, var_before) = la.predict(x[:5]), la.predict_mean_var(x[:5], observation_noise=True)
    assert la.to(device) is la
    after, (mean_after, var_after) = la.predict(x[:5]), la.predict_mean_var(x[:5], observation_noise=True)
    assert after.mean.device.type == device and mean_after.device.type == device
    torch.testing.assert_close(after.mean.cpu(), before.mean, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(after.var.cpu(), before.var, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(mean_after.cpu(), mean_before, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(var_after.cpu(), var_before, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("kwargs, words", [
    ({"hessian": "full"}, "takes 'kron' or 'diag'"),
    ({"prior_precision": "online"}, "online marginal-likelihood"),
    ({"predictive": "analytic"}, "linearised network's samples"),
])  # fmt: skip
def test_refusals(kwargs, words):
    x, y = torch.randn(8, 1), torch.randn(8)
    with pytest.raises(ConfigError, match=words):
        Laplace(mlp(1, 2), likelihood="heteroscedastic", device="cpu", train=TrainConfig(epochs=1), **kwargs).fit(x, y)
    with pytest.raises(ConfigError, match="two outputs per item"):
        Laplace(model=nn.Linear(1, 3), likelihood="heteroscedastic", device="cpu").fit(x, y)


# ---------------------------------------------------------------------------- the CLI
@pytest.mark.slow
def test_round_laplace_heteroscedastic(cli_db):
    from cli_checks import ok
    from test_cli_regression import write_regression_csv

    write_regression_csv(Path("pool.csv"))
    ok("init", "--name", "reg", "--task", "regression")
    ok("pool", "add", "pool.csv", "--key-column", "id", "--label-column", "y", "--test-fraction", "0.25")
    ok("round", "--oracle", "truth", "--k", "6")
    args = ("--posterior", "laplace", "--likelihood", "heteroscedastic", "--epochs", "3", "--samples", "5", "--device", "cpu")
    out = json.loads(ok("--json", "round", "--oracle", "truth", "--k", "3", "--acquisition", "variance", *args).stdout)
    assert out["status"] == "done" and out["posterior"] == "laplace"
    assert out["posterior_settings"]["options"] == {"likelihood": "heteroscedastic"}
    assert {"rmse", "nll"} <= set(out["metrics"]) and math.isfinite(out["metrics"]["nll"])
    out = json.loads(ok("--json", "round", "--oracle", "truth", "--k", "2", *args, "--option", "subset=all").stdout)  # default acquisition
    assert out["status"] == "done" and out["acquisition"] == "auto" and out["labelled"] == 9
