"""Last-layer Laplace: curvature closed forms, agreement with laplace-torch, evidence, sampling."""

import warnings

import pytest
import torch
from torch import nn

from activebayes.errors import ConfigError, NotFittedError, ShapeError
from activebayes.posteriors._curvature import (
    LastLayerGaussian,
    ggn_diag,
    ggn_full,
    ggn_kron,
    optimise_prior_precision,
)
from activebayes.posteriors.laplace import Laplace
from activebayes.training import TrainConfig
from activebayes.predictive import Predictive

HESSIANS = ["diag", "kron", "full"]
# laplace-torch's curvlinops backend calls the deprecated torch.jit.script
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")


def toy_data(n=300, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 2, generator=g, dtype=dtype)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0.5).long()  # 3 classes
    return x, y


def mlp(dtype=torch.float64):
    return nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 3)).to(dtype)


@pytest.fixture(scope="module")
def trained():
    x, y = toy_data()
    torch.manual_seed(0)
    net = mlp()
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    for _ in range(300):
        opt.zero_grad()
        nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
    return net.eval(), x, y


# ----------------------------------------------------------------- curvature closed forms
def _last_layer_hessian(phi, w, b, y):
    """Exact Hessian of Σ_n CE(W φ_n + b, y_n) wrt θ = [vec(W), b] (= the GGN for the last layer)."""
    c, d = w.shape

    def loss(theta):
        weight, bias = theta[: c * d].reshape(c, d), theta[c * d :]
        return nn.functional.cross_entropy(phi @ weight.T + bias, y, reduction="sum")

    return torch.autograd.functional.hessian(loss, torch.cat([w.reshape(-1), b]))


def test_ggn_full_and_diag_equal_exact_hessian():
    g = torch.Generator().manual_seed(1)
    n, d, c = 25, 4, 3
    phi = torch.randn(n, d, generator=g, dtype=torch.float64)
    w = torch.randn(c, d, generator=g, dtype=torch.float64)
    b = torch.randn(c, generator=g, dtype=torch.float64)
    y = torch.randint(0, c, (n,), generator=g)
    probs = torch.softmax(phi @ w.T + b, dim=1)
    exact = _last_layer_hessian(phi, w, b, y)
    torch.testing.assert_close(ggn_full(phi, probs), exact)
    torch.testing.assert_close(ggn_diag(phi, probs), torch.diagonal(exact))


def test_kron_factors_by_formula():
    g = torch.Generator().manual_seed(2)
    phi = torch.randn(10, 3, generator=g, dtype=torch.float64)
    probs = torch.softmax(torch.randn(10, 4, generator=g, dtype=torch.float64), dim=1)
    g_mat, a_mat = ggn_kron(phi, probs)
    g_loop = sum(torch.diag(p) - torch.outer(p, p) for p in probs)
    a_loop = sum(torch.outer(f, f) for f in phi) / 10
    torch.testing.assert_close(g_mat, g_loop)
    torch.testing.assert_close(a_mat, a_loop)


