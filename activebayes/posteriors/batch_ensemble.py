"""BatchEnsemble (Wen, Tran & Ba, ICLR 2020) and its rank-1 Bayesian variant (Dusenberry et al.,
ICML 2020): M ensemble members that share every weight matrix and differ by rank-1 factors.

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

Training (`activebayes.training.train`, with its `loss_fn` and `param_groups` hooks): every
mini-batch B is tiled M times, so that every member sees every example (as in the paper), and
one optimiser updates W, the fast weights and the biases on the mean loss over the M·B rows,

    L = (1/(M·|B|)) Σ_m Σ_{n ∈ B} ℓ(y_n, f_m(x_n)),     ℓ: cross-entropy, or squared error.

`TrainConfig.weight_decay` applies to the shared weights, the biases and every other layer, not
to the fast weights (nor to q's parameters below), as in the authors' code. Early stopping scores
the eval-mode network, whose output is the ensemble's: log (1/M) Σ_m softmax(f_m(x)) (log
probabilities [N, C], which cross-entropy and accuracy read as logits), or (1/M) Σ_m f_m(x).

Rank-1 Bayesian variant (`rank1="gaussian"`): the fast weights of member m get a mean-field
Gaussian q(r_m) = N(μ_r, σ_r²), q(s_m) = N(μ_s, σ_s²) (σ = softplus(ρ), per entry), under the
prior N(1, p²) per entry (p = `prior_std`); W, the biases and every other layer stay point
estimates. Training maximises the ELBO per item (as `mfvi.MFVI`) on the tiled batch,

    (1/(M·|B|)) Σ_m Σ_{n∈B} log p(y_n | x_n, r_mn, s_mn) − β · KL(q ‖ p) / N,   r_mn, s_mn ~ q_m,

drawing the factors afresh for every row (each example of each member), with the closed form

    KL(q ‖ p) = Σ_entries [ log(p / σ) + (σ² + (μ − 1)²) / (2 p²) − ½ ]

over every layer, member and entry of r and s (β = `kl_weight`, N the training items; the
regression data term is the unit-noise Gaussian NLL ½ (y − f)², as in MFVI).

Prediction returns S samples, each one network's output on every x, in eval mode:

    rank1="none":      sample s = member s (s = 1..S, S <= M, default M), equal weights.
    rank1="gaussian":  sample s uses member m_s = s mod M with fast weights r_s = μ_r[m_s] +
                       σ_r[m_s] ∘ ε_s (and s_s likewise), ε_s ~ N(0, I) drawn once per S on a CPU
                       generator seeded by (`seed_`, S): the same S networks for every item, batch
                       split and call (pool-consistent). Weights w_s = 1 / (M' · c_{m_s}), M' the
                       members used and c_m the draws of member m, so every member weighs 1/M'
                       (equal weights, None, when M' divides S).

    classification: logits [S, N, C] -> Predictive(softmax, weights)
    regression:     outputs [S, N] -> GaussianPredictive(mean [S, N], var [S, N] = σ²_{m_s})

with σ_m² member m's noise, fitted from its training residuals (mean factors) by
`gaussian_likelihood.fit_noise_variance`, as `DeepEnsemble` does per member.

>>> import torch
>>> from torch import nn
>>> from activebayes.training import TrainConfig
>>> x, y = torch.randn(64, 2), torch.randint(0, 3, (64,))
>>> be = BatchEnsemble(lambda: nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 3)), n_members=4,
...                    seed=0, device="cpu", train=TrainConfig(epochs=2)).fit(x, y)
>>> be.predict(x[:5]).probs.shape
torch.Size([4, 5, 3])
"""

from __future__ import annotations

import math
from typing import Unpack

import torch
from torch import Tensor, nn
from torch.func import functional_call
from torch.nn import functional as F

