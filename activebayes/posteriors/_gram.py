"""The exact GGN of a whole network in its dual (Gram) form, for a few labelled items (hessian="full"
with subset="all"; laplace-torch's `FullLaplace` over every weight, computed without a P x P matrix).

Glossary as in `_kfac`: N items, C outputs, K vectors per item (`_kfac.hessian_square_root`,
Λ_n = Σ_k v_nk v_nkᵀ; K = C), L parameter tensors, P parameters, φ = 1/σ² (gaussian) or 1.

The GGN is H = Σ_n J_nᵀ Λ_n J_n = Uᵀ U with U [N·K, P], row u_nk = J_nᵀ v_nk (one backward pass of
v_k gives every u_nk, as for KFAC). Its rank is at most N·K, far below P when labels are few, and
the dual form works with the N·K x N·K Gram matrices of U's blocks, G_l = U_l U_lᵀ [NK, NK]:
    log det(φH + D) − log det D = log det(I + φ Σ_l G_l / δ_l)          (Sylvester),
so the evidence log q(D | δ, σ) = log p(D | θ*) − ½ (log det(I + φ Σ_l G_l/δ_l) + Σ_l δ_l ‖θ*_l‖²),
D = diag δ (one δ_l per tensor); with A = φ⁻¹ I + Σ_l G_l/δ_l, Σ = (φH + D)⁻¹ and Woodbury,
    J* Σ J*ᵀ = Σ_l J*_l J*_lᵀ / δ_l − B A⁻¹ Bᵀ,   B = Σ_l J*_l U_lᵀ / δ_l   [C, NK] per test item,
and exact posterior deviations come from Matheron's rule: with z₁ ~ N(0, D⁻¹) [P], z₂ ~ N(0, I) [NK],
    Δ = z₁ − D⁻¹ Uᵀ A⁻¹ (U z₁ + φ^{-1/2} z₂)  ~  N(0, (φH + D)⁻¹).
Jacobian inner products never form J for a layer with one row per item (a Linear: J_nk = g_nk x_nᵀ,
so ⟨J_a, J_b⟩ = (g_a·g_b)(x_a·x_b)); a Conv2d's per-item Jacobian Σ_t g_t x_tᵀ [O, D] is formed.
Cost: O((NK)² Σ_l O_l) for the Gram matrices, (NK)³/3 for each evidence and each fit's Cholesky,
so it is refused above MAX_GRAM_ROWS rows (use hessian="kron" there).

Why it matters at few labels: KFAC's B ⊗ A has rank(B)·rank(A) nonzero eigenvalues (up to 128 x 200
for a 784-128 layer on 200 items) where the GGN has at most N·K, so its Occam factor ½ log det
counts directions the data never touched; the exact one does not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from activebayes.errors import ConfigError
from activebayes.posteriors._glm import NetworkGaussian, _unit_vectors
from activebayes.posteriors._kfac import (
    NetworkCurvature,
    _nll_sum,
    as_outputs,
    backpropagate,
    curvature_layers,
    fit_curvature,
    hessian_square_root,
    item_chunk,
    parameter_tensors,
)

MAX_GRAM_ROWS = 6000  # N·K above this: the dual form's matrices and Cholesky no longer pay; use kron
_ELEMENTS = 2**24  # test items per chunk: C·M·N·K floats of cross products at most
Features = tuple[Tensor, Tensor | None]  # per tensor: (g [K, M, O], x [M, D]) for J = g xᵀ, or (J [K, M, P_l], None)


def tensor_features(layers: list[nn.Module], stats: list[tuple[Tensor, Tensor]]) -> list[Features]:
    """Per parameter tensor, the Jacobian rows of M items and K vectors, from `_kfac.backpropagate`'s
    per-layer (input rows [M, T, D], output gradients [K, M, T, O]), in float64."""
    out: list[Features] = []
    for layer, (rows, g) in zip(layers, stats):
        rows, g = rows.to(torch.float64), g.to(torch.float64)
        if rows.shape[1] == 1:
            out.append((g[:, :, 0], rows[:, 0]))
        else:
            jac = torch.einsum("kmto,mti->kmoi", g, rows)
            out.append((jac.reshape(jac.shape[0], jac.shape[1], -1), None))
        if layer.bias is not None:
            out.append((g.sum(2), None))
    return out


def cross(a: Features, b: Features) -> Tensor:
    """⟨J_a,km, J_b,ln⟩ for every pair: [K_a·M_a, K_b·M_b]."""
    (ga, xa), (gb, xb) = a, b
    prod = torch.einsum("kmo,lno->kmln", ga, gb)
    if xa is not None:
        prod = prod * (xa @ xb.T)[None, :, None, :]  # type: ignore[union-attr]
    return prod.reshape(ga.shape[0] * ga.shape[1], gb.shape[0] * gb.shape[1])


def self_products(a: Features) -> Tensor:
    """⟨J_km, J_lm⟩ within each item m: [M, K, K]."""
    g, x = a
    prod = torch.einsum("kmo,lmo->mkl", g, g)
    return prod if x is None else prod * x.square().sum(1)[:, None, None]


def apply_rows(a: Features, z: Tensor) -> Tensor:
    """U_l z for S deviations z [S, P_l] of this tensor: [S, K·M]."""
    g, x = a
    s, (k, m, o) = z.shape[0], g.shape
    if x is None:
        return torch.einsum("kmp,sp->skm", g, z).reshape(s, k * m)
    return torch.einsum("kmo,smo->skm", g, torch.einsum("md,sod->smo", x, z.reshape(s, o, -1))).reshape(s, k * m)


def apply_rows_transposed(a: Features, c: Tensor) -> Tensor:
    """U_lᵀ c for S coefficient vectors c [S, K·M]: [S, P_l]."""
    g, x = a
    s, (k, m, o) = c.shape[0], g.shape
    c = c.reshape(s, k, m)
    if x is None:
        return torch.einsum("skm,kmp->sp", c, g)
    return torch.einsum("smo,md->sod", torch.einsum("skm,kmo->smo", c, g), x).reshape(s, -1)


@dataclass(frozen=True)
class GramCurvature(NetworkCurvature):
    """The exact GGN in dual form. `blocks` are the G_l [NK, NK] (float64), `features` U's blocks
    (`tensor_features` of the training items); the other fields are `NetworkCurvature`'s."""

    features: tuple[Features, ...] = ()

    def combined(self, deltas: Tensor, factor: float | Tensor = 1.0) -> Tensor:
        """φ Σ_l G_l / δ_l [NK, NK]."""
        return factor * sum(block / delta for block, delta in zip(self.blocks, deltas))  # type: ignore[return-value]

    def eigenvalues(self, factor: float | Tensor = 1.0) -> Tensor:
        """All P eigenvalues of φH: those of φ Σ_l G_l (= φ U Uᵀ), then zeros."""
        values = torch.linalg.eigvalsh(self.combined(torch.ones(len(self.blocks), dtype=torch.float64, device=self.loss.device), factor))
        return torch.cat([values.clamp_min(0.0), values.new_zeros(self.n_params - values.shape[0])])

    def log_det_posterior_precision(self, deltas: Tensor, factor: float | Tensor = 1.0) -> Tensor:
        """log det(φH + diag δ) = log det(I + φ Σ_l G_l/δ_l) + Σ_l P_l log δ_l."""
        eye = torch.eye(self.blocks[0].shape[0], dtype=torch.float64, device=deltas.device)
        chol = torch.linalg.cholesky(eye + self.combined(deltas, factor))
        sizes = torch.tensor(self.sizes, dtype=torch.float64, device=deltas.device)
        return 2 * chol.diagonal().log().sum() + (sizes * deltas.log()).sum()

    def to(self, device: torch.device | str) -> GramCurvature:
        def move(f: Features) -> Features:
            return f[0].to(device), None if f[1] is None else f[1].to(device)

        return GramCurvature("full", tuple(b.to(device) for b in self.blocks), tuple(m.to(device) for m in self.mean), self.loss.to(device),
                             self.n_data, self.n_outputs, self.likelihood, tuple(move(f) for f in self.features))  # fmt: skip