@pytest.mark.parametrize("hessian", HESSIANS)
def test_gaussian_structures_are_consistent(hessian):
    """Log det, covariance, functional variance and samples agree with dense formulas."""
    g = torch.Generator().manual_seed(3)
    n, d, c, delta = 30, 3, 4, 0.7
    phi = torch.randn(n, d, generator=g, dtype=torch.float64)
    probs = torch.softmax(torch.randn(n, c, generator=g, dtype=torch.float64), dim=1)
    mean = torch.randn(c * d + c, generator=g, dtype=torch.float64)
    gauss = LastLayerGaussian.fit(hessian, phi, probs, mean)
    if hessian == "full":
        precision = ggn_full(phi, probs) + delta * torch.eye(c * d + c, dtype=torch.float64)
    elif hessian == "diag":
        precision = torch.diag(ggn_diag(phi, probs) + delta)
    else:
        g_mat, a_mat = ggn_kron(phi, probs)
        precision = torch.block_diag(torch.kron(g_mat, a_mat), g_mat) + delta * torch.eye(c * d + c, dtype=torch.float64)
    cov = torch.linalg.inv(precision)
    torch.testing.assert_close(gauss.covariance(delta), cov)
    torch.testing.assert_close(gauss.log_det_precision(delta), torch.logdet(precision))
    # J_n = [I_C ⊗ φ_nᵀ, I_C] in laplace order
    jac = torch.cat([torch.einsum("ck,nd->nckd", torch.eye(c, dtype=torch.float64), phi).reshape(n, c, c * d),
                     torch.eye(c, dtype=torch.float64).expand(n, c, c)], dim=2)
    f_var = torch.einsum("ncp,pq,nkq->nck", jac, cov, jac)
    torch.testing.assert_close(gauss.functional_variance(phi, delta), f_var)
    torch.testing.assert_close(gauss.functional_variance(phi, delta, diagonal=True), torch.diagonal(f_var, dim1=1, dim2=2))
    # Σ^{1/2} maps z to deviations whose covariance is Σ: (Σ^{1/2})(Σ^{1/2})ᵀ = Σ
    root = gauss.sample_deviations(torch.eye(c * d + c, dtype=torch.float64), delta)  # rows: Σ^{1/2} e_i
    torch.testing.assert_close(root.T @ root, cov)


def test_full_samples_are_the_cholesky_map_whatever_the_eigenbasis():
    """hessian="full": θ_s − θ_MAP = L⁻ᵀ z for H + δI = LLᵀ (by hand: solve Lᵀ x = z), not V diag(·) z,
    so an eigenbasis rotated inside H's null space (5 items, 3 classes: rank ≤ 10 of 15) changes no
    sample; the rotated basis still gives the same covariance."""
    gen = torch.Generator().manual_seed(0)
    phi = torch.randn(5, 4, generator=gen, dtype=torch.float64)
    probs = torch.softmax(torch.randn(5, 3, generator=gen, dtype=torch.float64), 1)
    gauss = LastLayerGaussian.fit("full", phi, probs, torch.zeros(15, dtype=torch.float64))
    z = torch.randn(7, 15, generator=gen, dtype=torch.float64)
    factor = torch.linalg.cholesky(ggn_full(phi, probs) + 0.5 * torch.eye(15, dtype=torch.float64))
    expected = torch.linalg.solve_triangular(factor.T, z.T, upper=True).T
    torch.testing.assert_close(gauss.sample_deviations(z, 0.5), expected)
    values, vectors = gauss.eigenvalues, gauss.vectors
    null = values < 1e-10
    assert int(null.sum()) >= 5
    rotation = torch.linalg.qr(torch.randn(int(null.sum()), int(null.sum()), generator=gen, dtype=torch.float64))[0]
    rotated = vectors.clone()
    rotated[:, null] = vectors[:, null] @ rotation
    other = LastLayerGaussian("full", values, gauss.mean, 3, 4, rotated, curvature=gauss.curvature)
    torch.testing.assert_close(other.sample_deviations(z, 0.5), expected)
    without_h = LastLayerGaussian("full", values, gauss.mean, 3, 4, rotated)  # the fallback: V diag((e + δ)^-1/2) z
    root = without_h.sample_deviations(torch.eye(15, dtype=torch.float64), 0.5)
    torch.testing.assert_close(root.T @ root, gauss.covariance(0.5))


# ---------------------------------------------------------------- agreement with laplace-torch
@pytest.mark.parametrize("hessian", HESSIANS)
def test_matches_laplace_torch(trained, hessian):
    laplace = pytest.importorskip("laplace")
    net, x, y = trained
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=64)
    ref = laplace.Laplace(net, "classification", subset_of_weights="last_layer", hessian_structure=hessian,
                          prior_precision=2.0)
    ref.fit(loader)
    ours = Laplace(model=net, hessian=hessian, prior_precision=2.0, seed=0, device="cpu").fit(x, y)
    x_test = 2 * toy_data(60, seed=5)[0]
    expected = ref(x_test, pred_type="glm", link_approx="probit")
    torch.testing.assert_close(ours.predict_proba(x_test), expected, atol=1e-4, rtol=0)
    js, _ = ref.backend.last_layer_jacobians(x_test)
    torch.testing.assert_close(ours.functional_variance(x_test)[1], ref.functional_variance(js), atol=1e-6, rtol=1e-5)
    for delta in (2.0, 0.1, 10.0):
        theirs = float(ref.log_marginal_likelihood(torch.tensor(delta, dtype=torch.float64)))
        assert float(ours.log_marginal_likelihood(delta)) == pytest.approx(theirs, rel=1e-3)


