"""Gaussian-process regression on BoTorch, for active learning of a real-valued target.

The model is BoTorch's `SingleTaskGP` (float64) with its `Normalize` input transform, its
`Standardize` outcome transform and hyper-parameters fitted by `botorch.fit.fit_gpytorch_mll`;
above `max_exact` labelled points, BoTorch's `SingleTaskVariationalGP` (see "Approximate GP").
The fitted BoTorch model is `model_` (also `botorch_model()`): a `botorch.models.model.Model`
in the ORIGINAL units (`model_.posterior(X)` undoes both transforms), so BoTorch acquisition
functions such as `qNegIntegratedPosteriorVariance` can use it directly (exact path only:
the variational model has no `fantasize`/`condition_on_observations`).

Model, in the internal coordinates x̃_d = (x_d − lo_d) / r_d (the `Normalize` transform with
bounds computed here: lo_d the minimum and r_d the range of feature d over the training inputs,
one shared r = max_d r_d when ard=False so that an isotropic kernel stays isotropic in the
original units; a zero range counts as 1) and ỹ = (y − m_y) / s_y (`Standardize`: m_y the mean,
s_y the Bessel-corrected std of the targets; below 1e-8, or with one target, s_y = 1):
    ỹ_n = f̃(x̃_n) + ε_n,   f̃ ~ GP(0, a k(x̃, x̃')),   ε_n ~ N(0, σ̃_ε²),
    k = RBF exp(−r²/2) or Matérn-5/2 (1 + √5 r + 5r²/3) exp(−√5 r),  r² = Σ_d (x̃_d − x̃'_d)² / ℓ̃_d²,
with the kernels "rbf+linear" and "matern52+linear" adding v Σ_d (x̃_d − c_d)(x̃'_d − c_d), c the
training inputs' mean (`activebayes.posteriors._gp_kernels`): a line in the features, its weights
integrated out; `linear_variance_` [D] reports v s_y² / r_d², the prior variance of the slope of
feature d in the original units (None without the linear part).
Undone in the original units this is a GP with prior mean m_y, outputscale s_y² a, lengthscales
r_d ℓ̃_d and noise variance s_y² σ̃_ε²; `lengthscale`, `outputscale` and `noise` are given, and the
fitted `lengthscale_`, `outputscale_`, `noise_` reported, in those ORIGINAL units.
Two deliberate departures from `SingleTaskGP`'s default modules: the prior mean is zero in the
standardised units (m_y in the original ones) instead of a learnt `ConstantMean`, and the kernel
sits in a `ScaleKernel` so that the outputscale a can be learnt or fixed (BoTorch's default has
no outputscale, i.e. a = 1).

Fitting (hyper-parameters not given), `priors=True` (default): MAXIMUM A POSTERIORI, not maximum
likelihood — BoTorch 0.18's `SingleTaskGP` priors (Hvarfner et al. 2024, "Vanilla Bayesian
optimization performs great in high dimensions"), in the internal units:
    ℓ̃_d ~ LogNormal(√2 + ½ log D, √3),  ℓ̃_d >= 0.025;   σ̃_ε² ~ LogNormal(−4, 1),  σ̃_ε² >= 1e-4;
and a flat prior on the outputscale a and the linear part's variance v (BoTorch has none to copy);
`noise_prior` = (μ, σ) replaces the noise prior's (−4, 1). That prior expects nearly noiseless
targets (its mode, exp(−5) = 0.7 % of the targets' variance, suits Bayesian optimisation): on
scikit-learn's diabetes, where ridge regression leaves about half the variance unexplained, the
MAP noise of 10 and 20 random labels was 0.7 % and 0.6 % of their variance (31 % at 80), and the
95 % intervals of y covered 76 % and 75 % of the test targets (studies/regression/kernels.py). The objective is
    log p(ỹ | θ) + log p(θ),   log p(ỹ | θ) = −½ ỹᵀ(K + σ̃_ε² I)⁻¹ỹ − ½ log det(K + σ̃_ε² I) − (N/2) log 2π,
maximised by `fit_gpytorch_mll` (scipy L-BFGS-B, at most `training_iters` iterations; `lr` is
not used) from the priors' modes (a = 1). `priors=False` drops the two priors (same
bounds): type-II maximum likelihood. When an attempt fails, `fit_gpytorch_mll` retries from values
drawn from the priors: those draws use a private RNG seeded with `seed` (0 when None), so a fit
is a deterministic function of the data and the seed and the global RNG is left untouched. If
every attempt fails (BoTorch's `ModelFittingError`), a RuntimeWarning says so and the learnt
hyper-parameters keep their starting values.
`log_marginal_likelihood_` is log p(y | θ̂) in the ORIGINAL units of y (log p(ỹ | θ̂) − N log s_y,
without the priors), evaluated in closed form at the fitted θ̂. All exact linear algebra is
float64 Cholesky (no CG / Lanczos / LOVE shortcuts).

Posterior of the latent function at a candidate (closed form, `predict_mean_var`):
    μ_n = m_y + k_*ᵀ (K + σ_ε² I)⁻¹ (y − m_y),   σ_n² = k(x_n, x_n) − k_*ᵀ (K + σ_ε² I)⁻¹ k_*.

Approximate GP (more than `max_exact` labelled points, default 5,000, where an exact fit costs
O(N³) time and O(N²) memory): BoTorch's `SingleTaskVariationalGP` with the same transforms,
kernel, priors and fixed values, `n_inducing` inducing points chosen among the training inputs by
BoTorch's greedy variance reduction (under the starting kernel) and then held fixed, and a
Cholesky variational distribution, fitted by `fit_gpytorch_mll` on the full-batch variational
ELBO (L-BFGS-B, at most `training_iters` iterations: deterministic). Fixed inducing points: with
them L-BFGS-B reaches the exact posterior when n_inducing >= N (to 1e-4, tested), while learning
their locations too stalled 0.004 nats short of it on the same problem (non-convex in Z). μ_n and σ_n² are then
the SVGP's predictive q(f(x_n)) and `log_marginal_likelihood_` is the ELBO (a lower bound on
log p(y | θ̂), original units). `approximate_` says which path was taken.

`predict` returns the Gaussian predictive y_n ~ N(μ_n, σ_n² + σ_ε²) as a GaussianPredictive
with `latent_mean` = μ_n and `latent_var` = σ_n² [N], from which the acquisition scores take closed
forms: eig = bald = I[y; f(x_n)] = ½ log(1 + σ_n²/σ_ε²) (float64 inside), entropy =
½ log(2πe (σ_n² + σ_ε²)), variance parts epistemic σ_n² and aleatoric σ_ε², at any σ_n/σ_ε.
Alongside, for code that reads samples, it keeps S Gauss–Hermite nodes t_s with weights
w_s = ω_s / √π (ω_s, t_s the physicists' rule, so Σ_s w_s = 1), shared by every candidate:
    mean[s, n] = μ_n + √2 σ_n t_s,   var[s, n] = σ_ε²,   weights = w   (S = n_samples >= 2),
which reproduce the first 2S − 1 moments of f(x_n): Σ_s w_s mean[s, n] = μ_n and
Σ_s w_s (mean[s, n] − μ_n)² = σ_n². Prediction is deterministic and independent of how a pool is
batched. (Read as a mixture of S Gaussians, the nodes' entropy is capped near H[w] + ½ log(2πe σ_ε²)
once σ_n ≫ σ_ε, which is why the scores use the latent fields instead.) Only each candidate's
MARGINAL is represented: the nodes are not a joint sample across candidates, so BatchBALD-style
joint entropies are not meaningful for this posterior (use `model_.posterior` for joints).

Hyper-parameters integrated out (`hyper_samples` = K >= 2; exact fits of 3 to 2,000 points, priors
on): from the MAP, an importance sampler over their posterior (`_gp_hyper`) keeps K' <= K draws
(`hyper_`); the predictive is Σ_k w_k N(μ_k, σ_k² + σ_εk²) (`predict_mixture`; `predict_mean_var`
its moments; `predict` the S nodes of every draw, [K'·S, N], weights w_k w_s, no latent fields).
`noise_`, `lengthscale_`, `outputscale_` stay the MAP's. K = 32 raised the 95 % intervals' coverage
with random labels on all seven tables of studies/regression/hyper.py but lost RMSE on two: K = 0
stays the default.

There is no `predict_proba`: the Posterior protocol's `predict_proba` is the class-probability
mean of a classifier, which regression does not have; use `predict_mean_var`.

>>> import torch
>>> x = torch.linspace(0, 1, 20).unsqueeze(-1)
>>> gp = GaussianProcess(lengthscale=0.3, outputscale=1.0, noise=0.01, device="cpu").fit(x, torch.sin(6 * x[:, 0]))
>>> pred = gp.predict(torch.rand(5, 1), n_samples=8)
>>> pred.mean.shape, pred.var.shape, pred.weights.shape
(torch.Size([8, 5]), torch.Size([8, 5]), torch.Size([8]))
"""

