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
Σ log(e + δ) for any δ, which makes the marginal likelihood a cheap function of δ).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

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


def ggn_full(phi: Tensor, probs: Tensor) -> Tensor:
    """Dense GGN [P, P] = Σ_n Λ_n ⊗ φ̃_n φ̃_nᵀ, in laplace-torch's parameter order.

    Computed as Σ_c e_c e_cᵀ ⊗ φ̃ᵀ diag(p_·c) φ̃ − UᵀU with U_n = p_n ⊗ φ̃_n, no loop over items.
    """
    n, c = probs.shape
    d = phi.shape[1]
    tilde = _features_with_bias(phi)  # [N, D+1]
    u = (probs.unsqueeze(2) * tilde.unsqueeze(1)).reshape(n, c * (d + 1))  # [N, C·(D+1)]
    h = -(u.T @ u)
    blocks = torch.einsum("nc,nd,ne->cde", probs, tilde, tilde)  # [C, D+1, D+1]
    h = h.reshape(c, d + 1, c, d + 1)
    idx = torch.arange(c, device=phi.device)
    h[idx, :, idx, :] += blocks
    h = h.reshape(c * (d + 1), c * (d + 1))
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


@dataclass(frozen=True)
class LastLayerGaussian:
    """A Gaussian N(θ_MAP, (H + δI)⁻¹) over the last layer, H stored by its eigendecomposition.

    Attributes:
        structure: "full", "diag" or "kron".
        eigenvalues: e [P], the eigenvalues of H in the structure's own basis.
        mean: θ_MAP [P] in laplace-torch order.
        n_classes, n_features: C and D.
        vectors: full: V [P, P] (H = V diag(e) Vᵀ); kron: (Q_G [C, C], Q_A [D, D]); diag: None.
        kron_values: kron only: (g [C], a [D]).
    """

    structure: str
    eigenvalues: Tensor
    mean: Tensor
    n_classes: int
    n_features: int
    vectors: Tensor | tuple[Tensor, Tensor] | None = None
    kron_values: tuple[Tensor, Tensor] | None = None

    @classmethod
    def fit(cls, structure: str, phi: Tensor, probs: Tensor, mean: Tensor) -> LastLayerGaussian:
        """Curvature from features φ [N, D] and MAP probabilities [N, C]; mean θ_MAP [P]."""
        c, d = probs.shape[1], phi.shape[1]
        if structure == "full":
            values, vectors = _symeig(ggn_full(phi, probs))
            return cls("full", values, mean, c, d, vectors)
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
            values, vectors = _symeig(tilde.T @ tilde * inv)
            return cls("full", values, mean, 1, d, vectors)
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

        return dataclasses.replace(self, eigenvalues=self.eigenvalues.to(device), mean=self.mean.to(device),
                                   vectors=move(self.vectors), kron_values=move(self.kron_values))

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
        pair = delta.to(self.eigenvalues)
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
        cov = self.covariance(delta)  # [P, P] laplace order -> (c, d̃) ordering
        perm = _permutation(c, d, cov.device)
        tilde_cov = torch.empty_like(cov)
        tilde_cov[perm.unsqueeze(1), perm.unsqueeze(0)] = cov
        tilde_cov = tilde_cov.reshape(c, d + 1, c, d + 1)
        tilde = _features_with_bias(phi)
        if diagonal:
            diag_blocks = torch.diagonal(tilde_cov, dim1=0, dim2=2).permute(2, 0, 1)  # [C, D+1, D+1]
            outs = [torch.einsum("nd,cde,ne->nc", t, diag_blocks, t) for t in tilde.split(_CHUNK)]
            return torch.cat(outs)
        flat = tilde_cov.permute(1, 0, 2, 3).reshape(d + 1, c * c * (d + 1))
        outs = []
        for t in tilde.split(_CHUNK):
            m = (t @ flat).reshape(-1, c, c, d + 1)
            outs.append(torch.einsum("ncke,ne->nck", m, t))
        return torch.cat(outs)

    def covariance(self, delta: float) -> Tensor:
        """Σ = (H + δI)⁻¹ [P, P] in laplace-torch order (dense; for full and for tests)."""
        inv = 1.0 / (self.eigenvalues + self.prior_vector(delta))
        if self.structure == "diag":
            return torch.diag(inv)
        if self.structure == "full":
            v = self.vectors
            return (v * inv) @ v.T  # type: ignore[operator]
        (q_g, q_a) = self.vectors  # type: ignore[misc]
        c, d = self.n_classes, self.n_features
        q = torch.kron(q_g, q_a)
        weight = (q * inv[: c * d]) @ q.T
        bias = (q_g * inv[c * d :]) @ q_g.T
        return torch.block_diag(weight, bias)

    def sample_deviations(self, noise: Tensor, delta: float) -> Tensor:
        """θ_s − θ_MAP [S, P] = Σ^{1/2} z_s for standard normal `noise` z [S, P].

        full: V diag((e + δ)^{-1/2}) z; diag: z / sqrt(e + δ); kron (row-major vec):
        Q_G (Z ⊙ (g aᵀ + δ)^{-1/2}) Q_Aᵀ for the weights, Q_G ((g + δ)^{-1/2} ⊙ z_b) for the bias.
        """
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