@pytest.mark.parametrize("hessian", ["diag", "kron"])
def test_marglik_prior_precision_is_the_maximum(trained, hessian):
    laplace = pytest.importorskip("laplace")
    net, x, y = trained
    ours = Laplace(model=net, hessian=hessian, prior_precision="marglik", seed=0, device="cpu").fit(x, y)
    best = ours.prior_precision_
    lml = float(ours.log_marginal_likelihood())
    for factor in (1.05, 1 / 1.05, 3.0, 1 / 3.0):
        assert lml > float(ours.log_marginal_likelihood(best * factor))
    # MacKay's fixed point: δ = γ / ‖θ‖², γ = Σ e / (e + δ)
    e, theta = ours.posterior_.eigenvalues, ours.posterior_.mean
    gamma = float((e / (e + best)).sum())
    assert best == pytest.approx(gamma / float(theta.square().sum()), rel=1e-6)
    # laplace-torch's Adam on log δ arrives at (nearly) the same point, with no better evidence
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=100)
    ref = laplace.Laplace(net, "classification", subset_of_weights="last_layer", hessian_structure=hessian)
    ref.fit(loader)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref.optimize_prior_precision(pred_type="glm", method="marglik", n_steps=300)
    theirs = float(ref.prior_precision)
    assert best == pytest.approx(theirs, rel=1e-2)
    assert lml >= float(ours.log_marginal_likelihood(theirs)) - 1e-9


def test_optimiser_on_closed_form():
    """With one eigenvalue e and ‖θ‖² = m, F'(t) = 0 gives δ/(e+δ) − 1 + δ m = 0 -> δ m (e + δ) = e."""
    e, m = 3.0, 0.5
    gauss = LastLayerGaussian("diag", torch.tensor([e], dtype=torch.float64),
                              torch.tensor([m**0.5], dtype=torch.float64), 1, 0)
    delta = optimise_prior_precision(gauss)
    expected = (-e + (e * e + 4 * e / m) ** 0.5) / 2  # root of δ² + e δ − e/m = 0
    assert delta == pytest.approx(expected, rel=1e-9)


# ----------------------------------------------------------------------------- sampling
@pytest.mark.parametrize("hessian", HESSIANS)
def test_weight_samples_give_the_glm_predictive(trained, hessian):
    """Logits φ̃ᵀθ_s of weight samples have mean f_map and covariance J Σ Jᵀ (Monte Carlo)."""
    net, x, y = trained
    la = Laplace(model=net, hessian=hessian, prior_precision=1.0, seed=4, device="cpu").fit(x, y)
    x_test = x[:4]
    weight, bias = la.weight_samples(40000)
    phi, logits = la._features(x_test)
    f = torch.einsum("nd,scd->snc", phi, weight) + bias.unsqueeze(1)  # [S, N, C]
    f_map, f_var = la.functional_variance(x_test)
    torch.testing.assert_close(logits, f_map)
    torch.testing.assert_close(f.mean(0), f_map, atol=0.05 * float(f_var.diagonal(dim1=1, dim2=2).max()) ** 0.5, rtol=0)
    centred = f - f.mean(0)
    empirical = torch.einsum("snc,snk->nck", centred, centred) / (f.shape[0] - 1)
    torch.testing.assert_close(empirical, f_var, atol=0.05 * float(f_var.abs().max()), rtol=0)


