"""Curvature of the last linear layer under softmax cross-entropy, and the Gaussian posteriors
built on it. Pure maths on tensors; `laplace.py` wraps it in a posterior.

Glossary: N items, D features (inputs of the last layer), C classes, P = C·D + C parameters.
Parameters are ordered as laplace-torch orders them: θ = [vec(W), b] with W [C, D] flattened
row-major (index c·D + d) and then the bias b [C].

For features φ_n [D], MAP probabilities p_n [C] and Λ_n = diag(p_n) − p_n p_nᵀ [C, C], the
generalised Gauss-Newton matrix of Σ_n −log softmax(W φ_n + b)_{y_n} (equal to its Hessian, as the
logits are linear in θ) is

    GGN = Σ_n Λ_n ⊗ φ̃_n φ̃_nᵀ,   φ̃_n = [φ_n, 1]   (in the (c, d̃) ordering, d̃ = D is the bias).

Structures (all with posterior precision GGN + δ·I, δ the scalar prior precision; diag and kron
also take a pair (δ_W, δ_b), one for the weight and one for the bias, `prior_vector`):
    full: the dense [P, P] matrix.
    diag: its diagonal [P].
    kron: laplace-torch's KFAC with N-scaling and weight and bias in separate blocks:
        weight block G ⊗ A with G = Σ_n Λ_n [C, C], A = (1/N) Σ_n φ_n φ_nᵀ [D, D];
        bias block G. Each block's precision is (block + δI), inverted through the
        eigendecompositions G = Q_G diag(g) Q_Gᵀ, A = Q_A diag(a) Q_Aᵀ.
Every structure is stored by eigenvalues `e` [P] of the curvature (so log det(H + δI) =
Σ log(e + δ) for any δ, which makes the marginal likelihood a cheap function of δ); "full"
keeps the dense H and decomposes it only when e is asked for: at one δ, Σ = (H + δI)⁻¹ comes
from its Cholesky factor.

Full, cost per fit and prediction (laplace-torch: a matmul for H, J Σ Jᵀ at N·C·P² per
prediction): H from one syrk over the C − 1 first classes (`ggn_full`), Σ from a Cholesky
factor, and each input's variances from Σ's C diagonal blocks [D+1, D+1] (N·C·(D+1)²; the full
[C, C] covariance from its C(C+1)/2 blocks c ≤ k).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from activebayes.errors import ConfigError

_CHUNK = 2048  # rows per chunk in the functional variance of the full structure


def _features_with_bias(phi: Tensor) -> Tensor:
    """φ̃ = [φ, 1], [N, D + 1]."""
    return torch.cat([phi, phi.new_ones(phi.shape[0], 1)], dim=1)


def _to_laplace_order(block: Tensor, c: int, d: int) -> Tensor:
    """Reorder the trailing (c, d̃) axes [..., C, D+1] into laplace-torch's [vec(W), b] [..., P]."""
    weight = block[..., :d].reshape(*block.shape[:-2], c * d)
    return torch.cat([weight, block[..., d]], dim=-1)


def _permutation(c: int, d: int, device: torch.device) -> Tensor:
    """Indices `perm` [P] with θ_laplace = θ_tilde[perm], θ_tilde ordered (c, d̃)."""
    tilde = torch.arange(c * (d + 1), device=device).reshape(c, d + 1)
    return _to_laplace_order(tilde, c, d)


def _column_gram(a: Tensor) -> Tensor:
    """aᵀa [K, K] for a [N, K]. On the CPU in float32/float64 by BLAS syrk (scipy's), which
    multiplies out one triangle only, N·K²/2 multiply-adds against N·K² for a matmul (torch
    exposes no syrk), at torch's thread count; the other triangle is mirrored. Elsewhere a matmul."""
    if a.device.type != "cpu" or a.dtype not in (torch.float32, torch.float64):
        return a.T @ a
    from scipy.linalg import blas
    from threadpoolctl import threadpool_limits

    syrk = blas.dsyrk if a.dtype == torch.float64 else blas.ssyrk
    with threadpool_limits(limits=torch.get_num_threads(), user_api="blas"):
        upper = torch.from_numpy(syrk(1.0, a.detach().contiguous().numpy().T, trans=0))  # (aᵀ)(aᵀ)ᵀ; aᵀ is Fortran-ordered: no copy
    return torch.triu(upper) + torch.triu(upper, 1).T


