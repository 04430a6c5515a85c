"""Whole-network Laplace (subset="all"): KFAC and diagonal GGN over every Linear and Conv2d, the
evidence and the linearised predictive, against closed forms and laplace-torch 0.3."""

import warnings

import pytest
import torch
from torch import nn
from torch.func import functional_call, jacrev

from activebayes.errors import ConfigError
from activebayes.marglik import log_evidence
from activebayes.posteriors._glm import NetworkGaussian, standard_noise
from activebayes.posteriors._gram import MAX_GRAM_ROWS, GramCurvature, fit_network_curvature
from activebayes.posteriors._kfac import KronBlock, curvature_layers, fit_curvature, log_marginal_likelihood, parameter_tensors
from activebayes.posteriors.laplace import Laplace
from activebayes.predictive import GaussianPredictive

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")
F64 = torch.float64


def mlp(out=3, hidden=16, d_in=4):
    torch.manual_seed(1)
    return nn.Sequential(nn.Linear(d_in, hidden), nn.Tanh(), nn.Linear(hidden, out)).to(F64).eval()


def cnn():
    torch.manual_seed(2)
    return nn.Sequential(nn.Conv2d(1, 3, 3), nn.ReLU(), nn.Conv2d(3, 4, 3, padding=1, stride=2), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16, 4)).to(F64).eval()  # fmt: skip


def data(kind, n=60, seed=0):
    g = torch.Generator().manual_seed(seed)
    if kind == "image":
        return torch.randn(n, 1, 11, 11, generator=g, dtype=F64), torch.randint(0, 4, (n,), generator=g)
    x = torch.randn(n, 4, generator=g, dtype=F64)
    if kind == "regression":
        return x, torch.sin(x[:, 0]) + 0.1 * torch.randn(n, generator=g, dtype=F64)
    return x, (x[:, 0] > 0).long() + (x[:, 1] > 0.3).long()


def reference(net, x, y, likelihood, hessian, prior=1.0, sigma=1.0):
    laplace = pytest.importorskip("laplace")
    targets = y.unsqueeze(1) if likelihood == "regression" else y
    ref = laplace.Laplace(net, likelihood, subset_of_weights="all", hessian_structure=hessian,
                          prior_precision=torch.as_tensor(prior, dtype=F64), sigma_noise=sigma)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref.fit(torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, targets), batch_size=16))
    return ref


# ------------------------------------------------------------------------------ closed forms
def dense_ggn(net, x, likelihood):
    """Σ_n J_nᵀ Λ_n J_n [P, P] by autograd Jacobians (P in parameter_tensors order)."""
    params = {n: p.detach() for n, p in net.named_parameters()}
    jac = jacrev(lambda p: functional_call(net, p, (x,)))(params)  # {name: [N, C, *shape]}
    j = torch.cat([jac[n].reshape(x.shape[0], -1, params[n].numel()) for n in params], dim=2)
    f = net(x).detach()
    if likelihood == "gaussian":
        lam = torch.eye(f.shape[1], dtype=F64).expand(x.shape[0], -1, -1)
    else:
        p = torch.softmax(f, 1)
        lam = torch.diag_embed(p) - p.unsqueeze(2) * p.unsqueeze(1)
    return torch.einsum("ncp,ncd,ndq->pq", j, lam, j), j


def dense_kron(curvature):
    """The block-diagonal KFAC matrix Σ_l B_l ⊗ A_l (bias blocks B_l) [P, P]."""
    blocks = []
    for block in curvature.blocks:
        b = (block.q_g * block.g) @ block.q_g.T
        a = (block.q_a * block.a) @ block.q_a.T if block.q_a is not None else torch.ones(1, 1, dtype=F64)
        blocks.append(torch.kron(b, a))
    return torch.block_diag(*blocks)


@pytest.mark.parametrize("kind", ["mlp", "image"])
def test_diag_is_the_exact_ggn_diagonal(kind):
    net = cnn() if kind == "image" else mlp()
    x, y = data(kind, n=20)
    curvature = fit_curvature(net, x, y, "diag", "categorical")
    ggn, _ = dense_ggn(net, x, "categorical")
    torch.testing.assert_close(torch.cat(curvature.blocks), torch.diagonal(ggn))


