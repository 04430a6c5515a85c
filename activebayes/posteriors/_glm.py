"""The linearised (GLM) predictive of a whole-network Laplace posterior (Immer, Korzepa & Bauer 2021;
laplace-torch's pred_type="glm").

Around θ*, the network is replaced by its first-order expansion in the weights,
    f_lin(x; θ) = f(x; θ*) + J(x)(θ − θ*),   J(x) = ∂f(x; θ)/∂θ |θ* [C, P],
so under the posterior θ ~ N(θ*, Σ), Σ = (φH + diag δ)⁻¹ (`_kfac`), the outputs are Gaussian:
    f(x) ~ N(f(x; θ*), J(x) Σ J(x)ᵀ)   [C], [C, C].

Functional variance, per parameter tensor (Σ is block diagonal over tensors), without forming J:
one backward pass per output k gives, at layer l, g_nkt [O] (∂f_nk/∂s_nt) and the input rows x_nt
[D], so the item's weight Jacobian row is J_nk = Σ_t g_nkt x_ntᵀ [O, D].
    kron:  Σ = (Q_G ⊗ Q_A) diag(1/(φ g_i a_j + δ)) (Q_G ⊗ Q_A)ᵀ (+ 1/δ on A's null space), so with
           J̃_nk = Q_Gᵀ J_nk Q_A [O, r]:
               f_var_kk' = Σ_ij J̃_nk,ij J̃_nk',ij / (φ g_i a_j + δ) + (⟨J_nk, J_nk'⟩ − ⟨J̃_nk, J̃_nk'⟩) / δ;
           for T = 1, J̃_nk = u_nk w_nᵀ with u = Q_Gᵀ g, w = Q_Aᵀ x, which needs no [O, D] per item.
    diag:  f_var_kk' = Σ_p J_nk,p J_nk',p / (φ h_p + δ).
    bias blocks: J_nk = Σ_t g_nkt.

Samples for acquisition (`sample_outputs`): S deviations Δ_s = θ_s − θ* ~ N(0, Σ) are drawn ONCE
from standard normal noise z_s [P] (Δ_s = Σ^{1/2} z_s per block; kron: Q_G ((Q_G-rotated noise)
⊙ (φ g aᵀ + δ)^{-1/2}) Q_Aᵀ, diag: z / sqrt(φ h + δ)), and every candidate's sample s is
f_lin(x; θ* + Δ_s) = f(x; θ*) + J(x) Δ_s, from the same backward passes as the variance (no loop
over s or items). One Δ_s serves every candidate: the samples are jointly consistent across a pool (the
linearised network's function samples) and do not depend on the batching.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from activebayes.posteriors._kfac import (
    KronBlock,
    NetworkCurvature,
    backpropagate,
    item_chunk,
    parameter_tensors,
)


@dataclass
class NetworkGaussian:
    """N(θ*, (φH + diag δ)⁻¹) over the parameter tensors of `layers` in `model` (eval mode).

    layers: `_kfac.curvature_layers(model)`, taken while the parameters still required grad;
    curvature: the `_kfac.NetworkCurvature` at θ*; deltas: δ [L] (float64); factor: φ (1/σ² for
    the gaussian likelihood, 1 for the categorical).
    """

    model: nn.Module
    layers: list[nn.Module]
    curvature: NetworkCurvature
    deltas: Tensor
    factor: float = 1.0

    @property
    def noise_size(self) -> int:
        """Standard normal draws per sample that `deviations` takes: P."""
        return self.curvature.n_params

    def to(self, device: torch.device | str) -> NetworkGaussian:
        """The same Gaussian with the network and every tensor on `device` (the network moves in place)."""
        return NetworkGaussian(self.model.to(device), self.layers, self.curvature.to(device), self.deltas.to(device), self.factor)

    # --------------------------------------------------------------------- variance
    def functional_variance(self, x: Tensor, *, diagonal: bool = False) -> tuple[Tensor, Tensor]:
        """(f(x; θ*) [N, C], f_var [N, C, C], or its diagonal [N, C] when `diagonal`)."""
        c = self.curvature.n_outputs
        chunk = item_chunk(self.model, self.layers, x, c)
        means, variances = [], []
        for xb in x.split(chunk):
            f, stats = backpropagate(self.model, self.layers, xb, _unit_vectors)
            var = f.new_zeros((f.shape[0], c) if diagonal else (f.shape[0], c, c), dtype=torch.float64)
            blocks = iter(zip(self.curvature.blocks, self.deltas))
            for layer, (rows, g) in zip(self.layers, stats):  # contracted in the network's dtype, summed in float64
                var = var + _weight_variance(_cast(next(blocks), rows.dtype), rows, g, self.factor, diagonal).to(torch.float64)
                if layer.bias is not None:
                    var = var + _bias_variance(_cast(next(blocks), rows.dtype), g.sum(2), self.factor, diagonal).to(torch.float64)
            means.append(f)
            variances.append(var)
        return torch.cat(means), torch.cat(variances)

    # ---------------------------------------------------------------------- samples
    def deviations(self, noise: Tensor) -> list[Tensor]:
        """Δ_s = Σ^{1/2} z_s per parameter tensor, shaped like it with a leading S, from standard
        normal z [S, P] (float64, in `model.parameters()` order)."""
        out = []
        params = parameter_tensors(self.layers)
        for (block, delta), z, p in zip(zip(self.curvature.blocks, self.deltas), noise.split(self.curvature.sizes, dim=1), params):
            s = z.shape[0]
            if not isinstance(block, KronBlock):
                out.append((z / (self.factor * block + delta).sqrt()).reshape(s, *p.shape))
                continue
            o = block.g.shape[0]
            rotated = block.q_g.T @ z.reshape(s, o, block.n_in)  # [S, O, D]: Q_Gᵀ Z, Z standard normal
            scale = (self.factor * torch.outer(block.g, block.a) + delta).rsqrt()  # [O, r]
            if block.q_a is None:  # bias: D = 1
                dev = block.q_g @ (rotated * scale)
            else:
                in_basis = rotated @ block.q_a  # [S, O, r]
                dev = (in_basis * scale) @ block.q_a.T
                if block.a.shape[0] < block.n_in:  # A's null space: variance 1/δ
                    dev = dev + (rotated - in_basis @ block.q_a.T) / delta.sqrt()
                dev = block.q_g @ dev
            out.append(dev.reshape(s, *p.shape))
        return out

    def sample_outputs(self, x: Tensor, deviations: list[Tensor]) -> Tensor:
        """f(x; θ*) + J(x) Δ_s for each s: [S, N, C], in chunks of items.

        One backward pass per output k gives each layer's g_k [M, T, O] and rows x [M, T, D]; then
        J_k Δ_s = Σ_t g_ktᵀ ΔW_s x_t (+ Σ_t g_ktᵀ Δb_s): for T = 1 as g_kᵀ (ΔW_s x), else through the
        per-item Jacobian Σ_t g_kt x_tᵀ [O, D], so the cost grows with S only by S·O·D per item.
        """
        c = self.curvature.n_outputs
        chunk = item_chunk(self.model, self.layers, x, c)
        outs = []
        for xb in x.split(chunk):
            f, stats = backpropagate(self.model, self.layers, xb, _unit_vectors)
            out = f.unsqueeze(0).expand(deviations[0].shape[0], -1, -1).clone()  # [S, M, C]
            devs = iter(deviations)
            for layer, (rows, g) in zip(self.layers, stats):
                weight = next(devs).to(rows.dtype).reshape(-1, g.shape[-1], rows.shape[-1])  # [S, O, D]
                if rows.shape[1] == 1:
                    out += torch.einsum("kmo,smo->smk", g[:, :, 0], torch.einsum("md,sod->smo", rows[:, 0], weight))
                else:
                    out += torch.einsum("kmoi,soi->smk", torch.einsum("kmto,mti->kmoi", g, rows), weight)
                if layer.bias is not None:
                    out += torch.einsum("kmo,so->smk", g.sum(2), next(devs).to(rows.dtype))
            outs.append(out)
        return torch.cat(outs, dim=1)


def _unit_vectors(out: Tensor) -> Tensor:
    """e_1..e_C as [C, M, C]: one backward pass per output."""
    c = out.shape[1]
    return torch.eye(c, dtype=out.dtype, device=out.device).unsqueeze(1).expand(c, out.shape[0], c)


def _cast(entry: tuple[KronBlock | Tensor, Tensor], dtype: torch.dtype) -> tuple[KronBlock | Tensor, Tensor]:
    """A (block, δ) pair in `dtype`."""
    block, delta = entry
    if isinstance(block, KronBlock):
        block = KronBlock(block.g.to(dtype), block.q_g.to(dtype), block.a.to(dtype), None if block.q_a is None else block.q_a.to(dtype), block.n_in)
    else:
        block = block.to(dtype)
    return block, delta.to(dtype)


def _contract(a: Tensor, b: Tensor, weights: Tensor, spec: str, diagonal: bool) -> Tensor:
    """Σ over the block's axes of a_k b_k' weights: [M, C, C], or [M, C] with k = k'."""
    out = "mk" if diagonal else "mkl"
    second = spec.replace("k", "k" if diagonal else "l", 1)
    return torch.einsum(f"{spec},{second},{_weight_axes(spec)}->{out}", a, b, weights)