def ggn_full(phi: Tensor, probs: Tensor) -> Tensor:
    """Dense GGN [P, P] = Σ_n Λ_n ⊗ φ̃_n φ̃_nᵀ, in laplace-torch's parameter order.

    In the (c, d̃) ordering the block of classes (c, k) is B_ck = Σ_n (δ_ck p_nc − p_nc p_nk) φ̃_n φ̃_nᵀ
    [D+1, D+1]. With U_c = p_·c ⊙ φ̃ [N, D+1] (rows p_nc φ̃_n), B_ck = δ_ck U_cᵀφ̃ − U_cᵀU_k, all
    read off one Gram matrix (`_column_gram`) of [U_0, ..., U_{C−2}, φ̃]. The last class needs no
    product: the rows of Λ_n sum to 0, so B_c,C−1 = −Σ_{k<C−1} B_ck and B_C−1,C−1 = −Σ_{c<C−1} B_c,C−1
    ((C−1)² of the C² blocks are multiplied out, each over N items, in half the work of a matmul).
    """
    n, c = probs.shape
    d = phi.shape[1]
    m = d + 1
    tilde = _features_with_bias(phi)  # [N, D+1]
    u = (probs[:, : c - 1, None] * tilde[:, None, :]).reshape(n, (c - 1) * m)  # U_c side by side, c < C−1
    gram = _column_gram(torch.cat([u, tilde], dim=1))  # [(C−1)m + m, (C−1)m + m]
    k = (c - 1) * m
    h = phi.new_empty(c, m, c, m)
    inner = -gram[:k, :k].reshape(c - 1, m, c - 1, m)  # −U_cᵀU_k
    idx = torch.arange(c - 1, device=phi.device)
    inner[idx, :, idx, :] += gram[:k, k:].reshape(c - 1, m, m)  # + U_cᵀφ̃ on the diagonal blocks
    h[: c - 1, :, : c - 1, :] = inner
    last = -inner.sum(dim=2)  # B_c,C−1 [C−1, D+1, D+1]
    h[: c - 1, :, c - 1, :] = last
    h[c - 1, :, : c - 1, :] = last.permute(2, 0, 1)  # B_C−1,c = B_c,C−1ᵀ
    h[c - 1, :, c - 1, :] = -last.sum(dim=0)
    h = h.reshape(c * m, c * m)
    h = 0.5 * (h + h.T)  # symmetric to the last bit (the diagonal blocks' two halves round apart)
    perm = _permutation(c, d, phi.device)
    return h[perm][:, perm]


def ggn_diag(phi: Tensor, probs: Tensor) -> Tensor:
    """Diagonal of the GGN [P]: weight (c, d): Σ_n p_nc(1 − p_nc) φ_nd²; bias c: Σ_n p_nc(1 − p_nc)."""
    lam = probs * (1 - probs)  # [N, C] diagonal of Λ_n
    weight = lam.T @ phi.square()  # [C, D]
    return torch.cat([weight.reshape(-1), lam.sum(0)])


def ggn_kron(phi: Tensor, probs: Tensor) -> tuple[Tensor, Tensor]:
    """KFAC factors (G [C, C], A [D, D]): G = Σ_n Λ_n, A = (1/N) Σ_n φ_n φ_nᵀ (laplace-torch's scaling)."""
    g = torch.diag(probs.sum(0)) - probs.T @ probs
    a = phi.T @ phi / phi.shape[0]
    return g, a


def _symeig(matrix: Tensor) -> tuple[Tensor, Tensor]:
    """Eigenvalues (clamped at 0, as the GGN is positive semi-definite) and eigenvectors."""
    values, vectors = torch.linalg.eigh(matrix)
    return values.clamp_min(0.0), vectors