def test_kron_of_a_linear_network_by_formula():
    """Every KFAC block of an MLP: B = Σ_n g gᵀ over the C square-root vectors, A = (1/N) Σ x xᵀ;
    the last layer's factors are the last-layer Laplace's (G = Σ Λ_n, A = φᵀφ / N)."""
    from activebayes.posteriors._curvature import ggn_kron

    net = mlp()
    x, y = data("mlp", n=30)
    curvature = fit_curvature(net, x, y, "kron", "categorical")
    phi = torch.tanh(net[0](x)).detach()
    g_mat, a_mat = ggn_kron(phi, torch.softmax(net(x).detach(), 1))
    last = curvature.blocks[2]
    torch.testing.assert_close((last.q_g * last.g) @ last.q_g.T, g_mat)
    torch.testing.assert_close((last.q_a * last.a) @ last.q_a.T, a_mat)
    first = curvature.blocks[0]
    torch.testing.assert_close((first.q_a * first.a) @ first.q_a.T, x.T @ x / x.shape[0])


def test_evidence_and_variance_by_dense_formula_including_the_gram_path():
    """A 4 → 64 → 3 MLP on 20 items: the second layer's input has 64 > 20 features, so its A
    (rank ≤ 20) comes from the 20 × 20 Gram matrix (a thin q_a). The evidence, Σ, J Σ Jᵀ and the
    linearised samples equal the dense matrices built from the factors and autograd Jacobians."""
    net = mlp(hidden=64)
    x, y = data("mlp", n=20)
    curvature = fit_curvature(net, x, y, "kron", "categorical")
    assert curvature.blocks[2].q_a.shape == (64, 20)  # the Gram path
    deltas = torch.tensor([0.5, 2.0, 1.5, 3.0], dtype=F64)
    per_param = torch.cat([d.expand(s) for d, s in zip(deltas, curvature.sizes)])
    precision = dense_kron(curvature) + torch.diag(per_param)
    theta = torch.cat(curvature.mean)
    nll = nn.functional.cross_entropy(net(x), y, reduction="sum")
    expected = -nll - 0.5 * (torch.logdet(precision) - per_param.log().sum() + (per_param * theta**2).sum())
    torch.testing.assert_close(log_marginal_likelihood(curvature, deltas), expected.detach())
    ng = NetworkGaussian(net, curvature_layers(net), curvature, deltas)
    x_test = data("mlp", n=7, seed=3)[0]
    _, jac = dense_ggn(net, x_test, "categorical")
    cov = torch.linalg.inv(precision)
    f_var = torch.einsum("ncp,pq,nkq->nck", jac, cov, jac)
    torch.testing.assert_close(ng.functional_variance(x_test)[1], f_var)
    torch.testing.assert_close(ng.functional_variance(x_test, diagonal=True)[1], torch.diagonal(f_var, dim1=1, dim2=2))
    # Σ^{1/2} maps the unit vectors to deviations whose second moment is Σ, and the samples are f + J Δ
    eye = torch.eye(curvature.n_params, dtype=F64)
    devs = ng.deviations(eye)
    root = torch.cat([d.reshape(eye.shape[0], -1) for d in devs], dim=1)
    torch.testing.assert_close(root.T @ root, cov)
    outs = ng.sample_outputs(x_test, [d[:5] for d in devs])
    torch.testing.assert_close(outs, net(x_test).detach() + torch.einsum("ncp,sp->snc", jac, root[:5]))


# ------------------------------------------------------------------------------ laplace-torch
CASES = [("mlp", "classification"), ("image", "classification"), ("regression", "regression")]


@pytest.mark.parametrize("hessian", ["kron", "diag", "full"])
@pytest.mark.parametrize("kind, likelihood", CASES)
def test_evidence_matches_laplace_torch(kind, likelihood, hessian):
    """"full" is laplace-torch's FullLaplace over every weight, ours in the N·C-row dual form."""
    net = cnn() if kind == "image" else mlp(out=1 if likelihood == "regression" else 3)
    x, y = data(kind)
    ours_likelihood = "gaussian" if likelihood == "regression" else "categorical"
    curvature = fit_network_curvature(net, x, y, hessian, ours_likelihood)
    ref = reference(net, x, y, likelihood, hessian)
    deltas = torch.linspace(0.3, 4.0, len(curvature.blocks), dtype=F64)
    for prior, sigma in ((deltas, 0.7), (torch.tensor(2.5, dtype=F64), 1.3)):
        theirs = ref.log_marginal_likelihood(prior, torch.tensor(sigma, dtype=F64) if likelihood == "regression" else None)
        ours = log_marginal_likelihood(curvature, prior, sigma if likelihood == "regression" else None)
        assert float(ours) == pytest.approx(float(theirs), rel=1e-8)


def test_float32_evidence_within_1e4_of_laplace_torch():
    net, (x, y) = mlp().float(), data("mlp")
    ref = reference(net, x.float(), y, "classification", "kron")
    theirs = float(ref.log_marginal_likelihood(torch.tensor(1.5)))
    assert float(log_evidence(net, x.float(), y, 1.5)) == pytest.approx(theirs, rel=1e-4)


