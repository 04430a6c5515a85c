"""MFVI: mean-field Gaussian variational inference over a network's dense layers (Bayes by
backprop, Blundell et al. 2015), trained with the local reparameterisation trick (Kingma et
al. 2015).

Mean-field over the dense layers: every weight and bias w of every nn.Linear layer gets an
independent Gaussian q(w) = N(μ, σ²), σ = softplus(ρ) = log(1 + e^ρ), under the prior
p(w) = N(0, s²) (s = `prior_std`). Every other layer (convolutions, normalisation, ...) stays
deterministic at its trained value (a point estimate, trained jointly with μ and ρ).

Training maximises the ELBO per item, on mini-batches B of the N training items,

    ELBO / N ≈ (1/|B|) Σ_{n ∈ B} log p(y_n | x_n, θ_n)  −  β_e · KL(q ‖ p) / N,     θ_n ~ q,

    KL(q ‖ p) = Σ_w [ log(s / σ_w) + (σ_w² + μ_w²) / (2 s²) − ½ ]                (closed form)

with β_e = `kl_weight` · min(1, (e + 1) / `kl_anneal_epochs`) in epoch e = 0, 1, ... (linear KL
annealing; β_e = `kl_weight` when `kl_anneal_epochs` = 0). The expected log-likelihood is
estimated with the local reparameterisation trick: a dense layer y = x Wᵀ + b, x [N, in],
W [out, in], b [out], never samples W but its pre-activations, independently per item,

    y_nj ~ N(m_nj, v_nj),   m = x μ_Wᵀ + μ_b,   v = (x ⊙ x) (σ_W ⊙ σ_W)ᵀ + σ_b ⊙ σ_b    [N, out]
    y = m + √v ⊙ ε,         ε ~ N(0, I)                                              [N, out]

which is exactly the distribution of x Wᵀ + b for W, b ~ q (a sum of independent Gaussians),
with a gradient variance that falls as 1/|B| (inputs with more leading dimensions, [N, ..., in],
get independent noise at every position). The data term is the cross-entropy (classification)
or, for regression, the Gaussian negative log-likelihood with a noise variance σ² learnt in the
same objective (standardise the targets so that the prior and the KL weight keep their meaning):

    −(1/|B|) Σ log N(y_n | f(x_n; θ_n), σ²) + (ν/N) (½ log σ² + s0²/(2σ²))
        = ½ mean_B (y − f)²/σ² + ½ (1 + ν/N) log σ² + ν s0²/(2Nσ²)  + const,

the second term the share per item of the inverse-χ² prior on σ² that
`gaussian_likelihood.fit_noise_variance` puts on the other posteriors' noise (ν pseudo-observations at
s0² = 1 % of the targets' variance s_y²), σ² = exp(λ) floored at 1e-6 s_y², λ starting at
log s_y². At the optimum σ² is the mean of E_q (y − f)² over the training items, the residuals
of the weight samples and not of the mean network. Before, σ² was fixed at 1 in training: with
standardised targets the whole signal has variance 1, so the KL term won and q stayed near the
prior (an epistemic sd of 0.79 inside the data of a sine with noise sd 0.13; 0.45 now, with σ²
learnt at 0.28: MFVI still under-fits there), and the σ² fitted afterwards from the mean
network's residuals was not the one q had been trained with.

Training follows `activebayes.training.train` step for step, which has no hook for another loss:
the same seeded data order (`epoch_order`), ⌈N/B⌉ equal-sized batches a step (`epoch_steps`),
Adam or SGD with `TrainConfig.lr` (and its cosine schedule), early stopping on
`TrainConfig.validation_*` scored with the mean network (μ), and the same seeding of the noise.
`TrainConfig.weight_decay` applies to the deterministic layers only: the prior regularises μ, ρ.
`model=` (a trained network) starts μ at its weights and trains q from there.

Prediction draws S weight samples θ_s ~ q of every dense layer, once per S, from a CPU generator
seeded by (`seed_`, S), so every batch of a pool (and every call) sees the same S networks;
they run as one vectorised call (torch.func.functional_call + vmap), in eval mode:

    classification:  logits [S, N, C] -> Predictive(softmax)
    regression:      f(x_n; θ_s) [S, N] -> GaussianPredictive(mean [S, N], var [S, N] = σ²)

with σ² the one learnt with q (above). `mean_std()` gives the
fitted diagonal Gaussian (μ, σ) of each dense layer, for an analytic predictive.

`predictive="analytic"` predicts without sampling weights: the mean-field q is propagated
through the network in one forward pass (`_moment_propagation`: exact moments through each
dense layer, exact moments through ReLU, other activations linearised at the mean, max-pool at
the mean's argmax), giving f(x) ≈ N(μ_f(x), diag σ_f²(x)); `predict_proba` is its mean-field
softmax approximation (`_moment_propagation.mean_field_softmax`), `predict` S seeded, pool-consistent draws μ_f + σ_f ⊙ ε_s of it (one
ε [S, C] per call shared by every item), `predict_mean_var` (regression) (μ_f, σ_f²).

>>> import torch
>>> from torch import nn
>>> x, y = torch.randn(64, 2), torch.randint(0, 3, (64,))
>>> vi = MFVI(lambda: nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 3)), seed=0,
...           train=TrainConfig(epochs=3)).fit(x, y)
>>> vi.predict(x[:4], n_samples=7).probs.shape
torch.Size([7, 4, 3])
"""

