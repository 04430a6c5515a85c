"""Whole-network curvature: KFAC and diagonal GGN over every nn.Linear and nn.Conv2d of a network,
and the Laplace evidence built on it. Pure maths on tensors; `laplace.py` and `marglik.py` use it.

Glossary: N items, C network outputs, L parameter tensors θ_1..θ_L (in `model.parameters()` order,
a layer's weight and then its bias, as laplace-torch orders them), P = Σ_l P_l parameters.

Generalised Gauss-Newton (GGN). With f_n = f(x_n; θ) [C] and the likelihood's Hessian in f,
Λ_n = ∇²_f (−log p(y_n | f_n)), the GGN is H = Σ_n J_nᵀ Λ_n J_n, J_n = ∂f_n/∂θ [C, P]:
    categorical:  Λ_n = diag(p_n) − p_n p_nᵀ, p_n = softmax(f_n)  (laplace-torch's H)
    gaussian:     Λ_n = I_C / σ²; the curvature is stored WITHOUT the factor φ = 1/σ² (as
                  laplace-torch stores it), which the evidence and the predictive apply.
    heteroscedastic: C = 2 natural-parameter outputs, Λ_n = `likelihoods.heteroscedastic_ggn`
                  (K = 2 vectors; log p(D | θ*) = −Σ_n NLL, φ = 1, as for the categorical).
Λ_n is written as Σ_k v_nk v_nkᵀ with K vectors v_nk [C] (`hessian_square_root`: for the softmax
v_nk = sqrt(p_nk)(e_k − p_n), K = C), so one backward pass per k of v_k through the network gives
g_lnk = (∂f_n/∂s_ln)ᵀ v_nk, the output gradient of layer l at its pre-activation s_l [N, T, O_l].

A layer maps input rows x_nt [D_l] to outputs s_nt = W x_nt + b [O_l], t over T positions (T = 1
for a Linear on [N, D]; the output pixels of a Conv2d, x_nt its unfolded receptive field,
D = c_in·k_h·k_w in the weight's own flattening order). The per-item weight gradient of v_nk is
Σ_t g_lnkt x_ntᵀ [O, D]. Structures (laplace-torch 0.3 with its ASDL backend, the defaults):
    diag:  the exact diagonal of H: Σ_{n,k} (Σ_t g_nkt x_ntᵀ)² for the weight, Σ_{n,k} (Σ_t g_nkt)²
           for the bias. (ASDL approximates the Conv2d weight diagonal by Σ_{n,t,k} g² x² when
           T·(O + D) < O·D; here it is always exact.)
    kron:  weight block B ⊗ A with B = Σ_{n,k,t} g gᵀ [O, O] and A = (1/N) Σ_{n,t} x xᵀ / T_conv
           [D, D] (T_conv = T for a Conv2d, 1 for a Linear), the bias its own block B.
Each kron factor is stored by its eigendecomposition. A = RᵀR with R [N·T, D] the scaled input
rows; when N·T < D (a wide dense layer on few items, as in active learning) A has rank ≤ N·T, and
its nonzero eigenpairs come from the small Gram matrix R Rᵀ: A q = a q with q = Rᵀu/‖Rᵀu‖ for
R Rᵀ u = a u. The D − r remaining eigenvalues are exactly 0 (`KronBlock.q_a` is [D, r]).

Evidence (laplace-torch's `log_marginal_likelihood`; Immer et al. 2021), prior N(0, diag δ) with
one precision δ_l per parameter tensor ("layerwise") or one for all:
    log q(D | δ, σ) = log p(D | θ*) − ½ (log det(φH + δ) − Σ_l P_l log δ_l + Σ_l δ_l ‖θ*_l‖²)
(equal to log p(D | θ*) + log p(θ* | δ) + P/2 log 2π − ½ log det(φH + δ)), where
    log det(φH + δ) = Σ_l Σ_{i,j} log(φ g_i a_j + δ_l) (kron weight), Σ_i log(φ g_i + δ_l) (bias),
                      Σ_p log(φ h_p + δ_l) (diag),
    log p(D | θ*) = −Σ_n CE(f_n, y_n), or −φ·½ Σ_n ‖y_n − f_n‖² − N·C·log(σ √(2π)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from activebayes.errors import ConfigError, ShapeError
from activebayes.likelihoods import HETEROSCEDASTIC, heteroscedastic_ggn_square_root, heteroscedastic_nll

STRUCTURES = ("kron", "diag")
LAYER_TYPES = (nn.Linear, nn.Conv2d)
_ELEMENTS = 2**24  # about how many floats one chunk of items may hold per stored tensor


# ----------------------------------------------------------------------------- the network's layers
def curvature_layers(model: nn.Module) -> list[nn.Module]:
    """The modules owning trainable parameters, in `model.parameters()` order; each must be an
    nn.Linear or an nn.Conv2d (zero padding, one group) whose parameters are `weight` (and `bias`)."""
    layers = []
    for name, module in model.named_modules():
        own = [(n, p) for n, p in module.named_parameters(recurse=False) if p.requires_grad]
        if not own:
            continue
        where = f"module {name!r} ({type(module).__name__})"
        if not isinstance(module, LAYER_TYPES):
            raise ConfigError(f"subset: 'all' covers nn.Linear and nn.Conv2d layers only; {where} has parameters; "
                              "use subset='last_layer' or freeze it (requires_grad=False)")
        if isinstance(module, nn.Conv2d) and (module.groups != 1 or module.padding_mode != "zeros" or module.padding == "same"):
            raise ConfigError(f"subset: 'all' needs Conv2d layers with groups=1 and numeric zero padding; {where} has another")
        if [n for n, _ in own] not in (["weight"], ["weight", "bias"]):
            raise ConfigError(f"subset: 'all' needs {where} to train its weight (and bias) together")
        layers.append(module)
    if not layers:
        raise ConfigError("model: expected a network with trainable nn.Linear or nn.Conv2d layers, got none")
    return layers


def parameter_tensors(layers: list[nn.Module]) -> list[Tensor]:
    """θ_1..θ_L: each layer's weight, then its bias (when it has one)."""
    return [p for layer in layers for p in ((layer.weight,) if layer.bias is None else (layer.weight, layer.bias))]