@pytest.mark.parametrize("hessian", ["kron", "diag", "full"])
@pytest.mark.parametrize("kind", ["mlp", "image"])
def test_glm_probit_predictive_matches_laplace_torch(kind, hessian):
    net = cnn() if kind == "image" else mlp()
    x, y = data(kind)
    x_test = 2 * data(kind, n=9, seed=4)[0]
    ref = reference(net, x, y, "classification", hessian, prior=1.7)
    ours = Laplace(model=net, subset="all", hessian=hessian, prior_precision=1.7, seed=0, device="cpu").fit(x, y)
    atol = 1e-8 if hessian == "full" else 1e-10  # full: Woodbury's prior-minus-data difference loses a few digits
    torch.testing.assert_close(ours.predict_proba(x_test), ref(x_test, pred_type="glm", link_approx="probit"), atol=atol, rtol=0)
    torch.testing.assert_close(ours.functional_variance(x_test)[1], ref._glm_predictive_distribution(x_test)[1])
    assert float(ours.log_marginal_likelihood()) == pytest.approx(float(ref.log_marginal_likelihood()), rel=1e-8)


@pytest.mark.parametrize("hessian", ["kron", "full"])
def test_regression_predictive_matches_laplace_torch(hessian):
    net = mlp(out=1)
    x, y = data("regression")
    la = Laplace(model=net, subset="all", hessian=hessian, prior_precision=0.8, seed=0, device="cpu").fit(x, y)
    ref = reference(net, x, y, "regression", hessian, prior=0.8, sigma=la.noise_**0.5)
    x_test = data("regression", n=6, seed=5)[0]
    f_mu, f_var = ref(x_test, pred_type="glm")
    mean, var = la.predict_mean_var(x_test)
    torch.testing.assert_close(mean, f_mu[:, 0])
    torch.testing.assert_close(var, f_var[:, 0, 0])
    torch.testing.assert_close(la.predict_mean_var(x_test, observation_noise=True)[1], f_var[:, 0, 0] + la.noise_)
    pred = la.predict(x_test, n_samples=8)
    assert isinstance(pred, GaussianPredictive) and pred.mean.shape == (8, 6)
    torch.testing.assert_close(pred.latent_var, var)
    assert float(la.log_marginal_likelihood()) == pytest.approx(float(ref.log_marginal_likelihood()), rel=1e-8)


