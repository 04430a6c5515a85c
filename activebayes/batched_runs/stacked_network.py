"""R networks of one architecture run as one: `StackedSequential`, and the dropout noise each
run would have drawn on its own: `RunsRandomness`.

The networks are flat `nn.Sequential`s (nested ones flattened, as MC dropout's fast path needs
them). Their parameters are stacked, layer by layer, into [R, ...] tensors
(`torch.func.stack_module_state`), and `run(h [R, B, ...])` passes R batches through the R
networks at once: a layer with parameters is `functional_call(layer, θ_r, h_r)` under `vmap`
over r (a linear layer becomes one batched matmul), a parameterless one is `vmap`ped as it is,
and a dropout layer multiplies by the noise given for it:

    training:               h ⊙ ε,           ε = Bernoulli(1 − p) / (1 − p)   (what nn.Dropout does)
    independent MC masks:   (h ⊙ m) / (1 − p),   m ~ Bernoulli(1 − p)  (`mc_dropout.independent_passes`)
    no noise given:         h                                                 (eval mode)

so with the same ε or m a run's output is its own network's, up to the rounding of the batched
kernels. On the CPU a stretch of layers with a convolution (up to the next dropout or linear
layer) runs once per run instead, a loop over r: torch's grouped convolution, which `vmap` makes
of R convolutions, is several times slower there (measured on Gal et al.'s CNN: 8x in the
backward pass), R separate ones give the per-run numbers exactly, and the [R, B, ...] stack of
the widest activations (32 feature maps of 25 x 25 per image) is never built.

`RunsRandomness` holds, per run, the state of the global generator that `activebayes.training.train`
seeds for its dropout, and draws each dropout layer's noise by calling that layer in train mode
on ones of the noise's shape with this state swapped in (x ⊙ ε with x = 1 is ε): the same kernel,
the same number of draws, so the same numbers as the run's own training, on the CPU and CUDA.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.func import functional_call, stack_module_state, vmap

from activebayes.errors import ConfigError
from activebayes.posteriors.mc_dropout import flatten_sequential

MASKED = (nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d)
CONVS = (nn.Conv1d, nn.Conv2d, nn.Conv3d)


@dataclass(frozen=True)
class DropoutSite:
    """A dropout layer of the flattened network: its position, the layer, and the shape of one
    item's input to it (without the batch axis)."""

    index: int
    layer: nn.Module
    features: tuple[int, ...]

    @property
    def keep(self) -> float:
        return 1.0 - float(self.layer.p)

    def noise_shape(self, batch: int) -> tuple[int, ...]:
        """[B, *features] for `nn.Dropout`; [B, C, 1, ...] for the channel-wise Dropout1d/2d/3d."""
        if isinstance(self.layer, nn.Dropout):
            return (batch, *self.features)
        return (batch, self.features[0], *(1,) * (len(self.features) - 1))


def stacking_refusal_for(network: nn.Module) -> str | None:
    """Why R copies of `network` cannot run as a `StackedSequential` (None: they can)."""
    layers = flatten_sequential(network)
    if layers is None:
        return f"the network is a {type(network).__name__}, not an nn.Sequential"
    if any(True for _ in network.buffers()):
        return "the network has buffers (e.g. batch norm), which would need per-run updates"
    if any(not p.requires_grad for p in network.parameters()):
        return "the network has frozen parameters"
    if any(isinstance(layer, MASKED) and layer.p >= 1 for layer in layers):
        return "a dropout layer drops everything (p = 1)"
    return None