class LastLayerGaussian:
    """A Gaussian N(θ_MAP, (H + δI)⁻¹) over the last layer, H stored by its eigendecomposition
    ("full": by the dense H, its eigendecomposition made on first use).

    Attributes:
        structure: "full", "diag" or "kron".
        eigenvalues: e [P], the eigenvalues of H in the structure's own basis. "full" computes
            them (and `vectors`) from `curvature` when first asked: the evidence and the weight
            samples need them, while a fit at a given δ and its predictive need only the
            Cholesky factor of H + δI (P³/3 multiply-adds against about 9P³ for `eigh`).
        mean: θ_MAP [P] in laplace-torch order.
        n_classes, n_features: C and D.
        vectors: full: V [P, P] (H = V diag(e) Vᵀ); kron: (Q_G [C, C], Q_A [D, D]); diag: None.
        kron_values: kron only: (g [C], a [D]).
        curvature: full only: H [P, P] in laplace-torch order (None when built from e and V).
    """

    def __init__(self, structure: str, eigenvalues: Tensor | None, mean: Tensor, n_classes: int, n_features: int,
                 vectors: Tensor | tuple[Tensor, Tensor] | None = None, kron_values: tuple[Tensor, Tensor] | None = None,
                 *, curvature: Tensor | None = None) -> None:  # fmt: skip
        if eigenvalues is None and curvature is None:
            raise ConfigError("LastLayerGaussian: expected the eigenvalues or (full) the curvature")
        self.structure, self.mean, self.n_classes, self.n_features = structure, mean, n_classes, n_features
        self._eigenvalues, self._vectors, self.kron_values, self.curvature = eigenvalues, vectors, kron_values, curvature
        self._covariance: tuple[float, Tensor] | None = None  # full: (δ, Σ) of the latest `covariance`
        self._factor: tuple[float, Tensor | None] | None = None  # full: (δ, L) of the latest `_precision_factor`

    @property
    def eigenvalues(self) -> Tensor:
        if self._eigenvalues is None:
            self._eigenvalues, self._vectors = _symeig(self.curvature)  # type: ignore[arg-type]
        return self._eigenvalues

    @property
    def vectors(self) -> Tensor | tuple[Tensor, Tensor] | None:
        if self._vectors is None and self.structure == "full":
            self.eigenvalues  # noqa: B018  (made together)
        return self._vectors

    @classmethod
    def fit(cls, structure: str, phi: Tensor, probs: Tensor, mean: Tensor) -> LastLayerGaussian:
        """Curvature from features φ [N, D] and MAP probabilities [N, C]; mean θ_MAP [P]."""
        c, d = probs.shape[1], phi.shape[1]
        if structure == "full":
            return cls("full", None, mean, c, d, curvature=ggn_full(phi, probs))
        if structure == "diag":
            return cls("diag", ggn_diag(phi, probs).clamp_min(0.0), mean, c, d)
        g_mat, a_mat = ggn_kron(phi, probs)
        g, q_g = _symeig(g_mat)
        a, q_a = _symeig(a_mat)
        values = torch.cat([torch.outer(g, a).reshape(-1), g])
        return cls("kron", values, mean, c, d, (q_g, q_a), (g, a))

    @classmethod
    def fit_regression(cls, structure: str, phi: Tensor, noise_var: float, mean: Tensor) -> LastLayerGaussian:
        """Curvature for ONE output under the Gaussian likelihood N(y; θᵀφ̃, σ²), σ² = `noise_var`.

        Λ_n = 1/σ² for every item, so the GGN (= the Hessian of the NLL) is φ̃ᵀφ̃/σ² and the
        posterior N(θ_MAP, (φ̃ᵀφ̃/σ² + δI)⁻¹) is exact Bayesian linear regression on the features.
        C = 1, so the laplace-torch order [w (D), b] is the φ̃ order. Structures:
            full: φ̃ᵀφ̃/σ²;  diag: its diagonal Σ_n φ̃_n²/σ²;
            kron: G = N/σ² [1, 1], A = φᵀφ/N, i.e. weight block φᵀφ/σ² (exact) and bias block
                N/σ², dropping only the weight-bias cross terms (laplace-torch's KFAC).
        """
        n, d = phi.shape
        inv = 1.0 / noise_var
        if structure == "full":
            tilde = _features_with_bias(phi)
            return cls("full", None, mean, 1, d, curvature=tilde.T @ tilde * inv)
        if structure == "diag":
            tilde = _features_with_bias(phi)
            return cls("diag", tilde.square().sum(0) * inv, mean, 1, d)
        g = phi.new_full((1,), n * inv)
        a, q_a = _symeig(phi.T @ phi / n)
        values = torch.cat([torch.outer(g, a).reshape(-1), g])
        return cls("kron", values, mean, 1, d, (phi.new_ones(1, 1), q_a), (g, a))

    def to(self, device: torch.device | str) -> LastLayerGaussian:
        """The same Gaussian with every tensor on `device`."""
        def move(value):
            if value is None:
                return None
            if isinstance(value, tuple):
                return tuple(v.to(device) for v in value)
            return value.to(device)

        return LastLayerGaussian(self.structure, move(self._eigenvalues), self.mean.to(device), self.n_classes,
                                 self.n_features, move(self._vectors), move(self.kron_values),
                                 curvature=move(self.curvature))  # fmt: skip

    @property
    def n_params(self) -> int:
        return self.mean.shape[0]

    def prior_vector(self, delta: float | Tensor) -> float | Tensor:
        """δ as it adds to `eigenvalues`: a scalar δ as it is; a pair (δ_W, δ_b), the weight's and
        the bias's precisions, as the vector [P] (δ_W for the C·D weight entries, then δ_b for the C
        bias entries: the order of `eigenvalues` for diag and kron). "full" mixes the two in its
        eigenbasis, so it takes a pair only when δ_W = δ_b."""
        if not isinstance(delta, Tensor) or delta.numel() == 1:
            return delta if not isinstance(delta, Tensor) else delta.reshape(())
        pair = delta.to(self.mean)
        if self.structure == "full":
            if not torch.allclose(pair[0], pair[1]):
                raise ConfigError("hessian: 'full' takes one prior precision for the last layer, got one for the weight and "
                                  "another for the bias; use hessian='kron' or 'diag'")
            return pair[0]
        c, d = self.n_classes, self.n_features
        return torch.cat([pair[0].expand(c * d), pair[1].expand(c)])

    def log_det_precision(self, delta: float | Tensor) -> Tensor:
        """log det(H + δI) = Σ_i log(e_i + δ) (δ a scalar or a (δ_W, δ_b) pair, `prior_vector`)."""
        return torch.log(self.eigenvalues + self.prior_vector(delta)).sum()

    def functional_variance(self, phi: Tensor, delta: float, *, diagonal: bool = False) -> Tensor:
        """f_var = J Σ Jᵀ with J_n = ∂f_n/∂θ (φ̃_nᵀ ⊗ I_C up to ordering), Σ = (H + δI)⁻¹.

        Args:
            phi: features [N, D].
            diagonal: return only the diagonal [N, C] instead of [N, C, C].
        """
        c, d = self.n_classes, self.n_features
        phi = phi.to(self.mean.dtype)
        delta = self.prior_vector(delta)
        if self.structure == "diag":
            var = 1.0 / (self.eigenvalues + delta)
            weight_var, bias_var = var[: c * d].reshape(c, d), var[c * d :]
            out = phi.square() @ weight_var.T + bias_var  # [N, C]
            return out if diagonal else torch.diag_embed(out)
        if self.structure == "kron":
            (q_g, q_a), (g, a) = self.vectors, self.kron_values  # type: ignore[misc]
            psi = (phi @ q_a).square()  # [N, D]
            delta_w, delta_b = (delta[0], delta[-1]) if isinstance(delta, Tensor) and delta.dim() else (delta, delta)
            s = psi @ (1.0 / (torch.outer(g, a) + delta_w)).T  # [N, C] in G's eigenbasis
            s = s + 1.0 / (g + delta_b)  # the bias block: Q_G diag(1/(g + δ)) Q_Gᵀ
            if diagonal:
                return s @ q_g.square().T
            return torch.einsum("ci,ni,ki->nck", q_g, s, q_g)
        blocks = self._tilde_covariance(delta)  # Σ [C, D+1, C, D+1] in the (c, d̃) ordering
        m = d + 1
        tilde = _features_with_bias(phi)
        if diagonal:  # f_var[n, c] = φ̃_nᵀ Σ_cc φ̃_n: one product with the C diagonal blocks side by side
            right = torch.diagonal(blocks, dim1=0, dim2=2).permute(0, 2, 1).reshape(m, c * m)  # [D+1, C·(D+1)]
            return torch.cat([((t @ right).reshape(-1, c, m) * t.unsqueeze(1)).sum(-1) for t in tilde.split(_CHUNK)])
        # f_var[n, c, k] = φ̃_nᵀ Σ_ck φ̃_n = f_var[n, k, c] (Σ_kc = Σ_ckᵀ): the blocks k ≥ c only
        out = phi.new_empty(phi.shape[0], c, c)
        for start in range(0, phi.shape[0], _CHUNK):
            t = tilde[start : start + _CHUNK]
            for k in range(c):
                part = ((t @ blocks[k, :, k:, :].reshape(m, (c - k) * m)).reshape(-1, c - k, m) * t.unsqueeze(1)).sum(-1)
                out[start : start + _CHUNK, k, k:] = part
                out[start : start + _CHUNK, k:, k] = part
        return out

    def _precision_factor(self, delta: float) -> Tensor | None:
        """full: the lower Cholesky factor L of H + δI [P, P], kept for the latest δ; None when there
        is no H, or when rounding makes H + δI fail to factor."""
        if self.curvature is None:
            return None
        if self._factor is None or self._factor[0] != delta:
            eye = torch.eye(self.n_params, dtype=self.curvature.dtype, device=self.curvature.device)
            factor, info = torch.linalg.cholesky_ex(self.curvature + delta * eye)
            self._factor = (delta, factor if int(info) == 0 else None)
        return self._factor[1]

    def _tilde_covariance(self, delta: float | Tensor) -> Tensor:
        """Σ reordered to the (c, d̃) ordering and shaped [C, D+1, C, D+1] (block (c, k) = Σ_ck)."""
        c, d = self.n_classes, self.n_features
        cov = self.covariance(delta)
        perm = _permutation(c, d, cov.device)
        tilde_cov = torch.empty_like(cov)
        tilde_cov[perm.unsqueeze(1), perm.unsqueeze(0)] = cov
        return tilde_cov.reshape(c, d + 1, c, d + 1)

    def covariance(self, delta: float | Tensor) -> Tensor:
        """Σ = (H + δI)⁻¹ [P, P] in laplace-torch order (dense; for full and for tests).

        full: from the Cholesky factor L of H + δI (Σ = L⁻ᵀL⁻¹), kept for the latest δ; from the
        eigendecomposition V diag(1/(e + δ)) Vᵀ when there is no H, or when rounding makes H + δI
        fail to factor (H's tiny negative eigenvalues outweighing a tiny δ: e is clamped at 0).
        """
        delta = self.prior_vector(delta)
        if self.structure == "full":
            key = float(delta)
            if self._covariance is not None and self._covariance[0] == key:
                return self._covariance[1]
            factor = self._precision_factor(key)
            if factor is not None:
                cov = torch.cholesky_inverse(factor)
            else:
                v = self.vectors
                cov = (v * (1.0 / (self.eigenvalues + key))) @ v.T  # type: ignore[operator]
            self._covariance = (key, cov)
            return cov
        inv = 1.0 / (self.eigenvalues + delta)
        if self.structure == "diag":
            return torch.diag(inv)
        (q_g, q_a) = self.vectors  # type: ignore[misc]
        c, d = self.n_classes, self.n_features
        q = torch.kron(q_g, q_a)
        weight = (q * inv[: c * d]) @ q.T
        bias = (q_g * inv[c * d :]) @ q_g.T
        return torch.block_diag(weight, bias)

    def sample_deviations(self, noise: Tensor, delta: float) -> Tensor:
        """θ_s − θ_MAP [S, P] = Σ^{1/2} z_s for standard normal `noise` z [S, P].

        full: L⁻ᵀ z for the Cholesky factor L of H + δI (covariance L⁻ᵀL⁻¹ = Σ). L is unique, so
        every device maps z to the same deviations up to rounding, where an eigenbasis V of H
        (V diag((e + δ)^{-1/2}) z, the fallback when H + δI fails to factor) is not: H's repeated
        eigenvalues (its null space, at least P − N·C wide) leave V free up to a rotation.
        diag: z / sqrt(e + δ); kron (row-major vec):
        Q_G (Z ⊙ (g aᵀ + δ)^{-1/2}) Q_Aᵀ for the weights, Q_G ((g + δ)^{-1/2} ⊙ z_b) for the bias.
        """
        if self.structure == "full":
            factor = self._precision_factor(float(self.prior_vector(delta)))
            if factor is not None:
                return torch.linalg.solve_triangular(factor.mT, noise.to(factor.dtype).T, upper=True).T
        scale = (self.eigenvalues + self.prior_vector(delta)).rsqrt()
        if self.structure == "diag":
            return noise * scale
        if self.structure == "full":
            return (noise * scale) @ self.vectors.T  # type: ignore[union-attr]
        (q_g, q_a) = self.vectors  # type: ignore[misc]
        c, d = self.n_classes, self.n_features
        z = noise * scale
        weight = q_g @ z[:, : c * d].reshape(-1, c, d) @ q_a.T  # [S, C, D]
        bias = z[:, c * d :] @ q_g.T  # [S, C]
        return torch.cat([weight.reshape(-1, c * d), bias], dim=1)