from __future__ import annotations

import math
import warnings
from typing import Any, ClassVar

import gpytorch
import numpy as np
import torch
from botorch.exceptions.errors import ModelFittingError
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP, SingleTaskVariationalGP
from botorch.models.model import Model
from botorch.models.transforms.input import Normalize
from botorch.models.transforms.outcome import Standardize
from botorch.optim.fit import fit_gpytorch_mll_scipy
from torch import Tensor

from activebayes._device import resolve_device
from activebayes.errors import ConfigError, ShapeError
from activebayes.posteriors._gp_checks import count as _count
from activebayes.posteriors._gp_checks import log_normal as _log_normal
from activebayes.posteriors._gp_checks import matrix as _matrix
from activebayes.posteriors._gp_checks import positive as _positive
from activebayes.posteriors._gp_checks import targets as _targets
from activebayes.posteriors._gp_hyper import HyperMixture, integrate_map
from activebayes.posteriors._gp_kernels import Kernel, parts
from activebayes.posteriors._gp_modules import WORK as _WORK
from activebayes.posteriors._gp_modules import gp_modules, input_bounds, standardize_scale
from activebayes.posteriors.base import check_fitted
from activebayes.predictive import GaussianPredictive

_CHUNK = 2048  # candidates per prediction pass: holds a [chunk, N_train] cross-covariance
_OUT = torch.float32
NOISE_PRIOR = (-4.0, 1.0)  # BoTorch's LogNormal(μ, σ) on the standardised noise variance σ̃_ε²
_MAX_INTEGRATED = 2000  # above, the hyper-parameters' posterior is narrow and K N³ dear: the MAP plugged in


