"""MC dropout predictions of R fitted runs at once, each the numbers its own `MCDropout` gives
(up to the rounding of the batched kernels).

Run r predicts on its own inputs x_r [n, ...] (all R of one shape) with its own network θ_r and
its own masks, which depend on its seed s_r and S only:

    deterministic:   softmax(f(x_r; θ_r)) [n, C], dropout off (`predict_proba_deterministic`)
    independent:     f(x_r; θ_r, m_rs) [S, n, C], a mask per item, sample and layer, drawn in
                     `independent_passes`' order from a generator seeded from (s_r, S), afresh for
                     every call (so for every chunk of items the loop passes in)
    shared:          f(x_r; θ_r, m_rs) [S, n, C] with `DropoutMasks(s_r, S)`, one mask set per
                     sample for every item, through `stochastic_tail` (masks folded into weights)

The layers before the first dropout (the prefix) run once on [R, n, ...]; the tail runs on the
prefix's output, per sample s for independent masks (the R masks of sample s drawn, then one
pass), all S at once for shared ones (`stochastic_tail` under `vmap` over r, in item chunks that
keep [R, S, n, *F] under `mc_dropout.TAIL_BYTES`). On the CPU a tail with a convolution runs per
run instead (see `stacked_network`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import torch
from torch import Tensor, nn
from torch.func import functional_call, vmap

from activebayes.batched_runs.stacked_network import CONVS, StackedSequential
from activebayes.errors import ShapeError
from activebayes.posteriors.mc_dropout import TAIL_BYTES, DropoutMasks, _mix_seed, flatten_sequential, keep_mask_, stochastic_tail


def deterministic_probs(stacked: StackedSequential, x: Tensor) -> Tensor:
    """softmax(f(x_r; θ_r)) for x [R, n, ...] -> [R, n, C], every dropout off."""
    with torch.no_grad():
        return torch.softmax(stacked.run(x), dim=-1)


def independent_logits(stacked: StackedSequential, split: int, x: Tensor, seeds: Sequence[int], n_samples: int) -> Tensor:
    """Logits [R, S, n, C] with a fresh mask per item, sample and layer (module docstring): run r
    draws from `torch.Generator(device).manual_seed(_mix_seed(seeds[r], S, -2))`, sample by
    sample, each tail dropout layer in turn, m ~ Bernoulli(1 − p) of its input's shape (items ×
    features, or items × channels for the channel-wise layers; `keep_mask_`), and applies
    (h ⊙ m) / (1 − p)."""
    _check_runs(stacked, x, seeds)
    device, n = x.device, x.shape[1]
    generators = [torch.Generator(device=device).manual_seed(_mix_seed(int(seed), n_samples, -2) & 0x7FFFFFFFFFFFFFFF) for seed in seeds]
    with torch.no_grad():
        h = stacked.run(x, 0, split)  # [R, n, *F]
        sites = [site for site in stacked.sites(x[0, :1]) if site.index >= split]
        masks = {site.index: torch.empty((stacked.size, *site.noise_shape(n)), device=device, dtype=h.dtype) for site in sites}

        def draw(r: int) -> None:  # run r's masks of the next sample, in its layers' order
            for site in sites:
                if device.type == "cpu":  # in place: a contiguous slice is filled in the order a fresh tensor is
                    keep_mask_(masks[site.index][r], site.keep, generators[r])
                else:
                    masks[site.index][r].copy_(keep_mask_(torch.empty(site.noise_shape(n), device=device, dtype=h.dtype), site.keep, generators[r]))

        samples = []
        with _draw_pool(device, stacked.size) as pool:
            for _ in range(n_samples):
                if pool is not None:
                    list(pool.map(draw, range(stacked.size)))
                else:
                    for r in range(stacked.size):
                        draw(r)
                samples.append(stacked.run(h, split, noise=masks, divide=True))  # [R, n, C]
    return torch.stack(samples, dim=1)


@contextmanager
def _draw_pool(device: torch.device, runs: int) -> Iterator[ThreadPoolExecutor | None]:
    """Threads that draw the runs' masks side by side on the CPU (torch's uniform kernel is
    serial there; each run has its own generator), one per intra-op thread; None for one."""
    workers = min(torch.get_num_threads(), runs) if device.type == "cpu" else 1
    if workers < 2:
        yield None
        return
    with ThreadPoolExecutor(workers) as pool:
        yield pool


class _GivenMasks:
    """`DropoutMasks`' interface over masks already drawn: mask(j, ...) is the j-th of `masks`;
    a fresh `folded` cache per call (it holds tensors of one vmapped call)."""

    def __init__(self, masks: Sequence[Tensor], n_samples: int) -> None:
        self.masks, self.n_samples, self.folded = masks, n_samples, {}

    def mask(self, j: int, layer: nn.Module, feature_shape: Sequence[int]) -> Tensor:
        return self.masks[j]


class _SharedTail(nn.Module):
    """The tail layers as one module, so that `functional_call` can swap in run r's weights
    while `stochastic_tail` reads them."""

    def __init__(self, layers: Sequence[nn.Module], n_samples: int) -> None:
        super().__init__()
        self.layers, self.n_samples = nn.ModuleList(layers), n_samples

    def forward(self, h: Tensor, *masks: Tensor) -> Tensor:
        return stochastic_tail(list(self.layers), h, _GivenMasks(masks, self.n_samples))


def shared_logits(stacked: StackedSequential, networks: Sequence[nn.Module], split: int, x: Tensor, seeds: Sequence[int],
                  n_samples: int) -> Tensor:  # fmt: skip
    """Logits [R, S, n, C] with run r's `DropoutMasks(seeds[r], S)` (one mask set per sample,
    shared by the items) through `stochastic_tail`; `networks` are the R fitted networks."""
    _check_runs(stacked, x, seeds)
    device, n = x.device, x.shape[1]
    with torch.no_grad():
        h = stacked.run(x, 0, split)  # [R, n, *F]
        sites = [site for site in stacked.sites(x[0, :1]) if site.index >= split]
        per_run = [DropoutMasks(int(seed), n_samples, device=device, dtype=h.dtype) for seed in seeds]
        masks = [torch.stack([m.mask(j, site.layer, site.features) for m in per_run]) for j, site in enumerate(sites)]  # [R, S, ...] each
        chunk = max(1, TAIL_BYTES // (stacked.size * n_samples * max(h[0, 0].numel(), 1) * h.element_size()))
        tail_layers = stacked.layers[split:]
        if device.type == "cpu" and any(isinstance(layer, CONVS) for layer in tail_layers):
            tails = [(flatten_sequential(network) or [])[split:] for network in networks]
            parts = [torch.stack([stochastic_tail(tails[r], h[r, a : a + chunk], per_run[r]) for r in range(stacked.size)])
                     for a in range(0, n, chunk)]  # fmt: skip
        else:
            tail = _SharedTail(tail_layers, n_samples)
            params = {f"layers.{k}.{name}": value for k in range(len(tail_layers)) for name, value in stacked.params[split + k].items()}
            one = vmap(lambda p, part, *m: functional_call(tail, p, (part, *m)))
            parts = [one(params, h[:, a : a + chunk], *masks) for a in range(0, n, chunk)]
    return torch.cat(parts, dim=2)  # [R, S, n, C]


def _check_runs(stacked: StackedSequential, x: Tensor, seeds: Sequence[int]) -> None:
    if x.dim() < 2 or x.shape[0] != stacked.size or len(seeds) != stacked.size:
        raise ShapeError(f"x: expected [R = {stacked.size}, n, ...] and {stacked.size} seeds, got {tuple(x.shape)} and {len(seeds)}")


__all__ = ["deterministic_probs", "independent_logits", "shared_logits"]