def log_marginal_likelihood(
    log_likelihood: Tensor, gaussian: LastLayerGaussian, delta: float | Tensor
) -> Tensor:
    """Laplace evidence (Immer et al. 2021; laplace-torch's definition):

        log p(D | δ) ≈ log p(D | θ_MAP) − ½ (log det(H + δI) − P log δ + δ ‖θ_MAP‖²)
    (for a pair (δ_W, δ_b): Σ_p log δ_p and Σ_p δ_p θ_p² over the parameters instead).
    """
    delta = torch.as_tensor(delta, dtype=gaussian.eigenvalues.dtype, device=gaussian.eigenvalues.device)
    prior = torch.as_tensor(gaussian.prior_vector(delta)).expand(gaussian.n_params)  # [P]
    log_det_ratio = gaussian.log_det_precision(delta) - torch.log(prior).sum()
    scatter = (prior * gaussian.mean.square()).sum()
    return log_likelihood - 0.5 * (log_det_ratio + scatter)


def optimise_prior_precision(
    gaussian: LastLayerGaussian, *, log_min: float = -8.0, log_max: float = 8.0, grid: int = 81
) -> float:
    """argmax_δ of the evidence above (the log-likelihood term does not depend on δ):
    `maximise_scalar_evidence` on the eigenvalues and θ_MAP of `gaussian`."""
    norm2 = float(gaussian.mean.to(torch.float64).square().sum())
    return maximise_scalar_evidence(gaussian.eigenvalues, norm2, log_min=log_min, log_max=log_max, grid=grid)


