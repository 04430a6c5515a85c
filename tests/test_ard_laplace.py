"""ARD last-layer Laplace (studies/posteriors/ard_laplace.py) against dense computations on a
linear softmax model, where the GGN is the exact Hessian."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "studies" / "posteriors"))
import ard_laplace as ard  # noqa: E402

N, D, C = 7, 3, 3
P = C * D + C


@pytest.fixture
def case() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    phi = torch.randn(N, D, generator=g, dtype=torch.float64)
    y = torch.randint(0, C, (N,), generator=g)
    theta = 0.7 * torch.randn(P, generator=g, dtype=torch.float64)
    delta = torch.rand(P, generator=g, dtype=torch.float64) * 3 + 0.2
    return phi, y, theta, delta


def neg_log_joint(phi: torch.Tensor, y: torch.Tensor, theta: torch.Tensor, delta: torch.Tensor) -> torch.Tensor:
    """−log p(y | θ) − log N(θ; 0, diag δ⁻¹), written without the module's helpers."""
    w, b = theta[: C * D].reshape(C, D), theta[C * D :]
    nll = -torch.log_softmax(phi @ w.T + b, dim=1)[torch.arange(N), y].sum()
    return nll + 0.5 * (delta * theta.square()).sum() - 0.5 * delta.log().sum() + 0.5 * P * math.log(2 * math.pi)


def test_evidence_is_the_dense_laplace_formula(case):
    phi, y, theta, delta = case
    # log Z ≈ −E(θ) + (P/2) log 2π − ½ log det ∇²E(θ), E the negative log joint, ∇²E by autograd
    hessian = torch.autograd.functional.hessian(lambda t: neg_log_joint(phi, y, t, delta), theta)
    dense = -neg_log_joint(phi, y, theta, delta) + 0.5 * P * math.log(2 * math.pi) - 0.5 * torch.logdet(hessian)
    h = ard.ggn_full(phi, torch.softmax(ard.logits_of(phi, theta, C), 1))
    torch.testing.assert_close(h + torch.diag(delta), hessian)
    value = ard.log_evidence(ard.log_likelihood(phi, y, theta, C), h, theta, delta)
    torch.testing.assert_close(value, dense)


def test_effective_parameters_match_the_inverse(case):
    phi, _, theta, delta = case
    h = ard.ggn_full(phi, torch.softmax(ard.logits_of(phi, theta, C), 1))
    expected = 1.0 - delta * torch.linalg.inv(h + torch.diag(delta)).diagonal()
    torch.testing.assert_close(ard.effective_parameters(h, delta), expected)


def evidence_gradient(phi, y, theta, delta) -> torch.Tensor:
    """∂ log p(D | δ) / ∂ log δ at θ, by autograd through the dense formula."""
    log_delta = delta.log().clone().requires_grad_(True)
    h = ard.ggn_full(phi, torch.softmax(ard.logits_of(phi, theta, C), 1))
    ard.log_evidence(ard.log_likelihood(phi, y, theta, C), h, theta, log_delta.exp()).backward()
    return log_delta.grad


def test_fixed_point_is_a_stationary_point_of_the_evidence(case):
    phi, y, theta, delta = case
    h = ard.ggn_full(phi, torch.softmax(ard.logits_of(phi, theta, C), 1))
    fitted, steps = ard.ard_fixed_point(h, theta, delta, iterations=20000, tol=1e-11)
    assert steps < 20000
    free = (fitted > ard.FLOOR) & (fitted < ard.CAP)
    assert free.any()
    torch.testing.assert_close(evidence_gradient(phi, y, theta, fitted)[free], torch.zeros(int(free.sum()), dtype=torch.float64),
                               atol=1e-7, rtol=0)  # fmt: skip
    before = ard.log_evidence(ard.log_likelihood(phi, y, theta, C), h, theta, delta)
    assert ard.log_evidence(ard.log_likelihood(phi, y, theta, C), h, theta, fitted) > before


def test_map_weights_zero_the_gradient(case):
    phi, y, theta, delta = case
    fitted = ard.map_weights(phi, y, torch.zeros(P, dtype=torch.float64), delta, C, tol=0.0, iterations=50)
    grad = torch.autograd.functional.jacobian(lambda t: neg_log_joint(phi, y, t, delta), fitted)
    torch.testing.assert_close(grad, torch.zeros(P, dtype=torch.float64), atol=1e-9, rtol=0)


def test_variant_b_ends_at_a_map_and_a_stationary_evidence(case):
    phi, y, theta, delta = case
    fit = ard.fit_ard(phi, y, theta, delta, C, alternations=3)
    assert fit.evidence == pytest.approx(float(ard.log_evidence(ard.log_likelihood(phi, y, fit.theta, C), fit.h, fit.theta, fit.delta)))
    assert 0 < fit.gamma < P
    assert ((fit.delta >= ard.FLOOR) & (fit.delta <= ard.CAP)).all()


def test_moments_are_the_dense_glm_variance(case):
    phi, y, theta, delta = case
    fit = ard.fit_ard(phi, y, theta, delta, C)
    sigma = torch.linalg.inv(fit.h + torch.diag(fit.delta))
    tilde = torch.cat([phi, torch.ones(N, 1, dtype=phi.dtype)], 1)
    jac = torch.zeros(N, C, P, dtype=phi.dtype)  # ∂f_nc/∂θ: φ_n at W[c, :], 1 at b[c]
    for c in range(C):
        jac[:, c, c * D : (c + 1) * D] = tilde[:, :D]
        jac[:, c, C * D + c] = 1.0
    f_var = torch.einsum("ncp,pq,ncq->nc", jac, sigma, jac)
    mean, var = fit.moments(phi, C)
    torch.testing.assert_close(var, f_var)
    torch.testing.assert_close(mean, jac @ theta)
    probs = fit.predict_proba(phi, C)
    torch.testing.assert_close(probs.sum(1), torch.ones(N, dtype=phi.dtype))


def test_newton_reaches_the_fixed_point(case):
    phi, y, theta, delta = case
    h = ard.ggn_full(phi, torch.softmax(ard.logits_of(phi, theta, C), 1))
    value, grad, hessian = ard.evidence_derivatives(h, theta, delta)
    log_delta = delta.log().clone().requires_grad_(True)
    dense = ard.log_evidence(torch.tensor(0.0, dtype=torch.float64), h, theta, log_delta.exp())
    torch.testing.assert_close(value, dense.detach())
    torch.testing.assert_close(grad, torch.autograd.grad(dense, log_delta)[0])
    auto = torch.autograd.functional.hessian(lambda t: ard.log_evidence(torch.tensor(0.0, dtype=torch.float64), h, theta, t.exp()), delta.log())
    torch.testing.assert_close(hessian, auto)
    newton, steps = ard.ard_newton(h, theta, delta, tol=1e-10)
    assert steps < 200
    fixed, _ = ard.ard_fixed_point(h, theta, delta, iterations=20000, tol=1e-11)
    torch.testing.assert_close(newton, fixed, rtol=1e-5, atol=0)