def _rows(layer: nn.Module, inputs: Tensor) -> Tensor:
    """The layer's input rows x [M, T, D] (a Conv2d's unfolded receptive fields)."""
    if isinstance(layer, nn.Conv2d):
        padding = 0 if layer.padding == "valid" else layer.padding
        cols = F.unfold(inputs, layer.kernel_size, dilation=layer.dilation, padding=padding, stride=layer.stride)
        return cols.transpose(1, 2)
    return inputs.reshape(inputs.shape[0], -1, inputs.shape[-1])


def _output_rows(layer: nn.Module, grads: Tensor) -> Tensor:
    """Output gradients [K, M, *out] as rows g [K, M, T, O]."""
    if isinstance(layer, nn.Conv2d):
        return grads.flatten(3).transpose(2, 3)
    return grads.reshape(grads.shape[0], grads.shape[1], -1, grads.shape[-1])


def as_outputs(output: Tensor) -> Tensor:
    """The network's output as [M, C] (a regression network's [M] as [M, 1])."""
    if output.dim() == 1:
        return output.unsqueeze(1)
    if output.dim() != 2:
        raise ShapeError(f"model: expected the network to output [N, C] (or [N] for regression), got {tuple(output.shape)}")
    return output


def backpropagate(model: nn.Module, layers: list[nn.Module], x: Tensor, vectors_of) -> tuple[Tensor, list[tuple[Tensor, Tensor]]]:
    """One forward pass on x [M, ...] and one backward pass per output vector.

    `vectors_of(f)` maps the outputs f [M, C] to K vectors [K, M, C]; returns (f detached, per layer
    (x rows [M, T, D], g rows [K, M, T, O])) with g_k = (∂(f·v_k)/∂s_l), s_l the layer's output.
    """
    captured: list[tuple[Tensor, Tensor]] = []
    handles = [layer.register_forward_hook(lambda _m, inputs, out: captured.append((inputs[0].detach(), out))) for layer in layers]
    try:  # autograd even when the caller scores under torch.inference_mode (x cloned out of it)
        with torch.inference_mode(False), torch.enable_grad():
            f = as_outputs(model((x.clone() if x.is_inference() else x.detach()).requires_grad_(True)))
            if len(captured) != len(layers):
                raise ConfigError("model: every nn.Linear and nn.Conv2d must run exactly once per forward pass")
            vectors = vectors_of(f.detach())
            outs = [out for _, out in captured]
            grads = [torch.autograd.grad(f, outs, grad_outputs=v, retain_graph=k < len(vectors) - 1) for k, v in enumerate(vectors)]
    finally:
        for handle in handles:
            handle.remove()
    stats = []
    for i, (layer, (inputs, _)) in enumerate(zip(layers, captured)):
        g = torch.stack([per_vector[i] for per_vector in grads])
        stats.append((_rows(layer, inputs), _output_rows(layer, g)))
    return f.detach(), stats