def maximise_scalar_evidence(
    eigenvalues: Tensor, norm2: float, *, log_min: float = -8.0, log_max: float = 8.0, grid: int = 81
) -> float:
    """argmax_δ of F(log δ), the δ-dependent part of the Laplace evidence with one prior precision δ
    over P parameters, from the P eigenvalues e of the (scaled) curvature and ‖θ_MAP‖² = `norm2`.

    A grid over log δ ∈ [log_min, log_max] (natural log), then Newton steps in t = log δ on

        F(t) = −½ (Σ_i log(e_i + e^t) − P t + e^t ‖θ‖²),
        F'(t) = −½ (Σ_i δ/(e_i + δ) − P + δ‖θ‖²),  F''(t) = −½ (Σ_i δ e_i/(e_i + δ)² + δ‖θ‖²).
    The stationary point is MacKay's fixed point δ = γ/‖θ‖², γ = Σ_i e_i/(e_i + δ).
    """
    e = eigenvalues.detach().to(device="cpu", dtype=torch.float64)  # [P]: a scalar search, done on the CPU
    p = e.shape[0]
    ts = torch.linspace(log_min, log_max, grid, dtype=torch.float64)
    deltas = ts.exp()
    log_dets = torch.stack([torch.log(e + d).sum() for d in deltas])  # one pass per grid point: no [grid, P]
    values = -0.5 * (log_dets - p * ts + deltas * norm2)
    t = float(ts[int(values.argmax())])
    for _ in range(50):
        delta = math.exp(t)
        grad = -0.5 * (float((delta / (e + delta)).sum()) - p + delta * norm2)
        hess = -0.5 * (float((delta * e / (e + delta) ** 2).sum()) + delta * norm2)
        step = grad / hess
        step = max(min(step, 1.0), -1.0)
        t = min(max(t - step, log_min - 10), log_max + 10)
        if abs(step) < 1e-10:
            break
    return math.exp(t)
