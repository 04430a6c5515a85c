"""Laplace approximations of a network's weights, last layer or whole network (MacKay 1992;
Daxberger et al. 2021; Immer et al. 2021).

Around the MAP network, the weights θ = [vec(W), b] of the LAST nn.Linear layer get the Gaussian
posterior N(θ_MAP, (GGN + δI)⁻¹) (curvature maths in `_curvature.py`); everything before that
layer stays at its MAP value and maps an input x to features φ(x) [D].

Predictive (linearised / GLM; exact for the last layer, where logits are linear in θ):
    f(x) ~ N(f_map(x), f_var(x)),  f_var = J Σ Jᵀ,  J = ∂f/∂θ = φ̃ᵀ ⊗ I_C,  φ̃ = [φ, 1].
    predict_proba, link="probit":  p ≈ softmax(f_map / sqrt(1 + π/8 · diag f_var))
        (the same as laplace-torch's `la(x, pred_type="glm", link_approx="probit")`).
    predict: S weight samples θ_s ~ N(θ_MAP, Σ) are drawn ONCE per call from a generator seeded
        with `seed`, and every candidate's logits are φ̃(x)ᵀθ_s. For the last layer this is
        exactly the GLM predictive in distribution (each f(x) ~ N(f_map, J Σ Jᵀ), the full C×C
        covariance), and one θ_s is shared by all candidates, so the samples are jointly
        consistent across a pool (BatchBALD needs this) and do not depend on batching.
    predict_proba, link="mc": the mean of `predict`'s S softmax samples.
    The probit is an approximation of that mean: where f_var is large the two differ (up to 0.27
    in a probability over a grid around two moons, a 2-32-2 tanh network, kron or full; 0.07
    diag), so a study's accuracy and NLL (from `predict_proba`) and its BALD scores (from
    `predict`) read two predictives unless link="mc".
    predictive="analytic": `predict` draws its S samples from the logits' Gaussian with the
        diagonal of f_var, f_s = f_map + sqrt(diag f_var) ⊙ ε_s (one ε [S, C] per call from a
        seeded generator, shared by every item: pool-consistent), instead of weight samples.
        This is the sampling-free moment-propagation predictive (`_moment_propagation`) of a
        last-layer posterior: the features are deterministic, so propagating the Gaussian over
        the last layer's weights gives exactly f ~ N(f_map, diag f_var) (for hessian="diag",
        diag f_var = φ² V_Wᵀ + v_b, the `linear_moments` rule), and `predict_proba` is the probit
        formula above, unchanged; the sampled predictive already is closed-form there. It drops
        the correlations between classes that the weight samples carry (and requires link="probit").

Prior precision δ: a float, or "marglik" to maximise the Laplace evidence
    log p(D | δ) ≈ log p(D | θ_MAP) − ½ (log det(GGN + δI) − P log δ + δ ‖θ_MAP‖²)
(laplace-torch's `log_marginal_likelihood`, log p(D | θ_MAP) = −Σ_n CE(f_map(x_n), y_n)).

>>> import torch
>>> from torch import nn
>>> net = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 3))
>>> x, y = torch.randn(40, 2), torch.randint(0, 3, (40,))
>>> la = Laplace(model=net, hessian="kron", prior_precision=1.0, seed=0).fit(x, y)
>>> la.predict(x[:5], n_samples=10).probs.shape
torch.Size([10, 5, 3])

Regression (float targets y [N]; the last nn.Linear has ONE output; `likelihood` below): with
y | θ ~ N(θᵀφ̃(x), σ²) the last-layer posterior is exact Bayesian linear regression on the features,
    precision = φ̃ᵀφ̃ / σ² + δI  (the GGN, here the exact Hessian, of the Gaussian NLL; `_curvature`),
    f(x) ~ N(f_map(x), f_var(x)),  f_var(x) = φ̃(x)ᵀ Σ φ̃(x),   y | f ~ N(f, σ²),
σ² fitted after training from the MAP network's training residuals (`gaussian_likelihood.fit_noise_variance`)
and kept fixed (the evidence, with log p(D | θ_MAP) = Σ_n log N(y_n; f_map(x_n), σ²), tunes δ only).
`predict` returns a GaussianPredictive: mean[s, n] = φ̃(x_n)ᵀθ_s for the same S weight samples as
for classification (jointly consistent across a pool, for batch selectors), var = σ², and the
exact latent_mean = f_map, latent_var = f_var [N], from which the scores take closed forms (the
samples are Monte Carlo draws of that latent, not quadrature nodes). `predict_mean_var` returns
(f_map, f_var) in closed form, (f_map, f_var + σ²) with observation_noise=True; `predict_proba` raises.

Whole network (subset="all"; laplace-torch's subset_of_weights="all"): every nn.Linear and
nn.Conv2d tensor gets N(θ*, (φH + diag δ)⁻¹), H the KFAC or diagonal GGN of the whole network
(`_kfac`) or, for hessian="full", the exact GGN in its N·C-row dual form (`_gram`), δ one precision per parameter tensor, φ = 1/σ² for regression. Predictive: the
linearised network (`_glm`), f(x) ~ N(f(x; θ*), J(x) Σ J(x)ᵀ): `predict_proba` the probit
formula above on its diagonal (laplace-torch's `la(x, pred_type="glm", link_approx="probit")`),
`predict` S linearised function samples f(x; θ*) + J(x)(θ_s − θ*) with θ_s drawn once per S from
`seed` (shared by every candidate, so jointly consistent across a pool and batching-invariant).
The evidence is `_kfac.log_marginal_likelihood` (per-tensor δ, and σ for regression);
prior_precision="tangent" (hessian="full", classification) takes one δ from the evidence of the
tangent linear model J(x)w at its own mode instead, and the GGN there (`_tangent`).
The fit, the moments and the deviation samples of this posterior: `_network_laplace`.
likelihood="heteroscedastic" (two outputs, the natural parameters; either subset, KFAC or diag;
the linearised predictive of the mean and the variance): `_hetero_laplace`.

Online marginal likelihood (prior_precision="online", or a `train` with `marglik` set): the
network is trained by `activebayes.marglik.train_marglik`, which learns δ per parameter tensor
(and σ for regression) by the evidence while training; the fitted posterior then uses those δ
(for the last layer, the learnt δ of its weight and bias) and σ² (`marglik_` keeps the run).
"""