def test_predict_is_seeded_and_batch_independent(trained):
    net, x, y = trained
    la = Laplace(model=net, hessian="kron", prior_precision=1.0, n_samples=16, seed=7, device="cpu").fit(x, y)
    full = la.predict(x)
    assert isinstance(full, Predictive) and full.probs.shape == (16, 300, 3)
    torch.testing.assert_close(full.probs.sum(-1), torch.ones(16, 300, dtype=torch.float64))
    torch.testing.assert_close(la.predict(x[100:110]).probs, full.probs[:, 100:110])
    again = Laplace(model=net, hessian="kron", prior_precision=1.0, n_samples=16, seed=7, device="cpu").fit(x, y)
    assert torch.equal(again.predict(x[:20]).probs, full.probs[:, :20])
    other = Laplace(model=net, hessian="kron", prior_precision=1.0, n_samples=16, seed=8, device="cpu").fit(x, y)
    assert not torch.allclose(other.predict(x[:20]).probs, full.probs[:, :20])
    assert la.predict(x[:3], n_samples=5).probs.shape == (5, 3, 3)


def test_mc_link_is_the_sample_mean(trained):
    net, x, y = trained
    la = Laplace(model=net, hessian="full", link="mc", prior_precision=1.0, n_samples=64, seed=0, device="cpu").fit(x, y)
    torch.testing.assert_close(la.predict_proba(x[:10]), la.predict(x[:10]).mean())


def test_posthoc_does_not_touch_the_model(trained):
    net, x, y = trained
    before = {k: v.clone() for k, v in net.state_dict().items()}
    net.train()
    Laplace(model=net, hessian="full", seed=0, device="cpu").fit(x, y).predict(x[:5])
    assert net.training and all(p.requires_grad for p in net.parameters())
    net.eval()
    for k, v in net.state_dict().items():
        assert torch.equal(v, before[k])


def test_model_fn_trains_with_the_shared_routine():
    x, y = toy_data(120, seed=3, dtype=torch.float32)
    la = Laplace(lambda: mlp(torch.float32), hessian="kron", train=TrainConfig(epochs=30, lr=1e-2), seed=0, device="cpu").fit(x, y)
    assert la.prior_precision_ > 0
    acc = (la.predict_proba(x).argmax(1) == y).float().mean()
    assert acc > 0.8
    same = Laplace(lambda: mlp(torch.float32), hessian="kron", train=TrainConfig(epochs=30, lr=1e-2), seed=0, device="cpu").fit(x, y)
    assert torch.equal(same.predict(x[:10], n_samples=4).probs, la.predict(x[:10], n_samples=4).probs)


def test_errors():
    x, y = toy_data(20)
    with pytest.raises(NotFittedError):
        Laplace(model=mlp()).predict(x)
    with pytest.raises(NotFittedError):
        Laplace(model=mlp()).log_marginal_likelihood()
    with pytest.raises(ConfigError, match="hessian"):
        Laplace(model=mlp(), hessian="lowrank")
    with pytest.raises(ConfigError, match="link"):
        Laplace(model=mlp(), link="bridge")
    with pytest.raises(ConfigError, match="prior_precision"):
        Laplace(model=mlp(), prior_precision=-1.0)
    with pytest.raises(ConfigError, match="exactly one"):
        Laplace(mlp, model=mlp())
    with pytest.raises(ConfigError, match="subset"):
        Laplace(model=mlp(), subset="some")
    with pytest.raises(ConfigError, match="prior_precision: 'online'"):
        Laplace(model=mlp(), prior_precision="online")
    with pytest.raises(ConfigError, match="prior_precision"):
        Laplace(model=mlp(), prior_precision=[1.0, 2.0])  # one per tensor: subset='all' only
    with pytest.raises(ConfigError, match="nn.Linear"):
        Laplace(model=nn.Sequential(nn.Flatten(), nn.Tanh()).double(), device="cpu").fit(x, y)
    with pytest.raises(ConfigError, match="last nn.Linear"):
        Laplace(model=nn.Sequential(mlp(), nn.Softmax(dim=1)), device="cpu").fit(x, y)
    with pytest.raises(ShapeError, match="y"):
        Laplace(model=mlp(), device="cpu").fit(x, y[:5])