from activebayes.errors import ConfigError, ShapeError
from activebayes.gaussian_likelihood import fit_noise_variance, regression_output
from activebayes.posteriors._network import (
    ModelFn,
    NetworkArgs,
    NetworkPosterior,
    check_choice,
    check_positive_number,
    inputs_for,
)
from activebayes.posteriors.mfvi import gaussian_kl
from activebayes.predictive import GaussianPredictive, Predictive
from activebayes.training import (
    as_tensor,
    check_positive_int,
    exempt_from_weight_decay,
    task_loss,
    train,
    training_items,
)

RANK1 = ("none", "gaussian")
FAST_INITS = ("random-sign", "normal")
_LAYERS = (nn.Linear, nn.Conv2d)
_OUTPUT_CHUNK = 4096  # items per forward pass when computing training residuals


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
    if isinstance(net, _LAYERS):
        return BatchEnsembleLayer(net, n_members, **layer_options)
    for name, module in list(net.named_modules()):
        if name and isinstance(module, _LAYERS):
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


def member_weights(members: Tensor) -> Tensor | None:
    """Sample weights [S] giving each member used the same total mass: w_s = 1 / (M' · c_{m_s}),
    members [S] the member of each sample; None when they are equal."""
    counts = torch.bincount(members)
    used = int((counts > 0).sum())
    weights = 1.0 / (used * counts[members].double())
    return None if bool((counts[counts > 0] == counts[members[0]]).all()) else weights.float()


