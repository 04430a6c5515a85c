"""studies/posteriors/dirichlet_glm.py: the Dirichlet targets against Milios et al.'s closed form,
and, for a model linear in its parameters (where the GLM is the model and Laplace is exact), its
evidence against the Gaussian marginal likelihood and its predictive variances against the
posterior in weight space."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "studies" / "posteriors"))
import dirichlet_glm  # noqa: E402


def test_dirichlet_targets_are_the_log_normal_moment_match():
    """α = 1 + α_ε at the label and α_ε elsewhere; s² = log(1/α + 1), ỹ = log α − s²/2."""
    target, noise = dirichlet_glm.dirichlet_targets(torch.tensor([1]), 3, 0.01)
    expected_noise = torch.tensor([[math.log(101.0), math.log(1 / 1.01 + 1), math.log(101.0)]], dtype=torch.float64)
    torch.testing.assert_close(noise, expected_noise)
    torch.testing.assert_close(target, torch.log(torch.tensor([[0.01, 1.01, 0.01]], dtype=torch.float64)) - expected_noise / 2)


def _linear_case():
    """A 3 → 2 linear layer (weight and bias, δ 4 and 9) at its exact MAP on 5 items with known
    noise: (net, x, residual target ỹ [5, 2], noise s² [5, 2], δ, Φ [10, 8], prior D [8])."""
    torch.manual_seed(0)
    net = nn.Linear(3, 2).double()
    x = torch.randn(5, 3, dtype=torch.float64)
    target, noise = torch.randn(5, 2, dtype=torch.float64), torch.rand(5, 2, dtype=torch.float64) + 0.5
    deltas = torch.tensor([4.0, 9.0], dtype=torch.float64)
    phi = torch.cat(dirichlet_glm.tensor_jacobians(net, x), 1)  # [N·C, 8]: the model is linear, J is its design
    prior = torch.cat([torch.full((p.numel(),), float(d), dtype=torch.float64) for p, d in zip(net.parameters(), deltas)])
    s_inv = torch.diag(1 / noise.reshape(-1))
    theta = torch.linalg.solve(phi.T @ s_inv @ phi + torch.diag(prior), phi.T @ s_inv @ target.reshape(-1))
    with torch.no_grad():
        net.weight.copy_(theta[:6].reshape(2, 3))
        net.bias.copy_(theta[6:])
    return net, x, target, noise, deltas, phi, prior


def test_log_evidence_at_the_map_is_the_gaussian_marginal_likelihood():
    """For y = Φθ + ε, θ ~ N(0, D⁻¹), ε ~ N(0, S): log q at θ* = log N(y; 0, Φ D⁻¹ Φᵀ + S)."""
    net, x, target, noise, deltas, phi, prior = _linear_case()
    grams = [j @ j.T for j in dirichlet_glm.tensor_jacobians(net, x)]
    with torch.no_grad():
        residual = (net(x) - target).reshape(-1)
    sq_norms = torch.stack([p.detach().square().sum() for p in net.parameters()])
    got = dirichlet_glm.log_evidence(grams, sq_norms, deltas.log(), residual, noise.reshape(-1))
    cov = phi @ torch.diag(1 / prior) @ phi.T + torch.diag(noise.reshape(-1))
    expected = torch.distributions.MultivariateNormal(torch.zeros(10, dtype=torch.float64), cov).log_prob(target.reshape(-1))
    torch.testing.assert_close(got, expected)


def test_predictive_variance_is_the_weight_posterior_pushed_through_the_model():
    """k_xx − k_xᵀ (K + S)⁻¹ k_x = φ(x) (ΦᵀS⁻¹Φ + D)⁻¹ φ(x)ᵀ for the linear model, per output."""
    net, x, _, noise, deltas, phi, prior = _linear_case()
    test_x = torch.randn(4, 3, dtype=torch.float64)
    _, variances = dirichlet_glm.predictive(net, deltas, x, noise, test_x, draws=10)
    test_phi = torch.cat(dirichlet_glm.tensor_jacobians(net, test_x), 1)  # [4·2, 8]
    posterior = torch.linalg.inv(phi.T @ torch.diag(1 / noise.reshape(-1)) @ phi + torch.diag(prior))
    torch.testing.assert_close(variances, torch.einsum("np,pq,nq->n", test_phi, posterior, test_phi).reshape(4, 2))