from __future__ import annotations

import math
from typing import NamedTuple, Unpack

import torch
from torch import Tensor, nn
from torch.func import functional_call, vmap
from torch.nn import functional as F

from activebayes.errors import ConfigError, ShapeError
from activebayes.gaussian_likelihood import NOISE_FLOOR_FRACTION, NOISE_PRIOR_COUNT, NOISE_PRIOR_FRACTION, target_scale
from activebayes.posteriors._moment_propagation import PREDICTIVES, AnalyticPredictive, check_propagatable, propagate_in_chunks
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
    TrainConfig,
    as_tensor,
    check_non_negative_int,
    exempt_from_weight_decay,
    train,
    training_items,
)


def softplus_inverse(sigma: float) -> float:
    """ρ with softplus(ρ) = σ: ρ = log(e^σ − 1) (σ > 0)."""
    return sigma + math.log(-math.expm1(-sigma))


def gaussian_kl(mean: Tensor, std: Tensor, prior_std: float, prior_mean: float = 0.0) -> Tensor:
    """KL(N(μ, σ²) ‖ N(m, s²)) summed over all entries: Σ log(s/σ) + (σ² + (μ − m)²)/(2 s²) − ½
    (a scalar); m = 0 for MFVI's weights, 1 for BatchEnsemble's rank-1 factors."""
    return (math.log(prior_std) - std.log() + (std.square() + (mean - prior_mean).square()) / (2 * prior_std**2) - 0.5).sum()


def local_reparameterisation_moments(x: Tensor, weight_mean: Tensor, weight_std: Tensor,
                                     bias_mean: Tensor | None, bias_std: Tensor | None) -> tuple[Tensor, Tensor]:
    """Mean and variance [..., out] of the pre-activations x Wᵀ + b for x [..., in] and
    W ~ N(μ_W, σ_W²) [out, in], b ~ N(μ_b, σ_b²) [out] independent:
    m = x μ_Wᵀ + μ_b,  v = x² σ_W²ᵀ + σ_b²."""
    mean = F.linear(x, weight_mean, bias_mean)
    var = F.linear(x.square(), weight_std.square(), None if bias_std is None else bias_std.square())
    return mean, var


class VariationalLinear(nn.Module):
    """A dense layer with the mean-field Gaussian q over its weight [out, in] and bias [out]
    (σ = softplus(ρ)). In train mode it samples pre-activations with the local
    reparameterisation trick (module docstring); in eval mode it is the mean layer (θ = μ)."""

    def __init__(self, linear: nn.Linear, init_std: float) -> None:
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        w = linear.weight.detach()
        self.weight_mu = nn.Parameter(w.clone())
        self.weight_rho = nn.Parameter(torch.full_like(w, softplus_inverse(init_std)))
        if linear.bias is not None:
            b = linear.bias.detach()
            self.bias_mu = nn.Parameter(b.clone())
            self.bias_rho = nn.Parameter(torch.full_like(b, softplus_inverse(init_std)))
        else:
            self.register_parameter("bias_mu", None)
            self.register_parameter("bias_rho", None)

    def weight_std(self) -> Tensor:
        return F.softplus(self.weight_rho)

    def bias_std(self) -> Tensor | None:
        return None if self.bias_rho is None else F.softplus(self.bias_rho)

    def forward(self, x: Tensor) -> Tensor:
        if not self.training:
            return F.linear(x, self.weight_mu, self.bias_mu)
        mean, var = local_reparameterisation_moments(x, self.weight_mu, self.weight_std(), self.bias_mu, self.bias_std())
        return mean + var.sqrt() * torch.randn_like(mean)

    def kl(self, prior_std: float) -> Tensor:
        """KL(q ‖ N(0, s²)) of this layer's weights and bias."""
        kl = gaussian_kl(self.weight_mu, self.weight_std(), prior_std)
        if self.bias_mu is not None:
            kl = kl + gaussian_kl(self.bias_mu, self.bias_std(), prior_std)  # type: ignore[arg-type]
        return kl

    def to_linear(self) -> nn.Linear:
        """The mean layer: an nn.Linear with weight μ_W and bias μ_b."""
        linear = nn.Linear(self.in_features, self.out_features, bias=self.bias_mu is not None,
                           device=self.weight_mu.device, dtype=self.weight_mu.dtype)
        with torch.no_grad():
            linear.weight.copy_(self.weight_mu)
            if self.bias_mu is not None:
                linear.bias.copy_(self.bias_mu)
        return linear