class StackedSequential:
    """R flat `nn.Sequential`s of one architecture (`networks`, left unchanged) as one: stacked
    parameters `params[i]` = {name: [R, ...]} of layer i, and `run` (module docstring). With
    `trainable`, the stacked parameters are leaves that require gradients (`leaves()`)."""

    def __init__(self, networks: Sequence[nn.Module], *, trainable: bool = False) -> None:
        lists = [flatten_sequential(network) for network in networks]
        if not lists or any(layers is None for layers in lists):
            raise ConfigError("networks: expected at least one nn.Sequential")
        shapes = {tuple((type(layer), tuple(p.shape for p in layer.parameters())) for layer in layers) for layers in lists}  # type: ignore[union-attr]
        if len(shapes) != 1:
            raise ConfigError("networks: expected networks of one architecture, got different layers or parameter shapes")
        self.layers: list[nn.Module] = lists[0]  # type: ignore[assignment]
        self.size = len(lists)
        self.params: list[dict[str, Tensor]] = []
        for i, layer in enumerate(self.layers):
            stacked = stack_module_state([layers[i] for layers in lists])[0] if any(True for _ in layer.parameters()) else {}  # type: ignore[index]
            self.params.append({k: v.detach().requires_grad_(trainable) for k, v in stacked.items()})
        parameter = next((v for p in self.params for v in p.values()), None)
        self.device = parameter.device if parameter is not None else torch.device("cpu")

    def leaves(self) -> list[Tensor]:
        return [v for p in self.params for v in p.values()]

    def sites(self, item: Tensor) -> list[DropoutSite]:
        """The dropout layers with their input's item shape, from a pass of run 0's network on
        `item` [1, ...] (dropout skipped, no gradients)."""
        sites, h = [], item
        with torch.no_grad():
            for i, layer in enumerate(self.layers):
                if isinstance(layer, MASKED):
                    sites.append(DropoutSite(i, layer, tuple(h.shape[1:])))
                else:
                    h = layer(h)
        return sites

    def run(self, h: Tensor, start: int = 0, stop: int | None = None, *, noise: Mapping[int, Tensor] | None = None,
            divide: bool = False) -> Tensor:  # fmt: skip
        """Layers start..stop−1 of every run on h [R, B, ...] -> [R, B, ...]. `noise[i]`
        [R, B, ...] is applied at dropout layer i as h ⊙ ε, or (h ⊙ m) / (1 − p) with `divide`;
        a dropout layer without noise passes h on (eval mode)."""
        stop = len(self.layers) if stop is None else stop
        i = start
        while i < stop:
            layer = self.layers[i]
            if isinstance(layer, MASKED):
                if noise is not None and i in noise:
                    h = h * noise[i]
                    if divide:
                        h = h.div_(1.0 - float(layer.p))  # h is the fresh product
                i += 1
                continue
            end = self._convolutions_end(i, stop) if h.device.type == "cpu" else i
            if end > i:  # R separate passes through the convolutional stretch (module docstring)
                h = torch.stack([self._per_run(r, i, end, h[r]) for r in range(self.size)])
                i = end
                continue
            h = vmap(layer)(h) if not self.params[i] else vmap(lambda p, x, layer=layer: functional_call(layer, p, (x,)))(self.params[i], h)
            i += 1
        return h

    def _convolutions_end(self, i: int, stop: int) -> int:
        """The end of the stretch of layers from i up to the next dropout or linear layer when it
        holds a convolution (run per run on the CPU), else i."""
        end = i
        while end < stop and not isinstance(self.layers[end], (*MASKED, nn.Linear)):
            end += 1
        return end if any(isinstance(layer, CONVS) for layer in self.layers[i:end]) else i

    def _per_run(self, r: int, start: int, stop: int, h: Tensor) -> Tensor:
        """Run r's own layers start..stop−1 (no dropout among them) on its h [B, ...]."""
        for i in range(start, stop):
            params = self.params[i]
            h = functional_call(self.layers[i], {k: v[r] for k, v in params.items()}, (h,)) if params else self.layers[i](h)
        return h

    def write_back(self, networks: Sequence[nn.Module]) -> None:
        """Copy run r's stacked parameters into networks[r] (same architecture)."""
        with torch.no_grad():
            for r, network in enumerate(networks):
                for i, layer in enumerate(flatten_sequential(network) or []):
                    for name, parameter in layer.named_parameters():
                        parameter.copy_(self.params[i][name][r])


class RunsRandomness:
    """The global-generator states R runs' training draws their dropout noise from, one per
    run, seeded as `train` seeds its own (module docstring). `noise(sites, batch, dtype)` draws
    every site's noise for one forward pass on `batch` items of each run, in order, keeps each
    run's advanced state, and puts the caller's state back."""

    def __init__(self, seeds: Sequence[int], device: torch.device) -> None:
        self.device = device
        self.states = []
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):  # manual_seed reseeds CPU and CUDA
            for seed in seeds:
                torch.manual_seed(int(seed))
                self.states.append(self._get())

    def _get(self) -> Tensor:
        return torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else torch.get_rng_state()

    def _set(self, state: Tensor) -> None:
        if self.device.type == "cuda":
            torch.cuda.set_rng_state(state, self.device)
        else:
            torch.set_rng_state(state)

    def noise(self, sites: Sequence[DropoutSite], batch: int, dtype: torch.dtype) -> dict[int, Tensor]:
        """{site index: ε [R, *noise shape]} (`DropoutSite.noise_shape`) for the next pass of every run."""
        ones = [torch.ones(site.noise_shape(batch), device=self.device, dtype=dtype) for site in sites]
        modes = [site.layer.training for site in sites]
        per_run = []
        saved = self._get()
        try:
            with torch.no_grad():
                for site in sites:
                    site.layer.train()
                for r, state in enumerate(self.states):
                    self._set(state)
                    per_run.append([site.layer(one) for site, one in zip(sites, ones)])
                    self.states[r] = self._get()
        finally:
            self._set(saved)
            for site, mode in zip(sites, modes):
                site.layer.train(mode)
        return {site.index: torch.stack([run[j] for run in per_run]) for j, site in enumerate(sites)}


__all__ = ["CONVS", "MASKED", "DropoutSite", "RunsRandomness", "StackedSequential", "stacking_refusal_for"]
