"""BatchEnsemble (Wen, Tran & Ba, ICLR 2020) and its rank-1 Bayesian variant (Dusenberry et al.,
ICML 2020): M ensemble members that share every weight matrix and differ by rank-1 factors.

Every nn.Linear and nn.Conv2d layer of the network becomes a BatchEnsemble layer (shared W, per
member fast weights r_m, s_m and a bias b_m: W_m = W ∘ (s_m r_mᵀ); all members run as one call on
the batch tiled M times): `activebayes.posteriors._batch_ensemble_layers`.

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

from typing import Unpack

import torch
from torch import Tensor, nn
from torch.func import functional_call
from torch.nn import functional as F

from activebayes.errors import ConfigError, ShapeError
from activebayes.gaussian_likelihood import fit_noise_variance, regression_output
from activebayes.posteriors._batch_ensemble_layers import (
    FAST_INITS,
    LAYERS,
    BatchEnsembleLayer,
    BatchEnsembleNetwork,
    batch_ensemble_forward,
    effective_weight,
    tile,
    to_batch_ensemble,
)
from activebayes.posteriors._network import (
    ModelFn,
    NetworkArgs,
    NetworkPosterior,
    check_choice,
    check_positive_number,
    inputs_for,
)
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
_OUTPUT_CHUNK = 4096  # items per forward pass when computing training residuals


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
        if not any(isinstance(m, LAYERS) for m in net.modules()):
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