def _replace_modules(net: nn.Module, kind: type, convert) -> nn.Module:
    """`net` with every submodule of type `kind` replaced (in place) by convert(module); the root too."""
    if isinstance(net, kind):
        return convert(net)
    for name, module in list(net.named_modules()):
        if isinstance(module, kind) and name:
            parent_name, _, attr = name.rpartition(".")
            setattr(net.get_submodule(parent_name), attr, convert(module))
    return net


class DenseGaussian(NamedTuple):
    """The fitted q of one dense layer: weight mean and std [out, in], bias mean and std [out]
    (None without a bias)."""

    weight_mean: Tensor
    weight_std: Tensor
    bias_mean: Tensor | None
    bias_std: Tensor | None


class MFVI(AnalyticPredictive, NetworkPosterior):
    """Mean-field Gaussian variational posterior over the dense layers (module docstring).

    Args (beyond `NetworkPosterior`'s shared ones):
        model_fn: factory of a fresh network with at least one nn.Linear layer; its
            initialisation is the starting μ.
        model: instead, an already-trained network (copied): μ starts at its weights and `fit`
            trains q from there with `train`.
        n_samples: default S of weight samples for `predict`.
        prior_std: s, the prior N(0, s²) on every dense weight and bias.
        kl_weight: β, the weight of KL(q ‖ p)/N in the loss (1 is the ELBO; < 1 a tempered one).
        kl_anneal_epochs: K > 0 raises the KL weight linearly, β (e + 1)/K in epoch e, over the
            first K epochs; 0 uses β from the start.
        init_std: σ of q at the start of training (ρ = softplus⁻¹(init_std); 0.05 is ρ ≈ −3, as
            in Blundell et al.'s experiments).
        train: the training (epochs, lr, batch size, optimizer, schedule, early stopping).
        predictive: "sampled" (S weight samples through the network) or "analytic" (moment
            propagation and the mean-field softmax approximation, module docstring; `predict` then draws its
            S samples from the propagated Gaussian over the outputs).

    Fitted attributes: `model_` (the mean network, θ = μ, eval mode), `std_` ({parameter name of
    model_: σ} for every dense weight and bias), `seed_`, `device_`, `likelihood_`, `noise_`
    (σ², regression only; None for classification).
    """

    options = ("prior_std", "kl_weight", "kl_anneal_epochs", "init_std", "predictive")
    _fitted_attribute = "std_"

    def __init__(
        self,
        model_fn: ModelFn | None = None,
        *,
        n_samples: int = 30,
        prior_std: float = 1.0,
        kl_weight: float = 1.0,
        kl_anneal_epochs: int = 0,
        init_std: float = 0.05,
        predictive: str = "sampled",
        **shared: Unpack[NetworkArgs],
    ) -> None:
        super().__init__(model_fn, n_samples=n_samples, **shared)
        check_positive_number("prior_std", prior_std)
        if isinstance(kl_weight, bool) or not isinstance(kl_weight, (int, float)) or not kl_weight >= 0:
            raise ConfigError(f"kl_weight: expected a non-negative number, got {kl_weight!r}")
        check_non_negative_int("kl_anneal_epochs", kl_anneal_epochs)
        check_positive_number("init_std", init_std)
        check_choice("predictive", predictive, PREDICTIVES)
        self.predictive = predictive
        self.prior_std, self.kl_weight, self.kl_anneal_epochs, self.init_std = prior_std, kl_weight, kl_anneal_epochs, init_std
        self.model_: nn.Module | None = None
        self.std_: dict[str, Tensor] | None = None

    # ------------------------------------------------------------------ fitting
    def _fit_network(self, x: Tensor, y: Tensor) -> None:
        """Wrap every nn.Linear in a VariationalLinear, maximise the ELBO, keep the mean
        network and σ; fit σ² for regression."""
        seeds = torch.Generator().manual_seed(self.seed_)
        train_seed, self._sample_seed = (int(s) for s in torch.randint(0, 2**62, (2,), generator=seeds))
        net = self._network(self.seed_)
        if not any(isinstance(m, nn.Linear) for m in net.modules()):
            raise ConfigError(f"{self._network_argument}: MFVI needs a network with at least one nn.Linear layer, found none")
        if self.predictive == "analytic":
            check_propagatable(net)
        x = inputs_for(net, x)
        init_std = self.init_std
        variational = _replace_modules(net, nn.Linear, lambda m: VariationalLinear(m, init_std))
        log_noise = self._log_noise(y) if self.likelihood_ == "gaussian" else None
        variational = self._train(variational, x, y, self.train_config, seed=train_seed, log_noise=log_noise)
        self.std_ = {}
        for name, module in variational.named_modules():
            if isinstance(module, VariationalLinear):
                prefix = f"{name}." if name else ""
                self.std_[prefix + "weight"] = module.weight_std().detach()
                if module.bias_rho is not None:
                    self.std_[prefix + "bias"] = module.bias_std().detach()  # type: ignore[union-attr]
        self.model_ = _replace_modules(variational, VariationalLinear, VariationalLinear.to_linear).eval()
        self._cache: dict[int, dict[str, Tensor]] = {}
        if log_noise is not None:
            self.noise_ = float(self._noise_variance(log_noise.detach(), target_scale(y)))

    def kl_divergence(self, net: nn.Module) -> Tensor:
        """KL(q ‖ p) of every VariationalLinear in `net` (a scalar)."""
        return torch.stack([m.kl(self.prior_std) for m in net.modules() if isinstance(m, VariationalLinear)]).sum()

    def _log_noise(self, y: Tensor) -> Tensor:
        """λ = log σ², a trainable scalar on the training device, starting at log s_y²."""
        return torch.tensor(math.log(target_scale(y)), dtype=torch.float32, device=self.device_, requires_grad=True)

    @staticmethod
    def _noise_variance(log_noise: Tensor, scale: float) -> Tensor:
        """σ² = exp(λ), floored at NOISE_FLOOR_FRACTION · s_y² (`scale`)."""
        return torch.exp(log_noise).clamp_min(NOISE_FLOOR_FRACTION * scale)

    def _data_loss(self, output: Tensor, y: Tensor, noise: Tensor | None = None, prior_share: float = 0.0, s0: float = 0.0) -> Tensor:
        """−(1/|B|) Σ log p(y_n | x_n, θ_n) up to a constant: the cross-entropy, or with the noise
        variance σ² = `noise` the Gaussian NLL and the noise prior's share per item (module
        docstring; `prior_share` = ν/N, `s0` = s0²)."""
        if self.likelihood_ == "categorical":
            return F.cross_entropy(output, y.long())
        if output.numel() != y.numel():
            raise ShapeError(f"{self._network_argument}: for regression expected one output per item, got [N, ...] = {tuple(output.shape[1:])}")
        mse = F.mse_loss(output.reshape(y.shape), y)
        if noise is None:
            return 0.5 * mse
        return 0.5 * mse / noise + 0.5 * (1 + prior_share) * torch.log(noise) + prior_share * s0 / (2 * noise)

    def _train(self, model: nn.Module, x: Tensor, y: Tensor, config: TrainConfig, *, seed: int, log_noise: Tensor | None = None) -> nn.Module:
        """Minimise −ELBO/N (module docstring) with `training.train`: its split, data order,
        batches, optimiser, schedule and early stopping, the KL term added to each mini-batch's
        loss with weight β_e for epoch e (set at the end of the epoch before) and no weight decay
        on the variational parameters or on λ = log σ² (regression), which is trained with them
        (early stopping restores the network's best weights, not λ)."""
        n = training_items(x.shape[0], config)
        scale = target_scale(y)
        prior_share, s0 = NOISE_PRIOR_COUNT / n, NOISE_PRIOR_FRACTION * scale

        def beta(epoch: int) -> float:
            return self.kl_weight * (min(1.0, (epoch + 1) / self.kl_anneal_epochs) if self.kl_anneal_epochs else 1.0)

        weight = [beta(0)]

        def loss(output: Tensor, target: Tensor) -> Tensor:
            noise = None if log_noise is None else self._noise_variance(log_noise, scale)
            data = self._data_loss(output, target, noise, prior_share, s0)
            return data + weight[0] * self.kl_divergence(model) / n if weight[0] > 0 else data

        def next_epoch(epoch: int, _: nn.Module) -> None:
            weight[0] = beta(epoch + 1)

        variational = [p for m in model.modules() if isinstance(m, VariationalLinear) for p in m.parameters(recurse=False)]
        variational += [log_noise] if log_noise is not None else []
        return train(model, x, y, config, seed=seed, device=self.device_, loss_fn=loss, on_epoch_end=next_epoch,
                     param_groups=exempt_from_weight_decay(model, variational))  # fmt: skip

    # ------------------------------------------------------------------ the fitted q
    def mean_std(self) -> dict[str, DenseGaussian]:
        """{dense layer's module name in `model_` ("" for a network that is one layer): its
        DenseGaussian (μ_W, σ_W [out, in], μ_b, σ_b [out])}."""
        self._check_fitted()
        out = {}
        for name, module in self.model_.named_modules():  # type: ignore[union-attr]
            if isinstance(module, nn.Linear):
                prefix = f"{name}." if name else ""
                bias = module.bias is not None
                out[name] = DenseGaussian(module.weight.detach(), self.std_[prefix + "weight"],  # type: ignore[index]
                                          module.bias.detach() if bias else None,
                                          self.std_[prefix + "bias"] if bias else None)  # type: ignore[index]
        return out

    def _move(self, device: torch.device) -> None:
        """Move the mean network, σ and the noise; the weight samples are drawn on the CPU from
        the seeded generator, so they do not change."""
        self.model_ = self.model_.to(device)  # type: ignore[union-attr]
        self.std_ = {k: v.to(device) for k, v in self.std_.items()}  # type: ignore[union-attr]
        self._cache = {}

    def _sample_generator(self, n_samples: int) -> torch.Generator:
        """A CPU generator seeded by (seed_, S) (through the fitted sample seed)."""
        mixed = (self._sample_seed * 0x9E3779B97F4A7C15 + n_samples * 0xBF58476D1CE4E5B9) % (2**63 - 1)
        return torch.Generator().manual_seed(mixed)

    def sample_weights(self, n_samples: int) -> dict[str, Tensor]:
        """S weight samples {parameter name: [S, *shape]} of every dense weight and bias,
        θ_s = μ + σ ⊙ ε_s, ε_s ~ N(0, I) drawn on the CPU in `std_` order; cached per S."""
        self._check_fitted()
        if n_samples not in self._cache:
            generator = self._sample_generator(n_samples)
            params = dict(self.model_.named_parameters())  # type: ignore[union-attr]
            samples = {}
            for name, std in self.std_.items():  # type: ignore[union-attr]
                eps = torch.randn(n_samples, *std.shape, generator=generator).to(std)
                samples[name] = params[name].detach() + std * eps
            self._cache = {n_samples: samples}
        return self._cache[n_samples]

    def output_moments(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Mean and variance [N, C] (regression [N, 1] or [N]) of the network's outputs under q,
        by moment propagation (module docstring), whatever `predictive` says."""
        self._check_fitted()
        net = self.model_
        x = inputs_for(net, as_tensor("x", x)).to(next(net.parameters()).device)  # type: ignore[union-attr, arg-type]
        return propagate_in_chunks(net, x, {name: std.square() for name, std in self.std_.items()})  # type: ignore[arg-type, union-attr]

    def predict(self, x: Tensor, n_samples: int | None = None) -> Predictive | GaussianPredictive:
        """Predictive [S, N, C] of S weight samples shared by every x (pool-consistent); for
        regression a GaussianPredictive with mean [S, N] (each sample's output) and var [S, N] = σ².
        With predictive="analytic", S draws from the propagated Gaussian over the outputs."""
        self._check_fitted()
        if self.predictive == "analytic":
            return self._analytic_predict(x, n_samples)
        s = self._sample_count(n_samples)
        samples = self.sample_weights(s)
        net = self.model_
        fixed = {k: v for k, v in net.named_parameters() if k not in samples}  # type: ignore[union-attr]
        fixed |= dict(net.named_buffers())  # type: ignore[union-attr]
        x = inputs_for(net, as_tensor("x", x)).to(next(net.parameters()).device)  # type: ignore[union-attr, arg-type]
        with torch.no_grad():
            logits = vmap(lambda p: functional_call(net, p | fixed, (x,)))(samples)
        return self._predictive(logits)
