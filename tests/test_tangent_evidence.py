"""prior_precision="tangent": the tangent linear model's evidence at its own mode (`_tangent`),
checked against weight-space computations with explicit P x P matrices.

For a network that is linear in its parameters (one nn.Linear), the tangent model J(x)w is the
network itself, so its mode is the L2-regularised multinomial logistic regression's MAP (found
here by L-BFGS in weight space), its evidence the weight-space Laplace evidence
log p(y | w*) − ½ δ‖w*‖² − ½ log det(I + H/δ), MacKay's fixed point δ = γ/‖w*‖² with
γ = Σ e/(e + δ) over H's eigenvalues, and the predictive covariance J* (H + δI)⁻¹ J*ᵀ, H the GGN
at w*. For a hidden layer, the dual Gram matrix is checked against torch.func's Jacobians.
"""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn
from torch.func import functional_call, jacrev, vmap

from activebayes.errors import ConfigError
from activebayes.posteriors import _tangent
from activebayes.posteriors._glm import _unit_vectors
from activebayes.posteriors._gram import cross, tensor_features
from activebayes.posteriors._kfac import backpropagate, curvature_layers
from activebayes.posteriors.laplace import Laplace


def _data(n: int = 30, d: int = 4, c: int = 3, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g, dtype=torch.float64)
    y = (x[:, 0] + 0.5 * torch.randn(n, generator=g, dtype=torch.float64) > 0).long() + (x[:, 1] > 0.8).long()
    return x, y.clamp_max(c - 1)


def _linear(d: int = 4, c: int = 3) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(d, c)).double().eval()


def _features(x: torch.Tensor) -> torch.Tensor:
    return torch.cat([x, torch.ones(len(x), 1, dtype=x.dtype)], 1)  # φ̃ = [x, 1]


def _map(x: torch.Tensor, y: torch.Tensor, c: int, delta: float) -> torch.Tensor:
    """argmin Σ CE(W φ̃) + δ/2 ‖W‖² over W [C, D+1] by L-BFGS in float64."""
    phi = _features(x)
    w = torch.zeros(c, phi.shape[1], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w], lr=1, max_iter=500, tolerance_grad=1e-13, tolerance_change=1e-15, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(phi @ w.T, y, reduction="sum") + 0.5 * delta * w.square().sum()
        loss.backward()
        return loss

    opt.step(closure)
    return w.detach()


