"""The layers of a BatchEnsemble (Wen, Tran & Ba, ICLR 2020) and of its rank-1 Bayesian variant
(Dusenberry et al., ICML 2020); the posterior that trains them is `activebayes.posteriors.batch_ensemble`.

Every nn.Linear and nn.Conv2d layer of the network (weight W [out, in] or [out, in, kh, kw])
becomes a BatchEnsemble layer: the shared W plus, per member m = 1..M, fast weights r_m [in],
s_m [out] and a bias b_m [out]. Member m's weight is the elementwise product

    W_m = W ∘ (s_m r_mᵀ)                        (conv: broadcast over the kernel's kh, kw)

and its output is computed without forming W_m, because scaling W's columns by r_m is scaling
the input's features and scaling its rows by s_m is scaling the output's:

    y_m = ((x ∘ r_m) Wᵀ) ∘ s_m + b_m            x [B, in] -> y_m [B, out]

All members run as ONE call on the batch tiled M times, member-major: X [M·B, in] is viewed as
[M, B, in], row block m is scaled by r_m, the shared layer runs once on all M·B rows, and block m
of the result is scaled by s_m and shifted by b_m. A network with L such layers stores

    Σ_l |W_l| + M · Σ_l (in_l + out_l + out_l)      parameters (the last term without biases)

instead of M · Σ_l (|W_l| + out_l): the members cost two vectors and a bias a layer.

Fast weights (the means μ in the Gaussian variant) start at random sign vectors, entries ±1 with
probability ½ each (`fast_init="random-sign"`, the default: Wen et al.'s initialisation for
diverse members), or at N(1, 0.5²) entries (`fast_init="normal"`, uncertainty-baselines'
`random_sign_init=-0.5`); the per-member biases start at the layer's own bias (none without one).
On the two moons, random signs give members that disagree off the data where N(1, 0.5²) starts
give nearly identical ones.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from activebayes.errors import ConfigError, ShapeError
from activebayes.posteriors.mfvi import gaussian_kl

FAST_INITS = ("random-sign", "normal")
LAYERS = (nn.Linear, nn.Conv2d)


# ----------------------------------------------------------------------------- pure functions
def softplus_inverse(sigma: float) -> float:
    """ρ with softplus(ρ) = σ: ρ = log(e^σ − 1) (σ > 0)."""
    return sigma + math.log(-math.expm1(-sigma))


def fast_weight_init(shape: tuple[int, ...], kind: str, generator: torch.Generator) -> Tensor:
    """Initial fast weights [*shape] (CPU, float32): N(1, 0.5²) entries ("normal") or ±1 with
    probability ½ each ("random-sign")."""
    if kind == "normal":
        return 1.0 + 0.5 * torch.randn(shape, generator=generator)
    return torch.randint(0, 2, shape, generator=generator).float() * 2 - 1


def tile(x: Tensor, k: int) -> Tensor:
    """x [N, ...] repeated k times, member-major: [k·N, ...], rows m·N..(m+1)·N−1 are x."""
    return x.repeat(k, *([1] * (x.dim() - 1)))


def member_broadcast(v: Tensor, ndim: int, feature_axis: int) -> Tensor:
    """Per-member factors v [K, F] (one per member) or [K, B, F] (one per member and row) shaped
    to broadcast against grouped activations [K, B, ...] of `ndim` dims with their F features at
    `feature_axis` (−1 for dense layers, 2 for convolutions [K, B, C, H, W])."""
    if v.dim() == 2:
        v = v.unsqueeze(1)
    shape = [1] * ndim
    shape[0], shape[1], shape[feature_axis % ndim] = v.shape[0], v.shape[1], v.shape[2]
    return v.reshape(shape)


def batch_ensemble_forward(layer: nn.Module, x: Tensor, r: Tensor, s: Tensor, bias: Tensor | None, feature_axis: int) -> Tensor:
    """((x ∘ r_k) Wᵀ) ∘ s_k + b_k for K member groups of rows, `layer` the shared bias-free map x -> x Wᵀ
    (or the convolution with W).

    x [K·B, ...] (group k = rows k·B..(k+1)·B−1), r [K, in] or [K, B, in], s and bias [K, out] or
    [K, B, out] (bias None: none) -> [K·B, ...out]."""
    k = r.shape[0]
    if x.shape[0] % k:
        raise ShapeError(f"x: a BatchEnsemble layer of {k} members expects a batch tiled {k} times, got {x.shape[0]} rows")
    grouped = x.reshape(k, x.shape[0] // k, *x.shape[1:])
    out = layer((grouped * member_broadcast(r, grouped.dim(), feature_axis)).flatten(0, 1))
    out = out.reshape(k, -1, *out.shape[1:])
    out = out * member_broadcast(s, out.dim(), feature_axis)
    if bias is not None:
        out = out + member_broadcast(bias, out.dim(), feature_axis)
    return out.flatten(0, 1)


def per_row_draw(mean: Tensor, rho: Tensor, rows: int) -> Tensor:
    """Reparameterised draws μ + softplus(ρ) ∘ ε, ε ~ N(0, I) from the global RNG, one per row:
    mean, rho [K, F] -> [K, rows, F]."""
    eps = torch.randn(mean.shape[0], rows, mean.shape[1], device=mean.device, dtype=mean.dtype)
    return mean.unsqueeze(1) + F.softplus(rho).unsqueeze(1) * eps


def effective_weight(weight: Tensor, r: Tensor, s: Tensor, groups: int = 1) -> Tensor:
    """Member weight W ∘ (s rᵀ): W [out, in] (or [out, in/groups, kh, kw]), r [in], s [out]; with
    `groups` > 1 output channel o sees the inputs of its group, r[g(o)·in/groups + j]."""
    out_features = weight.shape[0]
    r_rows = r.reshape(groups, -1).repeat_interleave(out_features // groups, dim=0)  # [out, in/groups]
    scale = s[:, None] * r_rows
    return weight * scale.reshape(*scale.shape, *([1] * (weight.dim() - 2)))


# ----------------------------------------------------------------------------- layers
class BatchEnsembleLayer(nn.Module):
    """A dense or 2-d convolution layer as M BatchEnsemble members (module docstring).

    Parameters: the shared `layer` (the original nn.Linear / nn.Conv2d, its bias removed; weight W),
    `r` [M, in], `s` [M, out], `bias` [M, out] (None when the layer had none); with
    rank1="gaussian" also `r_rho` [M, in] and `s_rho` [M, out] (σ = softplus(ρ); r, s are then
    the means μ). In train mode the Gaussian variant draws r, s per row; in eval mode it uses the
    means. The input is the batch tiled K times, K = r.shape[0] (M; `predict` substitutes K = S
    factors through `functional_call`).
    """

    def __init__(self, layer: nn.Linear | nn.Conv2d, n_members: int, *, rank1: str = "none", fast_init: str = "random-sign",
                 init_std: float = 0.05, generator: torch.Generator | None = None) -> None:  # fmt: skip
        super().__init__()
        generator = generator if generator is not None else torch.Generator().manual_seed(0)
        conv = isinstance(layer, nn.Conv2d)
        n_in, n_out = (layer.in_channels, layer.out_channels) if conv else (layer.in_features, layer.out_features)
        self.feature_axis = 2 if conv else -1
        self.groups = layer.groups if conv else 1
        weight = layer.weight
        old_bias = layer.bias.detach().clone() if layer.bias is not None else None
        layer.bias = None
        self.layer = layer
        like = {"device": weight.device, "dtype": weight.dtype}
        self.r = nn.Parameter(fast_weight_init((n_members, n_in), fast_init, generator).to(**like))
        self.s = nn.Parameter(fast_weight_init((n_members, n_out), fast_init, generator).to(**like))
        self.bias = nn.Parameter(old_bias.expand(n_members, n_out).clone()) if old_bias is not None else None
        if rank1 == "gaussian":
            rho = softplus_inverse(init_std)
            self.r_rho = nn.Parameter(torch.full((n_members, n_in), rho, **like))
            self.s_rho = nn.Parameter(torch.full((n_members, n_out), rho, **like))
        else:
            self.r_rho = self.s_rho = None

    @property
    def weight(self) -> Tensor:
        """The shared weight W."""
        return self.layer.weight

    @property
    def n_members(self) -> int:
        return self.r.shape[0]

    def fast_parameters(self) -> list[nn.Parameter]:
        """r, s (and their ρ in the Gaussian variant): the parameters without weight decay."""
        return [p for p in (self.r, self.s, self.r_rho, self.s_rho) if p is not None]

    def forward(self, x: Tensor) -> Tensor:
        r, s = self.r, self.s
        if self.training and self.r_rho is not None:
            rows = x.shape[0] // r.shape[0]
            r, s = per_row_draw(r, self.r_rho, rows), per_row_draw(s, self.s_rho, rows)
        return batch_ensemble_forward(self.layer, x, r, s, self.bias, self.feature_axis)

    def member_weight(self, m: int) -> Tensor:
        """Member m's effective weight W ∘ (s_m r_mᵀ) (the means in the Gaussian variant)."""
        return effective_weight(self.weight, self.r[m], self.s[m], self.groups)

    def kl(self, prior_std: float) -> Tensor:
        """KL(q ‖ N(1, prior_std²)) of this layer's r and s, all members (Gaussian variant)."""
        if self.r_rho is None:
            raise ConfigError("rank1: the KL divergence needs rank1='gaussian' (the fast weights are point estimates)")
        return (gaussian_kl(self.r, F.softplus(self.r_rho), prior_std, prior_mean=1.0)
                + gaussian_kl(self.s, F.softplus(self.s_rho), prior_std, prior_mean=1.0))