def hessian_square_root(likelihood: str, f: Tensor) -> Tensor:
    """K vectors v [K, M, C] with Σ_k v_k v_kᵀ = Λ_n (module docstring; gaussian without 1/σ²)."""
    c = f.shape[1]
    eye = torch.eye(c, dtype=f.dtype, device=f.device)
    if likelihood == "gaussian":
        return eye.unsqueeze(1).expand(c, f.shape[0], c)
    if likelihood == HETEROSCEDASTIC:  # the natural-parameter Gaussian's Λ(f), K = 2 (`likelihoods`)
        return heteroscedastic_ggn_square_root(f)
    p = torch.softmax(f, dim=1)  # [M, C]
    return p.T.sqrt().unsqueeze(2) * (eye.unsqueeze(1) - p.unsqueeze(0))  # [K=C, M, C]


def item_chunk(model: nn.Module, layers: list[nn.Module], x: Tensor, k: int) -> int:
    """Items per pass so that K copies of every layer's output rows stay near `_ELEMENTS` floats."""
    sizes: list[int] = []
    handles = [layer.register_forward_hook(lambda _m, inputs, out: sizes.append(out[:1].numel() + inputs[0][:1].numel()))
               for layer in layers]  # fmt: skip
    try:
        with torch.no_grad():
            model(x[:1])
    finally:
        for handle in handles:
            handle.remove()
    return max(1, min(4096, _ELEMENTS // max(1, (k + 1) * sum(sizes))))


# ------------------------------------------------------------------------------------ the structures
@dataclass(frozen=True)
class KronBlock:
    """One parameter tensor's curvature B ⊗ A (a bias: B alone, A = [1]), by eigenpairs.

    g [O], q_g [O, O]: B = q_g diag(g) q_gᵀ. a [r], q_a [D, r]: A = q_a diag(a) q_aᵀ, the other
    D − r eigenvalues 0 (r = D but for the Gram path); a bias block has a = [1], q_a None.
    """

    g: Tensor
    q_g: Tensor
    a: Tensor
    q_a: Tensor | None
    n_in: int  # D

    @property
    def size(self) -> int:
        return self.g.shape[0] * self.n_in

    def eigenvalues(self, factor: float | Tensor = 1.0) -> Tensor:
        """The nonzero-basis eigenvalues φ g_i a_j [O·r] (the O·(D − r) others are 0)."""
        return (factor * torch.outer(self.g, self.a)).reshape(-1)

    def log_det(self, factor: float | Tensor, delta: Tensor) -> Tensor:
        """log det(φ B ⊗ A + δ I) = Σ_{ij} log(φ g_i a_j + δ) + O·(D − r)·log δ."""
        nulls = self.g.shape[0] * (self.n_in - self.a.shape[0])
        return torch.log(self.eigenvalues(factor) + delta).sum() + nulls * torch.log(delta)


def _symeig(matrix: Tensor) -> tuple[Tensor, Tensor]:
    values, vectors = torch.linalg.eigh(matrix.to(torch.float64))
    return values.clamp_min(0.0), vectors


def _input_factor(rows: Tensor | None, gram: Tensor | None, n_in: int) -> tuple[Tensor, Tensor]:
    """Eigenpairs (a [r], q_a [D, r]) of A, from A itself or from its scaled rows R (A = RᵀR)."""
    if rows is None:
        return _symeig(gram)  # type: ignore[arg-type]
    r64 = rows.to(torch.float64)
    values, u = _symeig(r64 @ r64.T)
    keep = values > values.max().clamp_min(1e-300) * 1e-12
    values, u = values[keep], u[:, keep]
    return values, (r64.T @ u) / values.sqrt()


@dataclass(frozen=True)
class NetworkCurvature:
    """The GGN of a network around θ* and what the evidence needs (module docstring).

    structure: "kron" or "diag". blocks: per parameter tensor, a KronBlock or the diagonal h [P_l].
    mean: θ*_l flattened, per tensor (float64). loss: Σ_n CE(f_n, y_n), or ½ Σ_n ‖y_n − f_n‖²
    (gaussian). n_data: N. n_outputs: C. likelihood: "categorical" or "gaussian".
    """

    structure: str
    blocks: tuple[KronBlock | Tensor, ...]
    mean: tuple[Tensor, ...]
    loss: Tensor
    n_data: int
    n_outputs: int
    likelihood: str

    @property
    def sizes(self) -> list[int]:
        return [m.shape[0] for m in self.mean]

    @property
    def n_params(self) -> int:
        return sum(self.sizes)

    def eigenvalues(self, factor: float | Tensor = 1.0) -> Tensor:
        """All P eigenvalues of φH (zeros included), in block order."""
        parts = []
        for block, size in zip(self.blocks, self.sizes):
            values = block.eigenvalues(factor) if isinstance(block, KronBlock) else factor * block
            parts.append(torch.cat([values, values.new_zeros(size - values.shape[0])]))
        return torch.cat(parts)

    def log_det_posterior_precision(self, deltas: Tensor, factor: float | Tensor = 1.0) -> Tensor:
        """log det(φH + diag δ), δ_l = deltas[l] [L]."""
        total = deltas.new_zeros(())
        for block, delta in zip(self.blocks, deltas):
            total = total + (block.log_det(factor, delta) if isinstance(block, KronBlock) else torch.log(factor * block + delta).sum())
        return total

    def to(self, device: torch.device | str) -> NetworkCurvature:
        def move(block):
            if isinstance(block, KronBlock):
                return KronBlock(block.g.to(device), block.q_g.to(device), block.a.to(device),
                                 None if block.q_a is None else block.q_a.to(device), block.n_in)  # fmt: skip
            return block.to(device)

        return NetworkCurvature(self.structure, tuple(move(b) for b in self.blocks), tuple(m.to(device) for m in self.mean),
                                self.loss.to(device), self.n_data, self.n_outputs, self.likelihood)  # fmt: skip


def prior_precisions(prior_precision: float | Tensor | list[float], n_tensors: int, *, dtype=torch.float64, device=None) -> Tensor:
    """δ [L] from a scalar (every tensor) or one value per parameter tensor."""
    delta = torch.as_tensor(prior_precision, dtype=dtype, device=device).reshape(-1)
    if delta.shape[0] == 1:
        delta = delta.expand(n_tensors)
    if delta.shape[0] != n_tensors:
        raise ConfigError(f"prior_precision: expected one value or one per parameter tensor ({n_tensors}), got {delta.shape[0]}")
    if not bool((delta > 0).all()):
        raise ConfigError("prior_precision: expected positive values")
    return delta


def network_log_likelihood(curvature: NetworkCurvature, sigma_noise: Tensor | float | None = None) -> Tensor:
    """log p(D | θ*): −Σ_n CE, or −φ·½ Σ_n ‖y_n − f_n‖² − N·C·log(σ √(2π)) (σ default 1)."""
    if curvature.likelihood != "gaussian":
        return -curvature.loss
    sigma = torch.as_tensor(1.0 if sigma_noise is None else sigma_noise, dtype=torch.float64, device=curvature.loss.device).reshape(())
    return -curvature.loss / sigma.square() - curvature.n_data * curvature.n_outputs * torch.log(sigma * math.sqrt(2 * math.pi))


def log_marginal_likelihood(curvature: NetworkCurvature, prior_precision: Tensor | float | list[float],
                            sigma_noise: Tensor | float | None = None) -> Tensor:
    """The Laplace evidence log q(D | δ, σ) (module docstring), differentiable in δ (one value or
    one per parameter tensor [L]) and σ (gaussian; default 1)."""
    deltas = prior_precisions(prior_precision, len(curvature.blocks), device=curvature.loss.device)
    factor = 1.0
    if curvature.likelihood == "gaussian":
        sigma = torch.as_tensor(1.0 if sigma_noise is None else sigma_noise, dtype=torch.float64, device=deltas.device).reshape(())
        factor = sigma.square().reciprocal()
    sizes = torch.tensor(curvature.sizes, dtype=torch.float64, device=deltas.device)
    norms = torch.stack([m.square().sum() for m in curvature.mean])
    log_det_ratio = curvature.log_det_posterior_precision(deltas, factor) - (sizes * torch.log(deltas)).sum()
    return network_log_likelihood(curvature, sigma_noise) - 0.5 * (log_det_ratio + (deltas * norms).sum())


# -------------------------------------------------------------------------------------- fitting
def _nll_sum(likelihood: str, f: Tensor, y: Tensor) -> Tensor:
    if likelihood == "gaussian":
        return 0.5 * (f.to(torch.float64) - y.reshape(f.shape).to(torch.float64)).square().sum()
    if likelihood == HETEROSCEDASTIC:
        return heteroscedastic_nll(f.to(torch.float64), y.reshape(f.shape[:1]).to(torch.float64)).sum()
    return F.cross_entropy(f.to(torch.float64), y.long(), reduction="sum")


@torch.no_grad()
def fit_curvature(model: nn.Module, x: Tensor, y: Tensor, structure: str, likelihood: str) -> NetworkCurvature:
    """The GGN of `model` (eval mode, as it is) on x [N, ...], y [N] (module docstring), in chunks
    of items, every layer at once; no loop over items."""
    if structure not in STRUCTURES:
        raise ConfigError(f"hessian: expected one of {', '.join(map(repr, STRUCTURES))} for subset='all', got {structure!r}")
    layers = curvature_layers(model)
    n = x.shape[0]
    probe = as_outputs(model(x[:1]))
    k_vectors = probe.shape[1]
    chunk = item_chunk(model, layers, x, k_vectors)
    acc: list[dict[str, Tensor | list[Tensor] | int]] = [{} for _ in layers]
    loss = torch.zeros((), dtype=torch.float64, device=x.device)
    for start in range(0, n, chunk):
        xb, yb = x[start : start + chunk], y[start : start + chunk]
        f, stats = backpropagate(model, layers, xb, lambda out: hessian_square_root(likelihood, out))
        loss = loss + _nll_sum(likelihood, f, yb)
        for layer, (rows, g), slot in zip(layers, stats, acc):
            _accumulate(slot, layer, rows, g, structure, n)
    blocks: list[KronBlock | Tensor] = []
    for layer, slot in zip(layers, acc):
        blocks += _blocks(slot, layer, structure)
    mean = tuple(p.detach().reshape(-1).to(torch.float64) for p in parameter_tensors(layers))
    return NetworkCurvature(structure, tuple(blocks), mean, loss, n, probe.shape[1], likelihood)


def _add(slot: dict, key: str, value: Tensor) -> None:
    slot[key] = value if key not in slot else slot[key] + value


def _accumulate(slot: dict, layer: nn.Module, rows: Tensor, g: Tensor, structure: str, n: int) -> None:
    """Add one chunk's sums to the layer's accumulators (rows x [M, T, D], g [K, M, T, O])."""
    t = rows.shape[1]
    if structure == "kron":
        _add(slot, "B", g.reshape(-1, g.shape[-1]).T @ g.reshape(-1, g.shape[-1]))
        scaled = rows.reshape(-1, rows.shape[-1]) / math.sqrt(n * (t if isinstance(layer, nn.Conv2d) else 1))
        if n * t < rows.shape[-1]:  # rank-deficient A: keep its rows (the Gram path)
            slot.setdefault("R", []).append(scaled)  # type: ignore[union-attr]
        else:
            _add(slot, "A", scaled.T @ scaled)
        return
    if t == 1:
        _add(slot, "w", g[:, :, 0].square().sum(0).T @ rows[:, 0].square())
    else:
        per_item = torch.einsum("kmto,mti->kmoi", g, rows)
        _add(slot, "w", per_item.square().sum((0, 1)))
    _add(slot, "b", g.sum(2).square().sum((0, 1)))


def _blocks(slot: dict, layer: nn.Module, structure: str) -> list[KronBlock | Tensor]:
    """The layer's weight block (and bias block) from its accumulators."""
    has_bias = layer.bias is not None
    if structure == "diag":
        weight = slot["w"].reshape(-1).to(torch.float64)
        return [weight, slot["b"].to(torch.float64)] if has_bias else [weight]
    n_in = layer.weight[0].numel()
    g, q_g = _symeig(slot["B"])
    rows = torch.cat(slot["R"]) if "R" in slot else None
    a, q_a = _input_factor(rows, slot.get("A"), n_in)
    weight = KronBlock(g, q_g, a, q_a, n_in)
    if not has_bias:
        return [weight]
    return [weight, KronBlock(g, q_g, g.new_ones(1), None, 1)]