def _weight_axes(spec: str) -> str:
    return spec[2:]  # the block's own axes after "km"


def _weight_variance(entry: tuple[KronBlock | Tensor, Tensor], rows: Tensor, g: Tensor, factor: float, diagonal: bool) -> Tensor:
    """The weight tensor's share of f_var (module docstring); rows [M, T, D], g [C, M, T, O]."""
    block, delta = entry
    t = rows.shape[1]
    if not isinstance(block, KronBlock):
        inv = (factor * block + delta).reciprocal().reshape(g.shape[-1], rows.shape[-1])  # [O, D]
        if t == 1:
            s = rows[:, 0].square() @ inv.T  # [M, O]
            return _pairs(g[:, :, 0], s, diagonal)
        jac = torch.einsum("kmto,mti->kmoi", g, rows)
        return _contract(jac, jac, inv, "kmoi", diagonal)
    inv = (factor * torch.outer(block.g, block.a) + delta).reciprocal()  # [O, r]
    q_a = block.q_a
    thin = block.a.shape[0] < block.n_in
    if t == 1:
        x, u = rows[:, 0], g[:, :, 0] @ block.q_g  # [M, D], [C, M, O]
        w2 = (x @ q_a).square()  # [M, r]
        s = w2 @ inv.T  # [M, O]
        if thin:
            s = s + ((x.square().sum(1) - w2.sum(1)) / delta).unsqueeze(1)
        return _pairs(u, s, diagonal)
    jac = torch.einsum("kmto,mti->kmoi", g @ block.q_g, rows)  # Q_Gᵀ J_k [C, M, O, D]
    rot = jac @ q_a  # J̃ [C, M, O, r]
    var = _contract(rot, rot, inv, "kmoj", diagonal)
    if thin:
        ones = torch.ones(jac.shape[2:], dtype=jac.dtype, device=jac.device)
        var = var + (_contract(jac, jac, ones, "kmoi", diagonal) - _contract(rot, rot, torch.ones_like(inv), "kmoj", diagonal)) / delta
    return var


def _bias_variance(entry: tuple[KronBlock | Tensor, Tensor], jac: Tensor, factor: float, diagonal: bool) -> Tensor:
    """The bias tensor's share of f_var; jac [C, M, O] = Σ_t g."""
    block, delta = entry
    if not isinstance(block, KronBlock):
        return _pairs(jac, (factor * block + delta).reciprocal().expand(jac.shape[1], -1), diagonal)
    return _pairs(jac @ block.q_g, (factor * block.g + delta).reciprocal().expand(jac.shape[1], -1), diagonal)


def _pairs(u: Tensor, s: Tensor, diagonal: bool) -> Tensor:
    """Σ_o u_kmo u_k'mo s_mo: [M, C, C] (or [M, C])."""
    if diagonal:
        return torch.einsum("kmo,mo->mk", u.square(), s)
    return torch.einsum("kmo,lmo,mo->mkl", u, u, s)


def standard_noise(count: int, n_params: int, seed: int) -> Tensor:
    """z [S, P] standard normal, float64, from torch.Generator().manual_seed(seed) on the CPU."""
    return torch.randn(count, n_params, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


__all__ = ["NetworkGaussian", "standard_noise"]