from __future__ import annotations

import dataclasses
import math
from enum import StrEnum
from typing import Unpack

import torch
from torch import Tensor, nn

from activebayes.errors import ConfigError, ShapeError, classification_only, regression_only
from activebayes.gaussian_likelihood import fit_noise_variance, gaussian_nll, regression_output
from activebayes.likelihoods import HETEROSCEDASTIC
from activebayes.marglik import MarglikConfig, MarglikFit, train_marglik
from activebayes.posteriors._curvature import LastLayerGaussian, log_marginal_likelihood, optimise_prior_precision
from activebayes.posteriors._hetero_laplace import fit_heteroscedastic, heteroscedastic_mean_var, heteroscedastic_predict
from activebayes.posteriors._kfac import log_marginal_likelihood as network_log_marginal_likelihood
from activebayes.posteriors._moment_propagation import PREDICTIVES, AnalyticPredictive, probit_softmax
from activebayes.posteriors._network import (LIKELIHOODS, REGRESSION_LIKELIHOODS, ModelFn, NetworkArgs, NetworkPosterior, check_choice,
                                             check_positive_number, inputs_for)  # fmt: skip
from activebayes.posteriors._network_laplace import fit_whole_network, network_deviations, network_moments, sampled_outputs
from activebayes.posteriors._tangent import TangentFit
from activebayes.predictive import GaussianPredictive, Predictive
from activebayes.training import TrainConfig, train