def jacobian_rows(model: nn.Module, layers: list[nn.Module], x: Tensor, vectors_of, k: int) -> tuple[Tensor, tuple[Features, ...]]:
    """(outputs f [N, C], per tensor the rows v_kᵀ J_n of `tensor_features` for all N items) from
    `_kfac.backpropagate` in chunks of `item_chunk` items; `vectors_of(f)` gives the K = `k` vectors."""
    chunk = item_chunk(model, layers, x, k)
    outputs, parts = [], []
    for start in range(0, x.shape[0], chunk):
        f, stats = backpropagate(model, layers, x[start : start + chunk], vectors_of)
        outputs.append(f)
        parts.append(tensor_features(layers, stats))
    features = tuple((torch.cat([p[i][0] for p in parts], 1), None if parts[0][i][1] is None else torch.cat([p[i][1] for p in parts]))  # type: ignore[misc]
                     for i in range(len(parts[0])))  # fmt: skip
    return torch.cat(outputs), features


@torch.no_grad()
def fit_gram(model: nn.Module, x: Tensor, y: Tensor, likelihood: str) -> GramCurvature:
    """The exact GGN of `model` (eval mode, as it is) on x [N, ...], y [N] in dual form (module docstring)."""
    layers = curvature_layers(model)
    probe = as_outputs(model(x[:1]))
    k = hessian_square_root(likelihood, probe).shape[0]
    if x.shape[0] * k > MAX_GRAM_ROWS:
        raise ConfigError(f"hessian: 'full' with subset='all' works with N·K x N·K matrices, and N·K = {x.shape[0] * k} is above "
                          f"{MAX_GRAM_ROWS}; use hessian='kron'")
    f, features = jacobian_rows(model, layers, x, lambda out: hessian_square_root(likelihood, out), k)
    loss = _nll_sum(likelihood, f, y)
    blocks = tuple(cross(f, f) for f in features)
    mean = tuple(p.detach().reshape(-1).to(torch.float64) for p in parameter_tensors(layers))
    return GramCurvature("full", blocks, mean, loss, x.shape[0], probe.shape[1], likelihood, features)