def to_batch_ensemble(net: nn.Module, n_members: int, **layer_options) -> nn.Module:
    """`net` with every nn.Linear and nn.Conv2d replaced (in place) by a BatchEnsembleLayer of
    `n_members` members (the root too); `layer_options` go to BatchEnsembleLayer."""
    if isinstance(net, LAYERS):
        return BatchEnsembleLayer(net, n_members, **layer_options)
    for name, module in list(net.named_modules()):
        if name and isinstance(module, LAYERS):
            parent, _, attr = name.rpartition(".")
            setattr(net.get_submodule(parent), attr, BatchEnsembleLayer(module, n_members, **layer_options))
    return net


class BatchEnsembleNetwork(nn.Module):
    """The converted network `net` with its M members run together.

    `members(x [N, ...])` -> [M, N, ...] (member outputs). `forward(x)`: in train mode the member
    outputs of the tiled batch, [M·N, ...]; in eval mode the ensemble's output [N, ...], log mean
    softmax (likelihood "categorical") or the mean (module docstring).
    """

    def __init__(self, net: nn.Module, n_members: int, likelihood: str) -> None:
        super().__init__()
        self.net, self.n_members, self.likelihood = net, n_members, likelihood

    def layers(self) -> list[BatchEnsembleLayer]:
        return [m for m in self.net.modules() if isinstance(m, BatchEnsembleLayer)]

    def members(self, x: Tensor) -> Tensor:
        out = self.net(tile(x, self.n_members))
        return out.reshape(self.n_members, x.shape[0], *out.shape[1:])

    def forward(self, x: Tensor) -> Tensor:
        if self.training:
            return self.net(tile(x, self.n_members))
        out = self.members(x)
        if self.likelihood == "categorical":
            return torch.logsumexp(torch.log_softmax(out, dim=-1), dim=0) - math.log(self.n_members)
        return out.mean(0)

    def kl(self, prior_std: float) -> Tensor:
        """KL(q ‖ p) of every layer's fast weights (Gaussian variant), a scalar."""
        return torch.stack([layer.kl(prior_std) for layer in self.layers()]).sum()