_BATCH = 4096  # rows per forward pass when extracting features
MAX_MARGLIK_FITS = 10  # prior_precision="online": at most this many Laplace fits (each K = 10 hyper-steps) per training run


class Hessian(StrEnum):
    KRON = "kron"
    DIAG = "diag"
    FULL = "full"


class LinkApproximation(StrEnum):
    """How `predict_proba` approximates E[softmax(f)] under f ~ N(f_map, f_var) (laplace-torch's
    `link_approx`): the probit approximation, or the mean of `predict`'s Monte Carlo samples."""

    PROBIT = "probit"
    MC = "mc"


def last_linear(model: nn.Module) -> nn.Linear:
    """The last nn.Linear registered in `model` (the layer the Laplace posterior covers)."""
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    if not linears:
        raise ConfigError(f"model: expected a network whose output layer is an nn.Linear, got {type(model).__name__} with none")
    return linears[-1]


@torch.no_grad()
def features_and_logits(model: nn.Module, layer: nn.Linear, x: Tensor) -> tuple[Tensor, Tensor]:
    """φ [N, D] (the input of `layer`) and the logits [N, C], from one forward pass per chunk."""
    captured: list[Tensor] = []
    handle = layer.register_forward_hook(lambda _m, inputs, _out: captured.append(inputs[0]))
    try:
        logits = [model(chunk) for chunk in x.split(_BATCH)]
    finally:
        handle.remove()
    if len(captured) != len(logits):
        raise ConfigError("model: the last nn.Linear must run exactly once per forward pass")
    return torch.cat(captured), torch.cat(logits)