def hermite_rule(n_nodes: int) -> tuple[Tensor, Tensor]:
    """Gauss–Hermite nodes t [S] and probability weights w = ω/√π [S] (float64, Σ w = 1).

    Σ_s w_s g(μ + √2 σ t_s) = E_{z~N(μ, σ²)}[g(z)] exactly for polynomials g of degree < 2S.
    """
    nodes, weights = np.polynomial.hermite.hermgauss(n_nodes)
    return torch.tensor(nodes, dtype=_WORK), torch.tensor(weights / math.sqrt(math.pi), dtype=_WORK)


def _exact():
    """gpytorch settings for exact float64 Cholesky algebra at any N (no CG / Lanczos / LOVE)."""
    return gpytorch.settings.fast_computations(covar_root_decomposition=False, log_prob=False, solves=False)


class GaussianProcess:
    """GP regression posterior on BoTorch (see the module docstring for the maths and units).

    Args:
        kernel: "rbf" or "matern52" (ν = 5/2), inside a ScaleKernel; "rbf+linear" or
            "matern52+linear" add Bayesian linear regression on the features (`_gp_kernels`).
        ard: one lengthscale per feature (True) or one shared (False).
        noise: noise variance σ_ε² > 0 (original units, fixed), or None to learn it.
        lengthscale: ℓ > 0 (original units, the same for every feature, fixed), or None to learn.
        outputscale: prior variance of f > 0 (original units, fixed), or None to learn it.
        n_samples: default S >= 2 of Gauss–Hermite nodes for `predict`.
        training_iters: the L-BFGS-B iteration cap (`maxiter`) of `fit_gpytorch_mll`, on the
            marginal likelihood (exact) or the ELBO (approximate); 0 keeps the starting values.
        lr: kept for API compatibility and validated, but unused: L-BFGS-B has no learning rate.
        seed: seeds `fit_gpytorch_mll`'s random restarts and the approximate GP's fit (None: 0).
        device: "auto", "cpu" or "cuda[:i]".
        priors: True: BoTorch's lengthscale and noise priors, hyper-parameters are a MAP fit;
            False: no priors, type-II maximum likelihood.
        max_exact: largest labelled set fitted by the exact GP; above it the variational GP.
        noise_prior: (μ, σ) of the LogNormal prior on the standardised noise variance σ̃_ε² (with
            priors=True and the noise learnt); BoTorch's (−4, 1) by default.
        n_inducing: inducing points of the variational GP (capped at N).
        hyper_samples: 0 plugs in the MAP hyper-parameters; K >= 2 averages the predictive over
            K importance-weighted draws from their posterior (module docstring; priors=True).

    Not a network posterior (no `model_fn`, `train`), but the same protocol: `get_params()`
    gives the constructor arguments (`options` names them), `clone()` an unfitted copy, `to()`
    moves a fitted GP.
    """

    #: The constructor arguments, in `get_params` order.
    options: ClassVar[tuple[str, ...]] = (
        "kernel", "ard", "noise", "lengthscale", "outputscale", "n_samples", "training_iters", "lr", "seed",
        "device", "priors", "max_exact", "n_inducing", "noise_prior", "hyper_samples",
    )  # fmt: skip

    def __init__(
        self,
        *,
        kernel: str = "rbf",
        ard: bool = True,
        noise: float | None = None,
        lengthscale: float | None = None,
        outputscale: float | None = None,
        n_samples: int = 16,
        training_iters: int = 100,
        lr: float = 0.1,
        seed: int | None = None,
        device: str | torch.device = "auto",
        priors: bool = True,
        max_exact: int = 5000,
        n_inducing: int = 512,
        noise_prior: tuple[float, float] | list[float] = NOISE_PRIOR,
        hyper_samples: int = 0,
    ) -> None:
        try:
            self.kernel = Kernel(kernel)
        except ValueError:
            raise ConfigError(f"kernel: expected one of {', '.join(repr(k.value) for k in Kernel)}, got {kernel!r}") from None
        if isinstance(n_samples, bool) or not isinstance(n_samples, int) or n_samples < 2:
            raise ConfigError(f"n_samples: expected an integer >= 2 (Gauss–Hermite nodes), got {n_samples!r}")
        self.training_iters = _count("training_iters", training_iters, 0)
        if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not lr > 0 or not math.isfinite(lr):
            raise ConfigError(f"lr: expected a positive learning rate, got {lr!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ConfigError(f"seed: expected an integer or None, got {seed!r}")
        self.max_exact = _count("max_exact", max_exact, 1)
        self.n_inducing = _count("n_inducing", n_inducing, 1)
        self.ard = bool(ard)
        self.priors = bool(priors)
        self.noise = _positive("noise", noise)
        self.noise_prior = _log_normal("noise_prior", noise_prior)
        self.hyper_samples = _count("hyper_samples", hyper_samples, 0)
        if self.hyper_samples == 1 or (self.hyper_samples and not self.priors):
            raise ConfigError(f"hyper_samples: expected 0 (the MAP) or K >= 2 with priors=True, got {hyper_samples!r} with "
                              f"priors={self.priors}; give 0, or K >= 2 with the priors (the lengthscales' posterior needs them)")
        self.lengthscale = _positive("lengthscale", lengthscale)
        self.outputscale = _positive("outputscale", outputscale)
        self.n_samples = n_samples
        self.lr = float(lr)
        self.seed = seed
        self.device = device
        self.model_: SingleTaskGP | SingleTaskVariationalGP | None = None
        self.approximate_: bool | None = None
        self.device_: torch.device | None = None
        self.noise_: float | None = None
        self.lengthscale_: Tensor | None = None
        self.outputscale_: float | None = None
        self.log_marginal_likelihood_: float | None = None
        self.linear_variance_: Tensor | None = None
        self.hyper_: HyperMixture | None = None

    def get_params(self) -> dict[str, Any]:
        """The constructor arguments {name: value} (as checked and stored), so that
        type(self)(**self.get_params()) builds an unfitted GP configured the same."""
        return {name: getattr(self, name) for name in self.options}

    def clone(self) -> GaussianProcess:
        """An unfitted copy with the same arguments."""
        return type(self)(**self.get_params())

    # ------------------------------------------------------------------ fitting
    def fit(self, x: Tensor, y: Tensor) -> GaussianProcess:
        """Build the BoTorch GP (exact up to `max_exact` points, else variational) and fit the
        hyper-parameters not fixed.

        Args:
            x: inputs [N, D] (real, finite); y: targets [N] (real, finite).
        """
        x = _matrix("x", x)
        y = _targets(y, x.shape[0])
        if x.shape[0] < 1:
            raise ShapeError("x: expected at least one training point, got N=0")
        dev = resolve_device(self.device)
        x, y = x.to(dev), y.to(dev)
        n, d = x.shape
        bounds = input_bounds(x, self.ard)
        outcome = Standardize(m=1)
        y_scale = standardize_scale(y)  # s_y by Standardize's rule, to convert the fixed values before fitting
        centre = ((x - bounds[0]) / (bounds[1] - bounds[0])).mean(0)  # [D], the linear part's centre
        likelihood, covar = gp_modules(self, bounds, y_scale, centre)
        approximate = n > self.max_exact
        common = dict(
            likelihood=likelihood, covar_module=covar, mean_module=gpytorch.means.ZeroMean(),
            outcome_transform=outcome, input_transform=Normalize(d=d, bounds=bounds),
        )
        seed = 0 if self.seed is None else self.seed
        devices = [dev.index if dev.index is not None else torch.cuda.current_device()] if dev.type == "cuda" else []
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(seed)
            if approximate:
                with warnings.catch_warnings():
                    # BoTorch warns that transforms with learnable parameters misbehave in minibatch
                    # training; Normalize here has fixed bounds and the fit is full-batch.
                    warnings.filterwarnings("ignore", message="Using an (input|outcome) transform", category=Warning)
                    model = SingleTaskVariationalGP(
                        x, y[:, None], inducing_points=min(self.n_inducing, n), learn_inducing_points=False, **common
                    ).to(device=dev, dtype=_WORK)
                mll = gpytorch.mlls.VariationalELBO(model.likelihood, model.model, num_data=n)
            else:
                model = SingleTaskGP(x, y[:, None], **common).to(device=dev, dtype=_WORK)
                mll = gpytorch.mlls.ExactMarginalLogLikelihood(model.likelihood, model)
            optimizer, options = fit_gpytorch_mll_scipy, {"options": {"maxiter": self.training_iters}}
            if self.training_iters > 0 and any(p.requires_grad for p in mll.parameters()):
                with _exact(), gpytorch.settings.max_cholesky_size(10**9):
                    try:
                        fit_gpytorch_mll(mll, optimizer=optimizer, optimizer_kwargs=options)
                    except ModelFittingError:  # every attempt failed; BoTorch rolled back to the start
                        warnings.warn(
                            "GaussianProcess: fit_gpytorch_mll failed on every attempt; the learnt "
                            "hyper-parameters keep their starting values (the priors' modes, a = 1)",
                            RuntimeWarning, stacklevel=2,
                        )
        for p in model.parameters():
            p.requires_grad_(False)
        model.eval()

        y_scale = float(model.outcome_transform.stdvs.reshape(()))
        self.model_, self.approximate_, self.device_ = model, approximate, dev
        self.log_marginal_likelihood_ = self._evidence(model) - n * math.log(y_scale)
        self.noise_ = float(model.likelihood.noise.reshape(())) * y_scale**2
        kernel, linear = parts(model.covar_module if not approximate else model.model.covar_module)
        self.outputscale_ = float(kernel.outputscale.reshape(())) * y_scale**2
        span = bounds[1] - bounds[0] if self.ard else (bounds[1] - bounds[0])[:1]
        lengthscale = kernel.base_kernel.lengthscale.detach().reshape(-1) * span
        self.lengthscale_ = lengthscale.to(_OUT).cpu()  # [D] with ard, else [1]
        slope_var = None if linear is None else linear.variance.detach().reshape(()) * y_scale**2 / (bounds[1] - bounds[0]) ** 2
        self.linear_variance_ = None if slope_var is None else slope_var.to(_OUT).cpu()  # [D]
        self.hyper_ = None
        if self.hyper_samples and not approximate and 3 <= n <= _MAX_INTEGRATED:
            fixed = {"lengthscale": self.lengthscale, "outputscale": self.outputscale, "noise": self.noise}
            x_unit = (x - bounds[0]) / (bounds[1] - bounds[0])
            self.hyper_ = integrate_map(model, self.kernel, x_unit, centre, fixed, self.noise_prior, self.hyper_samples, seed)
        return self

    @staticmethod
    def _evidence(model: Model) -> float:
        """log p(ỹ | θ̂) (exact) or the ELBO (variational), in the standardised units, no priors."""
        model.train()
        try:
            with torch.no_grad(), _exact(), gpytorch.settings.max_cholesky_size(10**9):
                targets = model.train_targets if hasattr(model, "train_targets") else model.model.train_targets
                if isinstance(model, SingleTaskVariationalGP):
                    q = model.model(model.model.train_inputs[0])  # stored already normalised
                    fit_term = model.likelihood.expected_log_prob(targets, q).sum()
                    value = fit_term - model.model.variational_strategy.kl_divergence().sum()
                else:
                    value = model.likelihood(model(model.train_inputs[0])).log_prob(targets)
        finally:
            model.eval()
        return float(value)

    def botorch_model(self) -> Model:
        """The fitted BoTorch model (`model_`): `SingleTaskGP`, or `SingleTaskVariationalGP` above
        `max_exact`; inputs and outputs in the original units, float64, on `device_`."""
        check_fitted(self, "model_")
        return self.model_  # type: ignore[return-value]

    def to(self, device: str | torch.device) -> GaussianProcess:
        """Move the fitted GP to `device`; returns self."""
        check_fitted(self, "model_")
        dev = resolve_device(device)
        model = self.model_
        model.train()  # type: ignore[union-attr]  # drops prediction caches, restores the original inputs
        model.to(dev)  # type: ignore[union-attr]
        if self.approximate_:  # plain attributes that BoTorch keeps for its fitting utilities
            inner = model.model  # type: ignore[union-attr]
            inner.train_inputs = [t.to(dev) for t in inner.train_inputs]
            inner.train_targets = inner.train_targets.to(dev)
        else:
            model.set_train_data(model.train_inputs[0].to(dev), model.train_targets.to(dev), strict=False)  # type: ignore[union-attr]
        model.eval()  # type: ignore[union-attr]
        self.device_ = dev
        self.hyper_ = None if self.hyper_ is None else self.hyper_.to(dev)
        return self

    # --------------------------------------------------------------- prediction
    def _latent(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """μ [N], σ² [N] of f(x) in original units, float64 on the fitted device."""
        check_fitted(self, "model_")
        model = self.model_
        d = model.input_transform.bounds.shape[-1]  # type: ignore[union-attr]
        x = _matrix("x", x, d).to(self.device_)
        outcome = model.outcome_transform  # type: ignore[union-attr]
        shift, scale = outcome.means.reshape(()), outcome.stdvs.reshape(())
        means, variances = [], []
        with torch.no_grad(), _exact(), gpytorch.settings.fast_pred_var(False), \
                gpytorch.settings.max_cholesky_size(10**9), warnings.catch_warnings():
            # Scoring the labelled points themselves is legitimate; gpytorch warns about it.
            warnings.simplefilter("ignore", gpytorch.utils.warnings.GPInputWarning)
            for chunk in x.split(_CHUNK):
                xt = model.transform_inputs(chunk)  # type: ignore[union-attr]
                f = model(xt) if not self.approximate_ else model.model(xt)  # type: ignore[misc, union-attr]
                means.append(f.mean.reshape(-1))
                variances.append(f.variance.reshape(-1).clamp_min(0.0))
        if not means:
            empty = x.new_zeros(0)
            return empty, empty
        return torch.cat(means) * scale + shift, torch.cat(variances) * scale**2

    def _components(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """(w [K], μ_k [K, N], σ_k² [K, N] of f(x), σ_εk² [K]) in original units, float64: K = 1,
        the MAP, or the hyper-parameters' mixture (`hyper_`)."""
        if self.hyper_ is None:
            mu, var = self._latent(x)
            return mu.new_ones(1), mu[None], var[None], mu.new_full((1,), self.noise_)  # type: ignore[arg-type]
        bounds, outcome = self.model_.input_transform.bounds, self.model_.outcome_transform  # type: ignore[union-attr]
        x = _matrix("x", x, bounds.shape[-1]).to(self.device_)
        return self.hyper_.components((x - bounds[0]) / (bounds[1] - bounds[0]), outcome.means.reshape(()), outcome.stdvs.reshape(()))

    def predict_mixture(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """The predictive of y(x_n) as a mixture Σ_k w_k N(mean[k, n], var[k, n]): (w [K], mean
        [K, N], var [K, N] = σ_k² + σ_εk²), float32; K = 1 with the MAP plugged in."""
        w, mu, var, noise = self._components(x)
        return w.to(_OUT), mu.to(_OUT), (var + noise[:, None]).to(_OUT)

    def predict_mean_var(self, x: Tensor, *, observation_noise: bool = False) -> tuple[Tensor, Tensor]:
        """Latent posterior mean μ [N] and variance σ² [N] (closed form; float32); with
        observation_noise, the variance σ² + σ_ε² of a new observation y (BoTorch's convention,
        shared by every regression posterior). Over the hyper-parameters' mixture: its moments,
        μ = Σ_k w_k μ_k, σ² = Σ_k w_k (σ_k² + μ_k²) − μ² (+ Σ_k w_k σ_εk²)."""
        w, mu_k, var_k, noise = self._components(x)
        mean = w @ mu_k
        var = (w @ (var_k + mu_k**2) - mean**2).clamp_min(0.0)
        if observation_noise:
            var = var + w @ noise
        return mean.to(_OUT), var.to(_OUT)

    def predict(self, x: Tensor, n_samples: int | None = None) -> GaussianPredictive:
        """Gaussian predictive of y(x_n) (module docstring): latent_mean, latent_var [N] =
        μ_n, σ_n², with the Gauss–Hermite nodes of f(x_n) as mean [S, N], var [S, N] = σ_ε² and
        weights [S]; float32. Deterministic; the same for any batching of the candidates. Over
        the hyper-parameters' mixture: the nodes of every draw k, [K'·S, N], weights w_k w_s.
        """
        s = self.n_samples if n_samples is None else n_samples
        if isinstance(s, bool) or not isinstance(s, int) or s < 2:
            raise ConfigError(f"n_samples: expected an integer >= 2 (Gauss–Hermite nodes), got {s!r}")
        w, mu, var, noise = self._components(x)
        (k, n), (nodes, weights) = mu.shape, hermite_rule(s)
        nodes, weights = nodes.to(mu.device), (w[:, None] * weights.to(mu.device)[None, :]).reshape(-1)  # [K·S]
        mean = (mu[:, None, :] + math.sqrt(2.0) * var.sqrt()[:, None, :] * nodes[None, :, None]).reshape(k * s, n)
        noise = noise[:, None, None].expand(k, s, n).reshape(k * s, n)
        latent = dict(latent_mean=mu[0].to(_OUT), latent_var=var[0].to(_OUT)) if self.hyper_ is None else {}
        return GaussianPredictive(mean.to(_OUT), noise.to(_OUT), weights.to(_OUT), check=False, **latent)

