"""The full last-layer Gaussian's fast paths (`activebayes.posteriors._curvature`): the GGN read off
one Gram matrix of C − 1 classes, the covariance from a Cholesky factor (and its fall-back to the
eigendecomposition), and the functional variance from Σ's blocks, each against the dense
formulas of the definitions."""

from __future__ import annotations

import pytest
import torch

from activebayes.posteriors._curvature import LastLayerGaussian, _column_gram, _permutation, ggn_full


def _problem(n: int, d: int, c: int, seed: int = 0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    phi = torch.randn(n, d, generator=g, dtype=dtype)
    probs = torch.softmax(3 * torch.randn(n, c, generator=g, dtype=dtype), dim=1)
    return phi, probs


def _dense_ggn(phi, probs):
    """Σ_n Λ_n ⊗ φ̃_n φ̃_nᵀ item by item, in laplace-torch order."""
    c, d = probs.shape[1], phi.shape[1]
    tilde = torch.cat([phi, torch.ones(len(phi), 1, dtype=phi.dtype)], dim=1)
    h = sum(torch.kron(torch.diag(p) - torch.outer(p, p), torch.outer(t, t)) for p, t in zip(probs, tilde))
    perm = _permutation(c, d, phi.device)
    return h[perm][:, perm]


@pytest.mark.parametrize(("n", "d", "c"), [(40, 3, 2), (60, 4, 3), (200, 6, 7)])
def test_ggn_full_is_the_sum_over_items_exactly_symmetric(n, d, c):
    phi, probs = _problem(n, d, c)
    h = ggn_full(phi, probs)
    torch.testing.assert_close(h, _dense_ggn(phi, probs), rtol=0, atol=1e-12)
    assert torch.equal(h, h.T)
    h32 = ggn_full(phi.float(), probs.float())  # float32 on the CPU: the single-precision syrk
    assert h32.dtype == torch.float32
    torch.testing.assert_close(h32.double(), h, rtol=1e-4, atol=1e-4)


def test_gram_is_a_t_a_on_each_path():
    a = torch.randn(300, 17, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(_column_gram(a), a.T @ a, rtol=0, atol=1e-12)
    torch.testing.assert_close(_column_gram(a[:, ::2]), a[:, ::2].T @ a[:, ::2], rtol=0, atol=1e-12)  # not contiguous
    torch.testing.assert_close(_column_gram(a.float()), a.float().T @ a.float(), rtol=1e-5, atol=1e-4)
    assert torch.equal(_column_gram(a.to(torch.float16)), a.to(torch.float16).T @ a.to(torch.float16))  # other dtypes: a matmul


def test_full_covariance_at_each_delta_and_without_the_curvature():
    """Σ(δ) for several δ (the factor kept per δ must not leak into another δ), the same from a
    Gaussian built from e and V alone, and the functional variance against J Σ Jᵀ."""
    n, d, c = 80, 4, 3
    phi, probs = _problem(n, d, c, seed=2)
    mean = torch.zeros(c * d + c, dtype=torch.float64)
    gauss = LastLayerGaussian.fit("full", phi, probs, mean)
    eye = torch.eye(c * d + c, dtype=torch.float64)
    h = _dense_ggn(phi, probs)
    jac = torch.cat([torch.einsum("ck,nd->nckd", torch.eye(c, dtype=torch.float64), phi).reshape(n, c, c * d),
                     torch.eye(c, dtype=torch.float64).expand(n, c, c)], dim=2)  # fmt: skip
    for delta in (0.5, 3.0, 0.5, torch.tensor(2.0, dtype=torch.float64)):
        cov = torch.linalg.inv(h + float(delta) * eye)
        torch.testing.assert_close(gauss.covariance(delta), cov)
        f_var = torch.einsum("ncp,pq,nkq->nck", jac, cov, jac)
        torch.testing.assert_close(gauss.functional_variance(phi, delta), f_var)
        torch.testing.assert_close(gauss.functional_variance(phi, delta, diagonal=True), torch.diagonal(f_var, dim1=1, dim2=2))
    from_eigen = LastLayerGaussian("full", gauss.eigenvalues, mean, c, d, gauss.vectors)
    assert from_eigen.curvature is None
    torch.testing.assert_close(from_eigen.covariance(0.5), torch.linalg.inv(h + 0.5 * eye))
    torch.testing.assert_close(from_eigen.to("cpu").covariance(0.5), gauss.to("cpu").covariance(0.5))


def test_full_covariance_falls_back_to_the_eigendecomposition_when_the_factor_fails():
    """A curvature whose rounding makes H + δI indefinite for a tiny δ: the Cholesky factor fails
    and Σ comes from the clamped eigenvalues, finite and positive definite."""
    c, d = 2, 1
    v = torch.tensor([1.0, -1.0, 0.0, 0.0], dtype=torch.float64) / 2**0.5
    h = 5.0 * torch.outer(v, v) - 1e-9 * torch.eye(4, dtype=torch.float64)  # a "rounding" eigenvalue of −1e−9
    gauss = LastLayerGaussian("full", None, torch.zeros(4, dtype=torch.float64), c, d, curvature=h)
    cov = gauss.covariance(1e-12)
    e, q = torch.linalg.eigh(h)
    torch.testing.assert_close(cov, (q / (e.clamp_min(0.0) + 1e-12)) @ q.T)
    assert bool(torch.isfinite(cov).all()) and float(torch.linalg.eigvalsh(cov).min()) > 0
