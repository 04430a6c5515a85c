"""nipv (BoTorch's qNegIntegratedPosteriorVariance) against the closed form of a GP with fixed
hyper-parameters: asking about x lowers the latent variance at x' by k_D(x', x)² / (k_D(x, x) + σ_ε²),
and the greedy batch equals the one chosen by recomputing the posterior after each fantasised point."""

from __future__ import annotations

import pytest
import torch

from activebayes.acquisition.nipv import botorch_view, nipv, nipv_select
from activebayes.errors import ConfigError

ELL, SCALE, NOISE = 0.3, 1.5, 0.05


def kernel(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    return SCALE * torch.exp(-torch.cdist(p, q) ** 2 / (2 * ELL**2))


def posterior_cov(p: torch.Tensor, q: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """k_D(p, q) = k(p, q) − k(p, X) (K + σ_ε² I)⁻¹ k(X, q)."""
    gram = kernel(x, x) + NOISE * torch.eye(len(x), dtype=x.dtype)
    return kernel(p, q) - kernel(p, x) @ torch.linalg.solve(gram, kernel(x, q))


@pytest.fixture(scope="module")
def fitted():
    from activebayes.posteriors.gp import GaussianProcess

    g = torch.Generator().manual_seed(0)
    x = torch.rand(15, 2, generator=g, dtype=torch.float64)
    y = torch.sin(5 * x[:, 0]) + x[:, 1]
    gp = GaussianProcess(lengthscale=ELL, outputscale=SCALE, noise=NOISE, device="cpu").fit(x, y)
    candidates = torch.rand(40, 2, generator=g, dtype=torch.float64)
    reference = torch.rand(30, 2, generator=g, dtype=torch.float64)
    return gp, x, candidates, reference


def test_nipv_is_the_closed_form_variance_reduction(fitted):
    gp, x, candidates, reference = fitted
    cross = posterior_cov(reference, candidates, x)  # [M, N]
    own = torch.diagonal(posterior_cov(candidates, candidates, x))  # [N]
    closed = (cross**2 / (own + NOISE)).mean(0)
    got = nipv(gp, candidates, reference)
    torch.testing.assert_close(got, closed, atol=1e-8, rtol=1e-6)
    # the same as the drop of the mean posterior variance after conditioning on (x_n, any y)
    n = int(closed.argmax())
    before = torch.diagonal(posterior_cov(reference, reference, x)).mean()
    after = torch.diagonal(posterior_cov(reference, reference, torch.cat([x, candidates[n : n + 1]]))).mean()
    assert float(got[n]) == pytest.approx(float(before - after), rel=1e-6)


def test_greedy_batch_fantasises_the_chosen_points(fitted):
    gp, x, candidates, reference = fitted
    selection, first = nipv_select(gp, candidates, reference, 3)
    torch.testing.assert_close(first.double(), nipv(gp, candidates, reference), atol=1e-6, rtol=1e-5)
    design, chosen, gains = x.clone(), [], []
    previous = torch.diagonal(posterior_cov(reference, reference, design)).mean()
    for _ in range(3):
        after = torch.stack([
            torch.diagonal(posterior_cov(reference, reference, torch.cat([design, candidates[j : j + 1]]))).mean()
            for j in range(len(candidates))
        ])  # fmt: skip
        after[chosen] = torch.inf
        best = int(after.argmin())
        chosen.append(best)
        gains.append(float(previous - after[best]))
        previous, design = after[best], torch.cat([design, candidates[best : best + 1]])
    assert selection.indices.tolist() == chosen
    torch.testing.assert_close(selection.scores.double(), torch.tensor(gains, dtype=torch.float64), atol=1e-6, rtol=1e-5)
    assert all(a >= b for a, b in zip(gains, gains[1:]))  # diminishing returns


def test_nipv_refuses_a_posterior_without_a_botorch_model():
    with pytest.raises(ConfigError, match="Gaussian-process"):
        botorch_view(object())