# ----------------------------------------------------------------------------- posterior
class BatchEnsemble(NetworkPosterior):
    """BatchEnsemble (Wen et al., 2020), optionally with Gaussian rank-1 factors (Dusenberry et
    al., 2020): module docstring.

    Args (beyond `NetworkPosterior`'s shared ones):
        model_fn: factory of a fresh network with at least one nn.Linear or nn.Conv2d layer; its
            initialisation is the shared W.
        model: instead, an already-trained network (copied): W starts at its weights and `fit`
            trains the ensemble from there.
        n_members: M, the ensemble members.
        rank1: the rank-1 factors r, s: "none" (point estimates, BatchEnsemble) or "gaussian"
            (mean-field Gaussian q trained by variational inference, the rank-1 BNN).
        n_samples: S for `predict`: rank1="none", the first S <= M members (None: M);
            rank1="gaussian", S weight draws spread over the members (None: 4·M).
        fast_init: "random-sign" (±1 entries) or "normal" (N(1, 0.5²) entries): the fast weights'
            (the means') initial values.
        prior_std: rank1="gaussian": p of the prior N(1, p²) on every fast weight.
        init_std: rank1="gaussian": σ of q at the start of training.
        kl_weight: rank1="gaussian": β, the weight of KL(q ‖ p)/N in the loss (1: the ELBO).
        train: the training (epochs, lr, batch size of untiled examples, optimizer, schedule,
            early stopping).

    Fitted attributes: `model_` (a BatchEnsembleNetwork in eval mode), `seed_`, `device_`,
    `likelihood_`, `noise_` (regression: σ_m² [M], one per member; None for classification).
    """

    options = ("n_members", "rank1", "fast_init", "prior_std", "init_std", "kl_weight")
    _fitted_attribute = "model_"

    def __init__(
        self,
        model_fn: ModelFn | None = None,
        *,
        n_members: int = 4,
        rank1: str = "none",
        n_samples: int | None = None,
        fast_init: str = "random-sign",
        prior_std: float = 0.5,
        init_std: float = 0.05,
        kl_weight: float = 1.0,
        **shared: Unpack[NetworkArgs],
    ) -> None:
        check_positive_int("n_members", n_members)
        check_choice("rank1", rank1, RANK1)
        if n_samples is None:
            n_samples = n_members if rank1 == "none" else 4 * n_members
        super().__init__(model_fn, n_samples=n_samples, **shared)
        if rank1 == "none" and n_samples > n_members:
            raise ConfigError(f"n_samples: rank1='none' predicts with at most its n_members={n_members} members, got {n_samples}")
        check_choice("fast_init", fast_init, FAST_INITS)
        check_positive_number("prior_std", prior_std)
        check_positive_number("init_std", init_std)
        if isinstance(kl_weight, bool) or not isinstance(kl_weight, (int, float)) or not kl_weight >= 0:
            raise ConfigError(f"kl_weight: expected a non-negative number, got {kl_weight!r}")
        self.n_members, self.rank1, self.fast_init = n_members, rank1, fast_init
        self.prior_std, self.init_std, self.kl_weight = prior_std, init_std, kl_weight
        self.model_: BatchEnsembleNetwork | None = None
        self.noise_: Tensor | None = None

    # ------------------------------------------------------------------ fitting
    def _fit_network(self, x: Tensor, y: Tensor) -> None:
        """Convert the network's dense and conv layers, train on the tiled batches, fit σ_m²."""
        seeds = torch.Generator().manual_seed(self.seed_)
        init_seed, train_seed, self._sample_seed = (int(s) for s in torch.randint(0, 2**62, (3,), generator=seeds))
        net = self._network(self.seed_)
        if not any(isinstance(m, _LAYERS) for m in net.modules()):
            raise ConfigError(f"{self._network_argument}: BatchEnsemble needs a network with an nn.Linear or nn.Conv2d layer, found none")
        x = inputs_for(net, x)
        net = to_batch_ensemble(net, self.n_members, rank1=self.rank1, fast_init=self.fast_init, init_std=self.init_std,
                                generator=torch.Generator().manual_seed(init_seed))  # fmt: skip
        model = BatchEnsembleNetwork(net, self.n_members, self.likelihood_)
        config = self.train_config
        groups = exempt_from_weight_decay(model, [p for layer in model.layers() for p in layer.fast_parameters()])
        n_train = training_items(x.shape[0], config)
        self.model_ = train(model, x, y, config, seed=train_seed, device=self.device_, param_groups=groups,
                            loss_fn=lambda out, target: self._loss(model, out, target, n_train)).eval()  # fmt: skip
        self._cache: dict[int, tuple[Tensor, dict[str, Tensor]]] = {}
        if self.likelihood_ == "gaussian":
            outputs = self._training_outputs(x)  # [M, N]
            target = y.to(outputs.device)
            self.noise_ = torch.tensor([fit_noise_variance(o - target, y) for o in outputs], dtype=torch.float32, device=self.device_)

    def _loss(self, model: BatchEnsembleNetwork, output: Tensor, y: Tensor, n_train: int) -> Tensor:
        """The loss of a tiled mini-batch: output [M·B, ...] against y [B] tiled M times (module
        docstring); rank1="gaussian" adds β · KL / N."""
        target = tile(y, self.n_members)
        if self.rank1 == "none":
            return task_loss(output, target)
        if self.likelihood_ == "gaussian":
            if output.numel() != target.numel():
                got = tuple(output.shape[1:])
                raise ShapeError(f"{self._network_argument}: for regression expected one output per item, got [N, ...] = {got}")
            data = 0.5 * F.mse_loss(output.reshape(target.shape), target)
        else:
            data = F.cross_entropy(output, target.long())
        return data + self.kl_weight * model.kl(self.prior_std) / n_train if self.kl_weight > 0 else data

    @torch.no_grad()
    def _training_outputs(self, x: Tensor) -> Tensor:
        """Each member's regression output [M, N] on x (mean factors), in chunks."""
        dev = self.device_
        return torch.cat([regression_output(self.model_.members(chunk.to(dev)), 1) for chunk in x.split(_OUTPUT_CHUNK)], dim=1)

    def kl_divergence(self) -> Tensor:
        """KL(q ‖ p) of the fitted factors (rank1="gaussian"), a scalar."""
        self._check_fitted()
        return self.model_.kl(self.prior_std)

    # ------------------------------------------------------------------ devices
    def _move(self, device: torch.device) -> None:
        """Move the network and σ_m²; the Gaussian draws come from seeded CPU generators."""
        self.model_ = self.model_.to(device)
        if self.noise_ is not None:
            self.noise_ = self.noise_.to(device)
        self._cache = {}

    # ------------------------------------------------------------------ prediction
    def _sample_count(self, n_samples: int | None) -> int:
        """S for one `predict` call; rank1="none" has at most its M members."""
        count = super()._sample_count(n_samples)
        if self.rank1 == "none" and count > self.n_members:
            raise ConfigError(f"n_samples: expected an integer from 1 to the {self.n_members} members, got {count}")
        return count

    def _sample_generator(self, n_samples: int) -> torch.Generator:
        """A CPU generator seeded by (seed_, S) (through the fitted sample seed)."""
        mixed = (self._sample_seed * 0x9E3779B97F4A7C15 + n_samples * 0xBF58476D1CE4E5B9) % (2**63 - 1)
        return torch.Generator().manual_seed(mixed)

    def sample_factors(self, n_samples: int) -> tuple[Tensor, dict[str, Tensor]]:
        """(members [S], {parameter name in model_.net: [S, ...]}): the member of each sample and
        its fast weights and bias. rank1="none": members 0..S−1 as fitted; "gaussian": member
        s mod M with r, s = μ + σ ∘ ε, ε ~ N(0, I) drawn on the CPU layer by layer (r, then s)
        from `_sample_generator(S)`; cached per S."""
        self._check_fitted()
        if n_samples not in self._cache:
            members = torch.arange(n_samples) % self.n_members
            generator = self._sample_generator(n_samples)
            factors: dict[str, Tensor] = {}
            for name, layer in self.model_.net.named_modules():
                if not isinstance(layer, BatchEnsembleLayer):
                    continue
                prefix = f"{name}." if name else ""
                index = members.to(layer.r.device)
                for attr in ("r", "s"):
                    mean = getattr(layer, attr).detach()[index]
                    rho = getattr(layer, f"{attr}_rho")
                    if rho is not None:
                        eps = torch.randn(mean.shape, generator=generator).to(mean)
                        mean = mean + F.softplus(rho.detach())[index] * eps
                    factors[prefix + attr] = mean
                if layer.bias is not None:
                    factors[prefix + "bias"] = layer.bias.detach()[index]
            self._cache = {n_samples: (members, factors)}
        return self._cache[n_samples]

    def predict(self, x: Tensor, n_samples: int | None = None) -> Predictive | GaussianPredictive:
        """S samples (module docstring): probs [S, N, C] (weights None or [S]); for regression a
        GaussianPredictive with mean [S, N] and var[s, n] = σ²_{m_s}. The same S networks for
        every item and batch split."""
        self._check_fitted()
        count = self._sample_count(n_samples)
        members, factors = self.sample_factors(count)
        model = self.model_
        device = next(model.parameters()).device
        x = inputs_for(model, as_tensor("x", x)).to(device)
        with torch.no_grad():
            out = functional_call(model.net, factors, (tile(x, count),))
        logits = out.reshape(count, x.shape[0], *out.shape[1:])
        weights = member_weights(members)
        weights = None if weights is None else weights.to(device)
        if self.likelihood_ == "gaussian":
            pred = self._predictive(logits, self.noise_[members.to(self.noise_.device)])
            return GaussianPredictive(pred.mean, pred.var, weights, check=False) if weights is not None else pred
        pred = self._predictive(logits)
        return Predictive(pred.probs, weights, check=False) if weights is not None else pred


__all__ = [
    "BatchEnsemble",
    "BatchEnsembleLayer",
    "BatchEnsembleNetwork",
    "batch_ensemble_forward",
    "effective_weight",
    "member_weights",
    "to_batch_ensemble",
]