# ------------------------------------------------------------------------------ the posterior
def test_samples_are_seeded_and_independent_of_batching():
    net = cnn()
    x, y = data("image")
    la = Laplace(model=net, subset="all", prior_precision=1.0, seed=3, device="cpu", n_samples=6).fit(x, y)
    pool = data("image", n=12, seed=7)[0]
    first = la.predict(pool).probs
    perm = torch.randperm(12, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(la.predict(pool[perm]).probs, first[:, perm])
    torch.testing.assert_close(torch.cat([la.predict(pool[:5]).probs, la.predict(pool[5:]).probs], dim=1), first)
    again = Laplace(model=net, subset="all", prior_precision=1.0, seed=3, device="cpu", n_samples=6).fit(x, y)
    torch.testing.assert_close(again.predict(pool).probs, first)
    assert not torch.allclose(Laplace(model=net, subset="all", prior_precision=1.0, seed=4, device="cpu", n_samples=6)
                              .fit(x, y).predict(pool).probs, first)  # fmt: skip


def test_sample_covariance_converges_to_the_functional_variance():
    """The linearised samples' covariance across s is J Σ Jᵀ (20,000 seeded draws: MC error ~1%)."""
    net = mlp()
    x, y = data("mlp")
    curvature = fit_curvature(net, x, y, "kron", "categorical")
    ng = NetworkGaussian(net, curvature_layers(net), curvature, torch.full((4,), 2.0, dtype=F64))
    x_test = data("mlp", n=5, seed=9)[0]
    f, f_var = ng.functional_variance(x_test)
    outs = ng.sample_outputs(x_test, ng.deviations(standard_noise(20_000, curvature.n_params, 0)))
    centred = outs - f
    empirical = torch.einsum("snk,snl->nkl", centred, centred) / outs.shape[0]
    assert float((empirical - f_var).abs().max() / f_var.diagonal(dim1=1, dim2=2).max()) < 0.05


@pytest.mark.parametrize("kind, likelihood", CASES)
def test_full_deviations_have_exactly_the_posterior_covariance(kind, likelihood):
    """Matheron's rule is linear in its noise: fed the identity, the deviations are the rows of a
    matrix M with MᵀM = (φH + diag δ)⁻¹, H the GGN by autograd Jacobians (laplace-torch's
    FullLaplace gets H only to 1e-7 here, its curvature backend's rounding)."""
    net = cnn() if kind == "image" else mlp(out=1 if likelihood == "regression" else 3)
    x, y = data(kind, n=20)
    deltas = torch.linspace(0.5, 3.0, 2 * len(curvature_layers(net)), dtype=F64)
    la = Laplace(model=net, subset="all", hessian="full", prior_precision=deltas.tolist(), seed=0, device="cpu").fit(x, y)
    h, _ = dense_ggn(net, x, "gaussian" if likelihood == "regression" else "categorical")
    post = la.posterior_
    precision = post.factor * h + torch.diag(torch.repeat_interleave(deltas, torch.tensor(post.curvature.sizes)))
    rows = torch.cat([d.reshape(post.noise_size, -1) for d in post.deviations(torch.eye(post.noise_size, dtype=F64))], dim=1)
    torch.testing.assert_close(rows.T @ rows, torch.linalg.inv(precision), atol=1e-12, rtol=1e-9)


def test_full_evidence_counts_only_the_directions_the_data_touch():
    """With N·C far below P, KFAC's log det counts rank(B)·rank(A) directions and the exact GGN at
    most N·C: the exact evidence is the dense formula's, and above KFAC's on few items."""
    net = mlp(hidden=64)
    x, y = data("mlp", n=6)
    full = fit_network_curvature(net, x, y, "full", "categorical")
    h, _ = dense_ggn(net, x, "categorical")
    assert isinstance(full, GramCurvature) and int((full.eigenvalues() > 1e-10).sum()) <= 6 * 3
    deltas = torch.linspace(0.5, 2.0, 4, dtype=F64)
    dense = torch.linalg.slogdet(h + torch.diag(torch.repeat_interleave(deltas, torch.tensor(full.sizes))))[1]
    torch.testing.assert_close(full.log_det_posterior_precision(deltas), dense)
    kron = fit_curvature(net, x, y, "kron", "categorical")
    assert float(log_marginal_likelihood(full, deltas)) > float(log_marginal_likelihood(kron, deltas))


def test_marglik_prior_maximises_the_scalar_evidence():
    net = mlp()
    x, y = data("mlp")
    la = Laplace(model=net, subset="all", hessian="diag", seed=0, device="cpu").fit(x, y)
    best = float(la.prior_precision_[0])
    assert torch.all(la.prior_precision_ == best)
    for factor in (0.5, 2.0):
        assert float(la.log_marginal_likelihood()) > float(la.log_marginal_likelihood(best * factor))
    assert float(log_evidence(net, x, y, "marglik", hessian="diag")) == pytest.approx(float(la.log_marginal_likelihood()), rel=1e-10)


def test_analytic_predictive_uses_the_network_moments():
    net = mlp()
    x, y = data("mlp")
    la = Laplace(model=net, subset="all", predictive="analytic", prior_precision=1.0, seed=0, device="cpu", n_samples=4).fit(x, y)
    f, var = la.output_moments(x[:3])
    torch.testing.assert_close(var, torch.diagonal(la.functional_variance(x[:3])[1], dim1=1, dim2=2))
    assert la.predict(x[:3]).probs.shape == (4, 3, 3)


def test_errors():
    x, y = data("mlp", n=10)
    with pytest.raises(ConfigError, match="BatchNorm1d"):
        Laplace(model=nn.Sequential(nn.Linear(4, 5), nn.BatchNorm1d(5), nn.Linear(5, 3)).double(), subset="all", device="cpu").fit(x, y)
    with pytest.raises(ConfigError, match="groups=1"):
        fit_curvature(nn.Sequential(nn.Conv2d(2, 2, 3, groups=2), nn.Flatten()).double(), torch.randn(3, 2, 5, 5, dtype=F64),
                      torch.zeros(3, dtype=torch.long), "kron", "categorical")  # fmt: skip
    with pytest.raises(ConfigError, match="one output"):
        Laplace(model=mlp(), subset="all", device="cpu").fit(x, torch.randn(10, dtype=F64))
    with pytest.raises(ConfigError, match="per parameter tensor"):
        Laplace(model=mlp(), subset="all", prior_precision=[1.0, 2.0], device="cpu").fit(x, y)
    many = data("mlp", n=MAX_GRAM_ROWS // 3 + 1)
    with pytest.raises(ConfigError, match="use hessian='kron'"):
        Laplace(model=mlp(), subset="all", hessian="full", prior_precision=1.0, device="cpu").fit(*many)
    assert [p.shape for p in parameter_tensors(curvature_layers(mlp()))] == [(16, 4), (16,), (3, 16), (3,)]
    assert isinstance(fit_curvature(mlp(), x, y, "kron", "categorical").blocks[0], KronBlock)