class Laplace(AnalyticPredictive, NetworkPosterior):
    """Last-layer or whole-network Laplace posterior (see the module docstring for the maths).

    Args (beyond `NetworkPosterior`'s shared ones):
        model_fn: factory of a fresh network (trained by `fit` with `train`).
        model: instead, an already-trained network to fit around post hoc (copied, never
            trained or mutated).
        subset: "last_layer" or "all" (every nn.Linear and nn.Conv2d; laplace-torch's
            subset_of_weights).
        hessian: "kron" (KFAC), "diag" or "full" GGN ("full" with subset="all": the dual form, few items).
        link: "probit" or "mc", how `predict_proba` approximates the softmax's expectation
            (`LinkApproximation`).
        prior_precision: δ > 0; for subset="all" also one δ per trainable parameter tensor (a
            list); "marglik": the δ that maximises the evidence (the learnt ones when the network
            was trained with `train.marglik`, else one δ found post hoc); "online": learn them by
            online marginal-likelihood training (`train.marglik`, or when that is None
            MarglikConfig() with this hessian and at most MAX_MARGLIK_FITS Laplace fits; not with
            `model`; with hessian="full" the learnt weight and bias precisions must agree);
            "tangent" (subset="all", hessian="full", classification): one δ from the evidence of
            the tangent linear model at its own mode (`_tangent`; Antorán et al. 2022).
        predictive: "sampled" (weight samples) or "analytic" (`predict` samples the logits'
            diagonal Gaussian; module docstring); "analytic" requires link="probit".
        n_samples: default S of weight samples for `predict`.
        seed: seeds the network initialisation, training and the weight samples.
        likelihood: "categorical", "gaussian" (regression: the last nn.Linear has one output),
            "heteroscedastic" (two outputs, the natural parameters; `_hetero_laplace`), or None to
            infer it from y's dtype at `fit` (float targets -> gaussian).

    Fitted attributes: `model_`, `layer_` (None for subset="all"), `posterior_` (a
    LastLayerGaussian, or a `_glm.NetworkGaussian`), `prior_precision_` (a float, a (δ_W, δ_b)
    tensor for a learnt last layer, or δ [L] for subset="all"), `log_likelihood_`, `marglik_`
    (the `marglik.MarglikFit` of online training, else None), `likelihood_`, `noise_` (σ²,
    regression only; None for classification), `seed_`, `device_`.
    """

    options = ("subset", "hessian", "link", "prior_precision", "predictive")
    likelihoods = (*LIKELIHOODS, HETEROSCEDASTIC)  # heteroscedastic: `_hetero_laplace`
    _fitted_attribute = "posterior_"

    def __init__(
        self,
        model_fn: ModelFn | None = None,
        *,
        n_samples: int = 100,
        subset: str = "last_layer",
        hessian: str = "kron",
        link: str = "probit",
        prior_precision: float | list[float] | str = "marglik",
        predictive: str = "sampled",
        **shared: Unpack[NetworkArgs],
    ) -> None:
        super().__init__(model_fn, n_samples=n_samples, **shared)
        check_choice("subset", subset, ("last_layer", "all"))
        check_choice("hessian", hessian, [h.value for h in Hessian])
        check_choice("link", link, [a.value for a in LinkApproximation])
        if isinstance(prior_precision, (list, tuple)) and subset == "all" and prior_precision:
            for value in prior_precision:
                check_positive_number("prior_precision", value)
        elif prior_precision not in ("marglik", "online", "tangent"):
            check_positive_number("prior_precision", prior_precision)
        if prior_precision == "tangent" and (subset, hessian) != ("all", "full"):
            raise ConfigError(f"prior_precision: 'tangent' is the whole network's exact GGN; use subset='all' and hessian='full', "
                              f"got subset={subset!r}, hessian={hessian!r}")
        if prior_precision == "online" and self.model is not None:
            raise ConfigError("prior_precision: 'online' learns the precisions while training, and model= is trained already; "
                              "use 'marglik' or a number")
        check_choice("predictive", predictive, PREDICTIVES)
        if predictive == "analytic" and link != "probit":
            raise ConfigError(f"link: predictive='analytic' predicts with the probit approximation, got link={link!r}; use link='probit'")
        self.predictive = predictive
        self.subset = subset
        self.hessian, self.link = Hessian(hessian), LinkApproximation(link)
        self.prior_precision = prior_precision
        self.model_: nn.Module | None = None
        self.posterior_: LastLayerGaussian | None = None
        self.prior_precision_: float | None = None
        self.log_likelihood_: Tensor | None = None
        self.layer_: nn.Linear | None = None
        self.marglik_: MarglikFit | None = None
        self._tangent: TangentFit | None = None

    # ------------------------------------------------------------------ fitting
    def _fit_network(self, x: Tensor, y: Tensor) -> None:
        """Train (model_fn; by online marglik when `_training` says so) or copy (model) the network,
        then fit the last-layer or whole-network posterior around it (x [N, ...]; y integer labels
        [N], or float targets [N] for regression)."""
        if self.likelihood_ == HETEROSCEDASTIC:
            return fit_heteroscedastic(self, x, y)
        dev = self.device_
        net = self._network(self.seed_)
        x = inputs_for(net, x)
        self.marglik_, config = None, self._training()
        if self.model is None and config.marglik is not None:
            self.marglik_ = train_marglik(net, x, y, config, seed=self.seed_, device=dev)
            net = self.marglik_.model
        elif self.model is None:
            net = train(net, x, y, config, seed=self.seed_, device=dev)
        else:
            net = net.to(dev)
        net.eval()
        self._trainable = [id(p) for p in net.parameters() if p.requires_grad]
        self._samples: dict[int, tuple[Tensor, Tensor]] = {}
        if self.subset == "all":
            fit_whole_network(self, net, x.to(dev), y.to(dev))
            return
        for p in net.parameters():
            p.requires_grad_(False)
        layer = last_linear(net)
        phi, logits = features_and_logits(net, layer, x.to(dev))
        if self.likelihood_ == "gaussian":
            self._fit_regression(net, layer, phi, logits, y.to(dev))
            return
        if logits.dim() != 2 or not torch.allclose(logits, nn.functional.linear(phi, layer.weight, layer.bias), atol=1e-4, rtol=1e-4):
            raise ConfigError(f"{self._network_argument}: expected the last nn.Linear to produce the network's logits [N, C] "
                              "(nothing may follow it)")
        if layer.bias is None:
            raise ConfigError(f"{self._network_argument}: expected the last nn.Linear to have a bias")
        work = torch.float64
        y = y.to(dev).long()
        if y.min() < 0 or y.max() >= logits.shape[1]:
            raise ShapeError(f"y: expected labels in [0, {logits.shape[1] - 1}], got range [{int(y.min())}, {int(y.max())}]")
        logits64 = logits.to(work)
        probs = torch.softmax(logits64, dim=1)
        mean = torch.cat([layer.weight.reshape(-1), layer.bias]).to(work)
        self.posterior_ = LastLayerGaussian.fit(self.hessian.value, phi.to(work), probs, mean)
        self.log_likelihood_ = -nn.functional.cross_entropy(logits64, y, reduction="sum")
        self.model_, self.layer_ = net, layer
        self._fit_prior_precision()

    def _training(self) -> TrainConfig:
        """`train`, with online marglik for prior_precision="online" when `train` sets none: MarglikConfig()
        on this hessian (last layer: kron for "full"), a Laplace fit every F = ⌈epochs / MAX_MARGLIK_FITS⌉ epochs
        (a round's sized training runs 50 to hundreds of epochs of one or a few steps, and a fit of
        a CNN's KFAC costs as much as several epochs there)."""
        config = self.train_config
        if self.prior_precision == "online" and config.marglik is None:
            every = max(1, math.ceil(config.epochs / MAX_MARGLIK_FITS))
            hessian = "kron" if self.hessian == Hessian.FULL and self.subset != "all" else self.hessian.value
            marglik = MarglikConfig(hessian=hessian, frequency=every)
            config = dataclasses.replace(config, marglik=marglik)
        return config

    def _learnt(self, tensors: list[Tensor]) -> Tensor | None:
        """The precisions online training learnt for these parameter tensors (prior_precision
        "marglik" or "online" after marglik training), else None."""
        if self.marglik_ is None or self.prior_precision not in ("marglik", "online"):
            return None
        position = {pid: i for i, pid in enumerate(self._trainable)}
        return self.marglik_.prior_precision[[position[id(p)] for p in tensors]].to(self.device_)

    def _fit_prior_precision(self) -> None:
        learnt = self._learnt([self.layer_.weight, self.layer_.bias])  # type: ignore[union-attr]
        if learnt is not None:
            self.prior_precision_ = learnt if float(learnt[0]) != float(learnt[1]) else float(learnt[0])
        elif self.prior_precision == "marglik":
            self.prior_precision_ = optimise_prior_precision(self.posterior_)
        else:
            self.prior_precision_ = float(self.prior_precision)

    def _fit_regression(self, net: nn.Module, layer: nn.Linear, phi: Tensor, outputs: Tensor, y: Tensor) -> None:
        """The Gaussian-likelihood last-layer posterior (module docstring) around the MAP network."""
        if layer.out_features != 1:
            raise ConfigError(f"{self._network_argument}: for regression expected the last nn.Linear to have one output, "
                              f"got {layer.out_features}")
        if layer.bias is None:
            raise ConfigError(f"{self._network_argument}: expected the last nn.Linear to have a bias")
        f_map = regression_output(outputs, 0)
        if not torch.allclose(f_map, nn.functional.linear(phi, layer.weight, layer.bias)[:, 0], atol=1e-4, rtol=1e-4):
            raise ConfigError(f"{self._network_argument}: expected the last nn.Linear to produce the network's output [N, 1] or [N] "
                              "(nothing may follow it but a reshape)")
        work = torch.float64
        f64, y64 = f_map.to(work), y.to(work)
        noise = self.marglik_.sigma_noise**2 if self.marglik_ is not None else fit_noise_variance(f64 - y64, y64)  # type: ignore[operator]
        mean = torch.cat([layer.weight.reshape(-1), layer.bias]).to(work)
        self.posterior_ = LastLayerGaussian.fit_regression(self.hessian.value, phi.to(work), noise, mean)
        self.log_likelihood_ = -y64.shape[0] * gaussian_nll(f64, y64, math.log(noise))
        self.noise_ = noise
        self.model_, self.layer_ = net, layer
        self._fit_prior_precision()

    def _move(self, device: torch.device) -> None:
        """Move the network (and `layer_`, a submodule), the last-layer Gaussian and the
        log-likelihood; the weight noise is drawn on the CPU, so the samples do not change."""
        self.model_ = self.model_.to(device)  # type: ignore[union-attr]
        self.posterior_ = self.posterior_.to(device)  # type: ignore[union-attr]
        self.log_likelihood_ = self.log_likelihood_.to(device)  # type: ignore[union-attr]
        if isinstance(self.prior_precision_, Tensor):
            self.prior_precision_ = self.prior_precision_.to(device)
        self._samples = {}

    def log_marginal_likelihood(self, prior_precision: float | Tensor | list[float] | None = None,
                                sigma_noise: float | Tensor | None = None) -> Tensor:
        """The Laplace evidence (module docstring) at δ = `prior_precision` (default the fitted δ;
        subset="all": one value or one per parameter tensor) and, for subset="all" regression,
        σ = `sigma_noise` (default sqrt(noise_)); differentiable in both when they are tensors."""
        self._check_fitted()
        delta = self.prior_precision_ if prior_precision is None else prior_precision
        if self._tangent is not None:  # the tangent model's own evidence, one δ
            return self._tangent.evidence if prior_precision is None else self._tangent.evidence_at(prior_precision)
        if self.layer_ is None:  # subset="all", or a heteroscedastic posterior
            sigma = sigma_noise if sigma_noise is not None else None if self.noise_ is None else math.sqrt(self.noise_)
            return network_log_marginal_likelihood(self.posterior_.curvature, delta, sigma)  # type: ignore[union-attr, arg-type]
        if sigma_noise is not None:
            raise ConfigError("sigma_noise: the last-layer evidence keeps the fitted σ²; use subset='all' to vary it")
        return log_marginal_likelihood(self.log_likelihood_, self.posterior_, delta)  # type: ignore[arg-type]

    # --------------------------------------------------------------- prediction
    def _features(self, x: Tensor) -> tuple[Tensor, Tensor]:
        self._check_fitted()
        dev = next(self.model_.parameters()).device  # type: ignore[union-attr]
        return features_and_logits(self.model_, self.layer_, x.to(dev))  # type: ignore[arg-type]

    def functional_variance(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """(f_map [N, C], f_var [N, C, C]) of the linearised predictive."""
        if self.layer_ is None:
            return network_moments(self, x, diagonal=False)
        phi, logits = self._features(x)
        f_var = self.posterior_.functional_variance(phi, self.prior_precision_)  # type: ignore[union-attr, arg-type]
        return logits, f_var.to(logits.dtype)

    def output_moments(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """(f_map, diag f_var), each [N, C] (regression [N, 1] or [N]): the logits' Gaussian marginals."""
        if self.layer_ is None:
            return network_moments(self, x, diagonal=True)
        phi, logits = self._features(x)
        var = self.posterior_.functional_variance(phi, self.prior_precision_, diagonal=True)  # type: ignore[union-attr, arg-type]
        return logits, var.to(logits.dtype).reshape(logits.shape)

    def predict_proba(self, x: Tensor) -> Tensor:
        """Posterior predictive mean [N, C]: probit approximation, or the MC mean for link="mc"."""
        if self.link == LinkApproximation.MC:
            return super().predict_proba(x)
        self._check_fitted()
        if self.likelihood_ in REGRESSION_LIKELIHOODS:
            raise regression_only("predict_proba")
        return probit_softmax(*self.output_moments(x))

    def weight_samples(self, n_samples: int | None = None) -> tuple[Tensor, Tensor]:
        """S draws θ_s ~ N(θ_MAP, Σ) of the last layer, as (W_s [S, C, D], b_s [S, C]); the same
        for every call and batch.

        z [S, P] is drawn on the CPU from torch.Generator().manual_seed(seed_) and mapped to
        θ_s = θ_MAP + Σ^{1/2} z_s (so CPU and CUDA see the same samples).
        """
        self._check_fitted()
        s = self._sample_count(n_samples)
        if s not in self._samples:
            post = self.posterior_
            generator = torch.Generator().manual_seed(self.seed_)
            noise = torch.randn(s, post.n_params, generator=generator, dtype=torch.float64)  # type: ignore[union-attr]
            theta = post.mean + post.sample_deviations(noise.to(post.mean.device), self.prior_precision_)  # type: ignore[union-attr, arg-type]
            c, d = post.n_classes, post.n_features  # type: ignore[union-attr]
            dtype = self.layer_.weight.dtype
            self._samples = {s: (theta[:, : c * d].reshape(s, c, d).to(dtype), theta[:, c * d :].to(dtype))}
        return self._samples[s]

    def network_deviations(self, n_samples: int | None = None) -> list[Tensor]:
        """subset="all": S draws θ_s − θ* ~ N(0, Σ), one tensor [S, *θ_l.shape] per parameter tensor;
        z [S, P] from torch.Generator().manual_seed(seed_) on the CPU (`_network_laplace`)."""
        return network_deviations(self, n_samples)

    def predict(self, x: Tensor, n_samples: int | None = None) -> Predictive | GaussianPredictive:
        """Predictive [S, N, C] from S weight samples shared by all x: softmax(W_s φ(x) + b_s) for the
        last layer; for subset="all", softmax(f(x; θ*) + J(x)(θ_s − θ*)), the linearised network.

        Regression: GaussianPredictive with mean [S, N] (those outputs), var = σ², and the exact
        latent_mean = f_map(x), latent_var = f_var(x) [N] (module docstring).
        predictive="analytic": softmax(f_map + sqrt(diag f_var) ⊙ ε_s), ε [S, C] seeded (module docstring).
        """
        if self.predictive == "analytic":
            self._check_fitted()
            return self._analytic_predict(x, n_samples)
        if self.likelihood_ == HETEROSCEDASTIC:
            return heteroscedastic_predict(self, x, n_samples)
        if self.subset == "all":
            logits = sampled_outputs(self, x, n_samples)
        else:
            weight, bias = self.weight_samples(n_samples)
            phi, _ = self._features(x)
            logits = torch.einsum("nd,scd->snc", phi, weight) + bias.unsqueeze(1)  # [S, N, C]
        if self.likelihood_ == "gaussian":
            mean = logits[..., 0]
            f_map, f_var = self._latent_moments(x)
            return GaussianPredictive(mean, torch.full_like(mean, self.noise_), check=False,  # type: ignore[arg-type]
                                      latent_mean=f_map.to(mean.dtype), latent_var=f_var.to(mean.dtype))
        return self._predictive(logits)

    def predict_mean_var(self, x: Tensor, n_samples: int | None = None, *, observation_noise: bool = False) -> tuple[Tensor, Tensor]:
        """Regression: the latent f's mean f_map(x) [N] and variance f_var(x) [N] in closed form
        (as GaussianProcess.predict_mean_var; `n_samples` is not used); with observation_noise,
        y's: f_var(x) + σ²."""
        self._check_fitted()
        if self.likelihood_ == HETEROSCEDASTIC:  # E[y] and Var[μ] (+ E[σ²]) of the linearised network
            return heteroscedastic_mean_var(self, x, observation_noise=observation_noise)
        if self.likelihood_ != "gaussian":
            raise classification_only("predict_mean_var")
        f_map, f_var = self._latent_moments(x)
        return f_map, (f_var + self.noise_ if observation_noise else f_var).to(f_map.dtype)
