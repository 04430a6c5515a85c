"""The exact GLM posterior of studies/posteriors/exact_glm.py: its elliptical slice sampler against a
conjugate Gaussian posterior, and its scaled Jacobian against autograd by hand."""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "studies" / "posteriors"))
import exact_glm  # noqa: E402


def test_elliptical_slice_samples_a_conjugate_gaussian_posterior():
    """Prior N(m, K) and likelihood N(y; f, I) in 3 dimensions: the posterior is
    N(m + K(K + I)⁻¹(y − m), K − K(K + I)⁻¹K). 20,000 kept draws of a seeded chain: the sample mean
    within 0.1 and the sample covariance within 0.1 of the closed form (about 8 Monte Carlo standard
    errors for these variances)."""
    g = torch.Generator().manual_seed(0)
    a = torch.randn(3, 3, generator=g, dtype=torch.float64)
    kernel = a @ a.T + 0.5 * torch.eye(3, dtype=torch.float64)
    mean, y = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64), torch.tensor([1.0, 0.0, 1.5], dtype=torch.float64)
    gain = kernel @ torch.linalg.inv(kernel + torch.eye(3, dtype=torch.float64))
    post_mean, post_cov = mean + gain @ (y - mean), kernel - gain @ kernel
    samples = exact_glm.elliptical_slice(mean, torch.linalg.cholesky(kernel), lambda f: -0.5 * (f - y).square().sum(),
                                         mean.clone(), 21000, 1000, 1, g)  # fmt: skip
    assert samples.shape == (20000, 3)
    torch.testing.assert_close(samples.mean(0), post_mean, atol=0.1, rtol=0)
    torch.testing.assert_close(torch.cov(samples.T), post_cov, atol=0.1, rtol=0)


def test_scaled_jacobian_is_the_jacobian_over_the_root_precision_per_tensor():
    """J(x) D^{-1/2} [M, C, P] for a 3-2 Linear, ReLU, 2-2 Linear: each tensor's columns divided by
    √δ of that tensor, against torch.autograd.functional.jacobian of the flattened parameters."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 2), nn.ReLU(), nn.Linear(2, 2)).double()
    deltas = torch.tensor([4.0, 9.0, 16.0, 25.0], dtype=torch.float64)
    x = torch.randn(5, 3, dtype=torch.float64)
    got = exact_glm.scaled_jacobian(net, deltas, x)
    shapes = [p.shape for p in net.parameters()]
    flat = torch.cat([p.detach().reshape(-1) for p in net.parameters()])

    def outputs(theta: torch.Tensor) -> torch.Tensor:
        parts = theta.split([s.numel() for s in shapes])
        params = {name: part.reshape(shape) for (name, _), part, shape in zip(net.named_parameters(), parts, shapes)}
        return torch.func.functional_call(net, params, (x,))

    jac = torch.autograd.functional.jacobian(outputs, flat)  # [M, C, P]
    scale = torch.cat([torch.full((s.numel(),), float(d) ** -0.5, dtype=torch.float64) for s, d in zip(shapes, deltas)])
    torch.testing.assert_close(got, jac * scale)
