"""The two halves of a consistent-mask MC dropout pass over an `nn.Sequential` (see `mc_dropout`).

    prefix  h = g(x)                  the layers before the first dropout, once per item
    tail    f_s(h) = f(h; W, m_s)     the rest, for the S mask sets m_1..m_S at once

`DropoutMasks` draws the masks (one Bernoulli tensor per dropout layer, from a generator seeded
from (seed, S, layer)) and caches the weights they fold into; `run_prefix` runs g as fast as the
device allows; `stochastic_tail` runs the S tails without drawing anything per item.

CPU fast paths (the same function; only the float rounding differs):
  * the prefix runs its 2-D convolutions channels-last (oneDNN's fastest layout), rectifies the
    fresh output of a conv, linear or pooling layer in place (no second [N, ...] tensor) and
    max-pools before such a ReLU (they commute; `run_prefix`);
  * a mask whose kept entries share one value c (inverted dropout: c = 1/(1 − p)) on the input of
    the first Linear folds by its complement: with D_s the features sample s drops,
        (h ⊙ m_s) Wᵀ + b = (h (cW)ᵀ + b) − h[:, D_s] (cW[:, D_s])ᵀ,
    one shared [N, D] @ [D, out] product and S products over the |D_s| ≈ pD dropped features,
    (1 + pS)·D multiply-adds per output instead of S·D (Gal et al.'s CNN, p = 0.25, S = 20: 6·D
    against 20·D; `_complement_fold`). The dropped columns are gathered in chunks of items that
    fit the cache.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

_MASKED = (nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d)
_ELEMENTWISE = (
    nn.ReLU, nn.ReLU6, nn.LeakyReLU, nn.ELU, nn.SELU, nn.CELU, nn.GELU, nn.SiLU, nn.Mish,
    nn.Tanh, nn.Sigmoid, nn.Softplus, nn.Hardtanh, nn.Hardswish, nn.Hardsigmoid, nn.Identity,
)  # fmt: skip


def _mix_seed(seed: int, n_samples: int, layer: int) -> int:
    """A 63-bit seed for the masks of one dropout layer (splitmix-style odd multipliers)."""
    mixed = seed * 0x9E3779B97F4A7C15 + n_samples * 0xBF58476D1CE4E5B9 + (layer + 1) * 0x94D049BB133111EB
    return mixed % (2**63 - 1)


class DropoutMasks:
    """The S masks of every dropout layer for one predict call.

    `mask(j, layer, feature_shape)` gives m [S, *mask_shape] for the j-th dropout applied in a
    forward pass: mask_shape = feature_shape for `nn.Dropout`, (channels, 1, ...) for the
    channel-wise Dropout1d/2d/3d. Entries are 0 or 1/(1 − p). Drawn on the CPU from a generator
    seeded from (seed, S, j), so they are the same on every batch, device and call.
    """

    def __init__(self, seed: int, n_samples: int, *, device: torch.device, dtype: torch.dtype) -> None:
        self.seed, self.n_samples, self.device, self.dtype = seed, n_samples, device, dtype
        self._cache: dict[tuple[int, tuple[int, ...]], Tensor] = {}
        # weights with the masks folded in, keyed by (tail position, features): see stochastic_tail
        # (a complement fold, or None where it does not apply and the dense fold is keyed (..., "dense"))
        self.folded: dict[tuple, tuple | None] = {}

    def mask(self, j: int, layer: nn.Module, feature_shape: Sequence[int]) -> Tensor:
        feature_shape = tuple(feature_shape)
        key = (j, feature_shape)
        if key not in self._cache:
            if isinstance(layer, nn.Dropout):
                shape = feature_shape
            else:  # channel-wise: one draw per channel, broadcast over the spatial axes
                shape = (feature_shape[0],) + (1,) * (len(feature_shape) - 1)
            keep = 1.0 - float(layer.p)
            generator = torch.Generator().manual_seed(_mix_seed(self.seed, self.n_samples, j))
            if keep <= 0.0:
                m = torch.zeros((self.n_samples, *shape))
            else:
                m = torch.bernoulli(torch.full((self.n_samples, *shape), keep), generator=generator) / keep
            self._cache[key] = m.to(device=self.device, dtype=self.dtype)
        return self._cache[key]


def flatten_sequential(model: nn.Module) -> list[nn.Module] | None:
    """The leaf layers of an `nn.Sequential` (nested Sequentials flattened), or None for other models."""
    if not isinstance(model, nn.Sequential):
        return None
    layers: list[nn.Module] = []
    for child in model:
        inner = flatten_sequential(child)
        layers.extend(inner if inner is not None else [child])
    return layers


def _is_full_flatten(layer: nn.Module, n_feature_dims: int) -> bool:
    if not isinstance(layer, nn.Flatten) or layer.start_dim != 1:
        return False
    return layer.end_dim in (-1, n_feature_dims)


#: Positively homogeneous elementwise layers: f(m·x) = m·f(x) for every m ≥ 0.
_HOMOGENEOUS = (nn.ReLU, nn.LeakyReLU, nn.Identity)
#: Pooling acts within a channel, so a per-channel factor m ≥ 0 passes through it.
_POOLS = (
    nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d, nn.AvgPool1d, nn.AvgPool2d, nn.AvgPool3d,
    nn.AdaptiveMaxPool1d, nn.AdaptiveMaxPool2d, nn.AdaptiveMaxPool3d,
    nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d, nn.AdaptiveAvgPool3d,
)  # fmt: skip
_CONVS = (nn.Conv1d, nn.Conv2d, nn.Conv3d)


def _is_channel_mask(mask: Tensor) -> bool:
    """True for m [S, C, 1, ...]: one factor per channel, constant over the spatial axes."""
    return mask.dim() >= 3 and all(size == 1 for size in mask.shape[2:])


def _commutes_with_mask(layer: nn.Module, mask: Tensor) -> bool:
    """True when layer(h ⊙ m) = layer(h) ⊙ m for the pending mask m (entries 0 or 1/(1 − p) ≥ 0).

    Then the layer runs once on the N shared items instead of on S·N masked copies: e.g. Kirsch
    et al.'s conv → Dropout2d → max-pool → ReLU → conv pools and rectifies N, not S·N, feature maps.
    """
    if isinstance(layer, _HOMOGENEOUS):
        return True
    return isinstance(layer, _POOLS) and _is_channel_mask(mask)


def _channel_mask_folds_into(layer: nn.Module, mask: Tensor) -> bool:
    """True for an ungrouped zero-padded conv whose input channels the pending channel mask scales."""
    return (
        isinstance(layer, _CONVS)
        and layer.groups == 1
        and layer.padding_mode == "zeros"
        and _is_channel_mask(mask)
        and mask.shape[1] == layer.in_channels
    )


#: Bytes of gathered dropped columns [n, S·K] the complement fold holds per chunk of n items:
#: about a core's L2 (measured on a 2 MiB-L2 EPYC: 64-128 items of Gal's CNN at S = 20 are fastest).
GATHER_BYTES = 8 << 20
#: The complement fold is used when its multiply-adds D + S·K are at most this fraction of S·D.
_COMPLEMENT_PAYS = 0.6
#: Layers whose output is a tensor of their own (never a view of their input).
_FRESH = (nn.Linear, *_CONVS, *_POOLS)


def run_prefix(layers: Sequence[nn.Module], x: Tensor) -> Tensor:
    """The deterministic prefix g(x) [N, *F]: the same function as running `layers` in turn.

    On the CPU, 4-D inputs go channels-last through the 2-D convolutions (their weights are
    converted per call: a few kB), a ReLU right after a conv, linear or pooling layer rectifies
    that layer's fresh output in place, and a max-pool right after such a ReLU runs first (they
    commute; the ReLU then touches the pooled tensor). Layers with hooks run as modules.
    """
    fast = x.device.type == "cpu"
    if fast and x.dim() == 4 and any(isinstance(layer, nn.Conv2d) for layer in layers):
        x = x.to(memory_format=torch.channels_last)  # not .contiguous(): one channel would keep NCHW strides
    h, fresh, i = x, False, 0
    while i < len(layers):
        layer = layers[i]
        i += 1
        plain = fast and not (layer._forward_hooks or layer._forward_pre_hooks)
        if plain and fresh and type(layer) is nn.ReLU:
            if i < len(layers) and _pools_before_relu(layers[i]):  # ReLU(max-pool(h)) = max-pool(ReLU(h))
                h = layers[i](h)  # pool first: the ReLU then rectifies the smaller tensor
                i += 1
            h = h.relu_()  # the previous layer's output is ours: no second tensor
            continue
        if plain and isinstance(layer, nn.Conv2d) and h.dim() == 4:
            h = layer._conv_forward(h, layer.weight.to(memory_format=torch.channels_last), layer.bias)
        else:
            h = layer(h)
        fresh = isinstance(layer, _FRESH) and isinstance(h, Tensor)
    return h


def _pools_before_relu(layer: nn.Module) -> bool:
    """True for a hook-free max-pool without indices: ReLU is monotone, so it commutes with it."""
    return (
        isinstance(layer, (nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d))
        and not layer.return_indices
        and not (layer._forward_hooks or layer._forward_pre_hooks)
    )


def _complement_fold(layer: nn.Linear, pending: Tensor) -> tuple[Tensor, Tensor | None, Tensor, Tensor] | None:
    """The complement form of the S masked copies of `layer` for the mask pending [S, D], or None.

    Returns (cWᵀ [D, out], b [out] or None, idx [S·K], dropped [S, K, out]) with K = max_s |D_s|:
    row k of sample s is cW[:, D_s[k]]ᵀ, padded with zero rows (index 0) past |D_s|, so that
        f_s(h) = h cWᵀ + b − h[:, idx_s] @ dropped[s].
    None (use the dense fold) unless every kept entry of the mask equals one c and the dropped
    features are few enough to pay (`_COMPLEMENT_PAYS`).
    """
    S, D = pending.shape
    kept = pending != 0
    values = pending[kept]
    if values.numel() == 0 or not bool((values == values[0]).all()):
        return None
    counts = (~kept).sum(1)  # |D_s|
    K = int(counts.max())
    if D + S * K > _COMPLEMENT_PAYS * S * D:
        return None
    scaled_t = (layer.weight * values[0]).t().contiguous()  # cWᵀ [D, out]
    order = torch.argsort(kept.to(torch.int8), dim=1, stable=True)[:, :K]  # each sample's dropped features first, ascending
    valid = torch.arange(K, device=pending.device) < counts[:, None]  # [S, K]
    idx = torch.where(valid, order, 0)
    dropped = scaled_t[idx] * valid[..., None].to(scaled_t.dtype)  # [S, K, out]
    return scaled_t, layer.bias, idx.reshape(-1), dropped


def _complement_matmul(h: Tensor, fold: tuple[Tensor, Tensor | None, Tensor, Tensor]) -> Tensor:
    """f_s(h) for h [N, D] and a `_complement_fold`: [S, N, out], the items in cache-sized chunks."""
    scaled_t, bias, idx, dropped = fold
    S, K, out = dropped.shape
    N = h.shape[0]
    n = max(1, GATHER_BYTES // max(S * K * h.element_size(), 1))
    parts = []
    for start in range(0, max(N, 1), n):  # one (empty) chunk when N = 0
        part = h[start : start + n]
        base = part @ scaled_t if bias is None else torch.addmm(bias, part, scaled_t)  # [n, out], shared by the S samples
        gathered = part.index_select(1, idx).view(part.shape[0], S, K).transpose(0, 1)  # [S, n, K]
        parts.append(torch.baddbmm(base, gathered, dropped, alpha=-1))  # base − h[:, D_s] (cW[:, D_s])ᵀ
    return parts[0] if len(parts) == 1 else torch.cat(parts, dim=1)


def stochastic_tail(layers: Sequence[nn.Module], h: Tensor, masks: DropoutMasks) -> Tensor:
    """Run the layers from the first dropout on, for all S mask sets at once.

    Args:
        layers: the tail of a flattened Sequential; dropouts are numbered from 0 in order.
        h: [N, *F] the output of the deterministic prefix, shared by every sample.
    Returns:
        [S, N, *out] the network output for each mask set.
    """
    S, N = masks.n_samples, h.shape[0]
    # the complement fold needs concrete masks (not under vmap) and pays on the CPU (measured there)
    sparse = isinstance(masks, DropoutMasks) and h.device.type == "cpu"
    per_sample = False  # h is [N, *F] while False, [S, N, *F] once the samples have split
    pending: Tensor | None = None  # a mask [S, *F or broadcastable] not yet applied to h
    j = 0
    for position, layer in enumerate(layers):
        features = h.shape[2:] if per_sample else h.shape[1:]
        if isinstance(layer, _MASKED):
            m = masks.mask(j, layer, features)
            j += 1
            pending = m if pending is None else pending * m
            continue
        if pending is not None:
            if not per_sample and _commutes_with_mask(layer, pending):
                h = layer(h)  # layer(h ⊙ m) = layer(h) ⊙ m: run it once on the shared items
                continue
            if _is_full_flatten(layer, len(features)):
                pending = pending.expand(S, *features).reshape(S, -1)  # [S, D]
                h = h.flatten(2) if per_sample else h.flatten(1)
                continue
            if isinstance(layer, nn.Linear) and len(features) == 1:
                out = layer.out_features
                key = (position, tuple(features))
                if not per_sample and sparse:
                    if key not in masks.folded:
                        masks.folded[key] = _complement_fold(layer, pending.expand(S, features[0]))
                    if masks.folded[key] is not None:
                        h = _complement_matmul(h, masks.folded[key])  # [S, N, out]
                        per_sample, pending = True, None
                        continue
                    key = (position, tuple(features), "dense")
                if key not in masks.folded:  # fold once per DropoutMasks, reuse on every batch
                    weight = layer.weight.unsqueeze(0) * pending.expand(S, features[0]).unsqueeze(1)  # [S, out, in]
                    if per_sample:
                        masks.folded[key] = (weight.transpose(1, 2), layer.bias)  # [S, in, out], [out]
                    else:
                        bias = None if layer.bias is None else layer.bias.repeat(S)  # [S·out]
                        masks.folded[key] = (weight.reshape(S * out, features[0]).t(), bias)  # [in, S·out]
                weight, bias = masks.folded[key]
                if not per_sample:  # one wide matmul: [N, in] @ [in, S·out]
                    h = h @ weight if bias is None else torch.addmm(bias, h, weight)
                    h = h.view(N, S, out).transpose(0, 1)  # [S, N, out]
                else:  # one batched matmul over S: [S, N, in] @ [S, in, out]
                    h = torch.bmm(h, weight) if bias is None else torch.baddbmm(bias, h, weight)
                per_sample, pending = True, None
                continue
            if not per_sample and _channel_mask_folds_into(layer, pending):
                key = (position, tuple(features))
                if key not in masks.folded:  # conv(h ⊙ m_s; W) = conv(h; W ⊙ m_s), m_s on the input channels
                    m = pending.reshape(S, 1, -1, *(1,) * (layer.weight.dim() - 2))  # [S, 1, in, 1, ...]
                    weight = (layer.weight.unsqueeze(0) * m).flatten(0, 1)  # [S·out, in, *kernel]
                    masks.folded[key] = (weight, None if layer.bias is None else layer.bias.repeat(S))
                weight, bias = masks.folded[key]
                out = layer._conv_forward(h, weight, bias)  # ONE conv with S·out output channels: [N, S·out, *sp]
                h = out.view(N, S, layer.out_channels, *out.shape[2:]).transpose(0, 1)  # [S, N, out, *sp]
                per_sample, pending = True, None
                continue
            h = h * pending.unsqueeze(1) if per_sample else h.unsqueeze(0) * pending.unsqueeze(1)  # [S, N, *F]
            per_sample, pending = True, None
        if not per_sample or isinstance(layer, (nn.Linear, *_ELEMENTWISE)):
            h = layer(h)  # elementwise layers and Linear act on the last axis whatever the leading ones
        else:
            out = layer(h.reshape(S * N, *h.shape[2:]))
            h = out.reshape(S, N, *out.shape[1:])
    if pending is not None:
        h = h * pending.unsqueeze(1) if per_sample else h.unsqueeze(0) * pending.unsqueeze(1)
    elif not per_sample:
        h = h.unsqueeze(0).expand(S, *h.shape)
    return h