def fit_network_curvature(model: nn.Module, x: Tensor, y: Tensor, structure: str, likelihood: str) -> NetworkCurvature:
    """The whole network's GGN: "full" in dual form (`fit_gram`), "kron" or "diag" by `_kfac`."""
    return fit_gram(model, x, y, likelihood) if structure == "full" else fit_curvature(model, x, y, structure, likelihood)


@dataclass
class GramGaussian(NetworkGaussian):
    """N(θ*, (φH + diag δ)⁻¹) with H exact, through the dual form (module docstring); the interface
    of `_glm.NetworkGaussian` (its `sample_outputs` applies the deviations)."""

    def __post_init__(self) -> None:
        curvature: GramCurvature = self.curvature  # type: ignore[assignment]
        rows = curvature.blocks[0].shape[0]
        eye = torch.eye(rows, dtype=torch.float64, device=self.deltas.device)
        self._chol = torch.linalg.cholesky(eye / self.factor + curvature.combined(self.deltas))  # A = φ⁻¹ I + Σ_l G_l/δ_l

    @property
    def noise_size(self) -> int:
        """Standard normal draws per sample: P for z₁, N·K for z₂."""
        return self.curvature.n_params + self.curvature.blocks[0].shape[0]

    def to(self, device: torch.device | str) -> GramGaussian:
        return GramGaussian(self.model.to(device), self.layers, self.curvature.to(device), self.deltas.to(device), self.factor)

    def functional_variance(self, x: Tensor, *, diagonal: bool = False) -> tuple[Tensor, Tensor]:
        """(f(x; θ*) [N, C], f_var [N, C, C], or its diagonal [N, C] when `diagonal`)."""
        curvature: GramCurvature = self.curvature  # type: ignore[assignment]
        c = curvature.n_outputs
        means, variances = [], []
        rows = curvature.blocks[0].shape[0]
        for xb in x.split(max(1, min(item_chunk(self.model, self.layers, x, c), _ELEMENTS // (c * rows)))):
            f, stats = backpropagate(self.model, self.layers, xb, _unit_vectors)
            mine = tensor_features(self.layers, stats)
            prior = sum(self_products(a) / d for a, d in zip(mine, self.deltas))  # [M, C, C]
            b = sum(cross(a, t) / d for a, t, d in zip(mine, curvature.features, self.deltas))  # [C·M, NK]
            w = torch.linalg.solve_triangular(self._chol, b.T, upper=False).reshape(-1, c, xb.shape[0])  # type: ignore[union-attr]
            if diagonal:
                var = prior.diagonal(dim1=1, dim2=2) - w.square().sum(0).T  # type: ignore[union-attr]
            else:
                var = prior - torch.einsum("jkm,jlm->mkl", w, w)
            means.append(f)
            variances.append(var)
        return torch.cat(means), torch.cat(variances)

    def deviations(self, noise: Tensor) -> list[Tensor]:
        """Δ_s ~ N(0, Σ) per parameter tensor, shaped like it with a leading S, from standard normal
        noise [S, P + N·K] (z₁ scaled by δ^{-1/2}, then z₂; Matheron's rule, module docstring)."""
        curvature: GramCurvature = self.curvature  # type: ignore[assignment]
        p = curvature.n_params
        z1 = [z / d.sqrt() for z, d in zip(noise[:, :p].split(curvature.sizes, dim=1), self.deltas)]
        r = sum(apply_rows(a, z) for a, z in zip(curvature.features, z1)) + noise[:, p:] / math.sqrt(self.factor)
        coef = torch.cholesky_solve(r.T, self._chol).T  # type: ignore[union-attr]  # A⁻¹ r, [S, NK]
        params = parameter_tensors(self.layers)
        return [(z - apply_rows_transposed(a, coef) / d).reshape(z.shape[0], *q.shape)
                for z, a, d, q in zip(z1, curvature.features, self.deltas, params)]  # fmt: skip


def network_gaussian(model: nn.Module, layers: list[nn.Module], curvature: NetworkCurvature, deltas: Tensor, factor: float) -> NetworkGaussian:
    """The posterior over every tensor for this curvature: GramGaussian for "full", else NetworkGaussian."""
    kind = GramGaussian if isinstance(curvature, GramCurvature) else NetworkGaussian
    return kind(model, layers, curvature, deltas, factor)


__all__ = ["MAX_GRAM_ROWS", "GramCurvature", "GramGaussian", "fit_gram", "fit_network_curvature", "jacobian_rows", "network_gaussian"]