def _ggn(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """H = Σ_n J_nᵀ Λ_n J_n [P, P] with P = C·(D+1), parameters ordered W's rows (class-major)."""
    phi = _features(x)
    p = torch.softmax(phi @ w.T, 1)
    lam = torch.diag_embed(p) - p[:, :, None] * p[:, None, :]  # [N, C, C]
    return torch.einsum("nij,nk,nl->ikjl", lam, phi, phi).reshape(w.numel(), w.numel())


def _gram(x: torch.Tensor) -> torch.Tensor:
    """J(X) J(X)ᵀ [C·N, C·N] of the linear network, class-major: (φ̃ φ̃ᵀ) on each class's block."""
    phi = _features(x)
    return torch.block_diag(*[phi @ phi.T] * 3)


def test_the_tangent_mode_of_a_linear_network_is_its_regularised_map_and_the_evidence_is_laplaces() -> None:
    x, y = _data()
    delta = 2.0
    mode = _tangent.tangent_mode(_gram(x) / delta, y, 3)
    w = _map(x, y, 3, delta)
    phi = _features(x)
    assert torch.allclose(mode.outputs.reshape(3, -1).T, phi @ w.T, atol=1e-7)
    h = _ggn(x, w)
    log_lik = -nn.functional.cross_entropy(phi @ w.T, y, reduction="sum")
    expected = log_lik - 0.5 * delta * w.square().sum() - 0.5 * torch.logdet(torch.eye(h.shape[0], dtype=h.dtype) + h / delta)
    assert float(mode.evidence) == pytest.approx(float(expected), rel=1e-9, abs=1e-8)


def test_the_fixed_point_is_mackays_gamma_over_the_mode_weights_norm() -> None:
    x, y = _data()
    delta, mode = _tangent.tangent_precision(_gram(x), y, 3, tol=1e-12)
    w = _map(x, y, 3, delta)  # the weight-space mode at the returned δ
    eigenvalues = torch.linalg.eigvalsh(_ggn(x, w))
    gamma = float((eigenvalues / (eigenvalues + delta)).sum())  # directions the data determine
    assert delta == pytest.approx(gamma / float(w.square().sum()), rel=1e-6)
    assert torch.allclose(mode.outputs.reshape(3, -1).T, _features(x) @ w.T, atol=1e-6)


def test_the_fixed_point_is_where_the_evidence_at_fixed_curvature_is_flat() -> None:
    """With W½ held at the fixed point's mode, E(δ) = log p(y | û_δ) − ½ a_δᵀ û_δ − ½ log det(I + W½ G W½ / δ)
    has zero slope in log δ there, and is lower a step either side."""
    x, y = _data()
    gram = _gram(x)
    delta, mode = _tangent.tangent_precision(gram, y, 3, tol=1e-12)
    weighted = _tangent._apply_root(mode.root, _tangent._apply_root(mode.root, gram).T)
    eye = torch.eye(gram.shape[0], dtype=gram.dtype)

    def evidence(d: float) -> float:
        at = _tangent.tangent_mode(gram / d, y, 3)
        fit = float(_tangent._log_likelihood(at.outputs, y, 3) - 0.5 * at.coefficients @ at.outputs)
        return fit - 0.5 * float(torch.logdet(eye + weighted / d))

    h = 1e-4
    slope = (evidence(delta * (1 + h)) - evidence(delta * (1 - h))) / (2 * h)
    assert abs(slope) < 1e-5
    assert evidence(delta) > max(evidence(delta * 1.2), evidence(delta / 1.2))

def test_laplace_tangent_on_a_linear_network_predicts_with_the_weight_space_posterior_at_the_mode() -> None:
    x, y = _data()
    la = Laplace(model=_linear(), subset="all", hessian="full", prior_precision="tangent", seed=0, device="cpu").fit(x, y)
    delta = float(la.prior_precision_[0])
    assert torch.allclose(la.prior_precision_, torch.full((2,), delta, dtype=torch.float64))
    w = _map(x, y, 3, delta)
    # the posterior covariance over (W, b) at the tangent mode, in the network's own parameter order
    h = _ggn(x, w)
    cov = torch.linalg.inv(h + delta * torch.eye(h.shape[0], dtype=h.dtype))
    test = _data(n=5, seed=1)[0]
    phi = _features(test)
    jac = torch.einsum("ij,nk->nijk", torch.eye(3, dtype=torch.float64), phi).reshape(5, 3, -1)  # J* [M, C, P] in W-row order
    expected = jac @ cov @ jac.mT
    f, var = la.functional_variance(test)
    assert torch.allclose(var.double(), expected, atol=1e-8, rtol=1e-6)
    with torch.no_grad():
        assert torch.allclose(f, la.model_(test))
    assert float(la.log_marginal_likelihood()) == pytest.approx(float(_tangent.tangent_mode(_gram(x) / delta, y, 3).evidence), rel=1e-9)
    assert float(la.log_marginal_likelihood(2 * delta)) < float(la.log_marginal_likelihood())


def test_the_dual_gram_of_a_hidden_layer_network_is_its_jacobians_inner_products() -> None:
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3)).double().eval()
    x, _ = _data(n=7)
    layers = curvature_layers(net)
    _, stats = backpropagate(net, layers, x, _unit_vectors)
    gram = sum(cross(f, f) for f in tensor_features(layers, stats))
    params = {k: v.detach() for k, v in net.named_parameters()}
    jac = vmap(jacrev(lambda p, item: functional_call(net, p, (item[None],))[0]), in_dims=(None, 0))(params, x)
    flat = torch.cat([j.reshape(7, 3, -1) for j in jac.values()], 2)  # [N, C, P]
    expected = flat.permute(1, 0, 2).reshape(21, -1)  # class-major rows
    assert torch.allclose(gram, expected @ expected.T, atol=1e-10)


def test_the_tangent_precision_is_set_by_the_data_span_not_the_initial_weights() -> None:
    """Weights in directions no Jacobian row reaches change θ*'s norm, and with it the Laplace
    evidence's δ ≈ γ/‖θ*‖², but not the tangent model's δ."""
    x, y = _data(n=12, d=20)
    net = nn.Sequential(nn.Linear(20, 8), nn.Tanh(), nn.Linear(8, 3)).double().eval()
    moved = copy.deepcopy(net)
    with torch.no_grad():  # a weight component orthogonal to every training input leaves J(X) unchanged
        null = torch.linalg.svd(x, full_matrices=True).Vh[-1]
        moved[0].weight += 5.0 * torch.randn(8, 1, dtype=torch.float64, generator=torch.Generator().manual_seed(1)) * null
    deltas = {(kind, i): float(Laplace(model=m, subset="all", hessian="full", prior_precision=kind, seed=0, device="cpu").fit(x, y).prior_precision_[0])
              for kind in ("tangent", "marglik") for i, m in enumerate((net, moved))}  # fmt: skip
    assert deltas["tangent", 1] == pytest.approx(deltas["tangent", 0], rel=1e-6)
    assert deltas["marglik", 1] < 0.5 * deltas["marglik", 0]


@pytest.mark.parametrize(("options", "words"), [
    ({}, "use subset='all' and hessian='full'"),
    ({"subset": "all"}, "use subset='all' and hessian='full'"),
    ({"subset": "all", "hessian": "kron"}, "use subset='all' and hessian='full'"),
])  # fmt: skip
def test_tangent_needs_the_whole_networks_exact_ggn(options: dict, words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        Laplace(model=_linear(), prior_precision="tangent", **options)


def test_tangent_refuses_regression_and_too_many_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    x, y = _data()
    net = nn.Sequential(nn.Linear(4, 1)).double()
    with pytest.raises(ConfigError, match="'tangent' is for classification"):
        Laplace(model=net, subset="all", hessian="full", prior_precision="tangent", device="cpu").fit(x, y.double())
    monkeypatch.setattr(_tangent, "MAX_GRAM_ROWS", 60)
    with pytest.raises(ConfigError, match="N·C = 90 is above 60"):
        Laplace(model=_linear(), subset="all", hessian="full", prior_precision="tangent", device="cpu").fit(x, y)
