"""Exact Gaussian-process regression (gpytorch), for active learning of a real-valued target.

Model, in the internal standardised coordinates x̃ = (x − m_x) / s_x, ỹ = (y − m_y) / s_y
(m_x, s_x the per-feature mean and std of the training inputs, one shared s_x when ard=False;
m_y, s_y those of the targets; a zero std counts as 1):
    ỹ_n = f̃(x̃_n) + ε_n,   f̃ ~ GP(0, a k(x̃, x̃')),   ε_n ~ N(0, σ̃_ε²),
    k = RBF exp(−r²/2) or Matérn-5/2 (1 + √5 r + 5r²/3) exp(−√5 r),  r² = Σ_d (x̃_d − x̃'_d)² / ℓ̃_d².
Undone in the original units this is a GP with prior mean m_y, outputscale s_y² a, lengthscales
s_x ℓ̃ and noise variance s_y² σ̃_ε²; `lengthscale`, `outputscale` and `noise` are given, and the
fitted `lengthscale_`, `outputscale_`, `noise_` reported, in those ORIGINAL units.
Hyper-parameters not given are learnt by maximising the exact log marginal likelihood
    log p(ỹ) = −½ ỹᵀ (K + σ̃_ε² I)⁻¹ ỹ − ½ log det(K + σ̃_ε² I) − (N/2) log 2π
with Adam (`training_iters` steps at `lr`, full batch, deterministic) from gpytorch's default
starting values. All linear algebra is float64 Cholesky (no CG / Lanczos shortcuts).

Posterior of the latent function at a candidate (closed form, `predict_mean_var`):
    μ_n = m_y + k_*ᵀ (K + σ_ε² I)⁻¹ (y − m_y),   σ_n² = k(x_n, x_n) − k_*ᵀ (K + σ_ε² I)⁻¹ k_*.

`predict` returns the exact Gaussian predictive y_n ~ N(μ_n, σ_n² + σ_ε²) as a GaussianPredictive
with `latent_mean` = μ_n and `latent_var` = σ_n² [N], from which the acquisition scores take closed
forms: eig = bald = I[y; f(x_n)] = ½ log(1 + σ_n²/σ_ε²) (float64 inside), entropy =
½ log(2πe (σ_n² + σ_ε²)), variance parts epistemic σ_n² and aleatoric σ_ε², at any σ_n/σ_ε.
Alongside, for code that reads samples, it keeps S Gauss–Hermite nodes t_s with weights
w_s = ω_s / √π (ω_s, t_s the physicists' rule, so Σ_s w_s = 1), shared by every candidate:
    mean[s, n] = μ_n + √2 σ_n t_s,   var[s, n] = σ_ε²,   weights = w   (S = n_samples >= 2),
which reproduce the first 2S − 1 moments of f(x_n): Σ_s w_s mean[s, n] = μ_n and
Σ_s w_s (mean[s, n] − μ_n)² = σ_n². Everything is deterministic and independent of how a pool is
batched. (Read as a mixture of S Gaussians, the nodes' entropy is capped near H[w] + ½ log(2πe σ_ε²)
once σ_n ≫ σ_ε, which is why the scores use the latent fields instead.) Only each candidate's
MARGINAL is represented: the nodes are not a joint sample across candidates, so BatchBALD-style
joint entropies are not meaningful for this posterior.

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
from enum import StrEnum

import gpytorch
import numpy as np
import torch
from torch import Tensor

from activebayes._device import resolve_device
from activebayes.errors import ConfigError, ShapeError
from activebayes.posteriors.base import check_fitted
from activebayes.predictive import GaussianPredictive

_CHUNK = 2048  # candidates per prediction pass: holds a [chunk, N_train] cross-covariance
_WORK = torch.float64
_OUT = torch.float32
_MIN_NOISE = 1e-6  # lower bound on the learnt standardised noise variance σ̃_ε²


class Kernel(StrEnum):
    RBF = "rbf"
    MATERN52 = "matern52"


def _positive(name: str, value: float | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{name}: expected a positive finite float or None (learnt), got {value!r}")
    return float(value)


def _matrix(name: str, x: object, n_features: int | None = None) -> Tensor:
    """x as a finite float64 tensor [N, D] (checked: a Tensor, rank 2, real, finite, D columns)."""
    if not isinstance(x, Tensor):
        raise ShapeError(f"{name}: expected a torch.Tensor [N, D], got {type(x).__name__}")
    if x.dim() != 2:
        raise ShapeError(f"{name}: expected 2 dimensions [N, D], got shape {tuple(x.shape)}")
    if x.dtype == torch.bool or x.is_complex():
        raise ShapeError(f"{name}: expected a real-valued tensor, got {x.dtype}")
    if n_features is not None and x.shape[1] != n_features:
        raise ShapeError(f"{name}: expected D={n_features} features as in fit, got shape {tuple(x.shape)}")
    if not bool(torch.isfinite(x).all()):
        raise ShapeError(f"{name}: contains NaN or infinite values")
    return x.to(_WORK)


def _targets(y: object, n: int) -> Tensor:
    if not isinstance(y, Tensor):
        raise ShapeError(f"y: expected a torch.Tensor [N], got {type(y).__name__}")
    if y.dim() != 1:
        raise ShapeError(f"y: expected 1 dimension [N], got shape {tuple(y.shape)}")
    if y.shape[0] != n:
        raise ShapeError(f"y: expected N={n} targets to match x, got {y.shape[0]}")
    if y.dtype == torch.bool or y.is_complex():
        raise ShapeError(f"y: expected real-valued targets, got {y.dtype}")
    if not bool(torch.isfinite(y).all()):
        raise ShapeError("y: contains NaN or infinite values")
    return y.to(_WORK)


def hermite_rule(n_nodes: int) -> tuple[Tensor, Tensor]:
    """Gauss–Hermite nodes t [S] and probability weights w = ω/√π [S] (float64, Σ w = 1).

    Σ_s w_s g(μ + √2 σ t_s) = E_{z~N(μ, σ²)}[g(z)] exactly for polynomials g of degree < 2S.
    """
    nodes, weights = np.polynomial.hermite.hermgauss(n_nodes)
    return torch.tensor(nodes, dtype=_WORK), torch.tensor(weights / math.sqrt(math.pi), dtype=_WORK)


class _ExactGP(gpytorch.models.ExactGP):
    """Zero mean, ScaleKernel(RBF | Matérn-5/2), on standardised data."""

    def __init__(self, x: Tensor, y: Tensor, likelihood: gpytorch.likelihoods.GaussianLikelihood,
                 kernel: Kernel, ard: bool) -> None:
        super().__init__(x, y, likelihood)
        dims = x.shape[1] if ard else None
        base = (gpytorch.kernels.RBFKernel(ard_num_dims=dims) if kernel == Kernel.RBF
                else gpytorch.kernels.MaternKernel(nu=2.5, ard_num_dims=dims))
        self.mean_module = gpytorch.means.ZeroMean()
        self.covar_module = gpytorch.kernels.ScaleKernel(base)

    def forward(self, x: Tensor) -> gpytorch.distributions.MultivariateNormal:
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


def _exact():
    """gpytorch settings for exact float64 Cholesky algebra at any N (no CG / Lanczos)."""
    return gpytorch.settings.fast_computations(covar_root_decomposition=False, log_prob=False, solves=False)


class GaussianProcess:
    """Exact GP regression posterior (see the module docstring for the maths and units).

    Args:
        kernel: "rbf" or "matern52" (ν = 5/2), inside a ScaleKernel.
        ard: one lengthscale per feature (True) or one shared (False).
        noise: noise variance σ_ε² > 0 (original units, fixed), or None to learn it.
        lengthscale: ℓ > 0 (original units, the same for every feature, fixed), or None to learn.
        outputscale: prior variance of f > 0 (original units, fixed), or None to learn it.
        n_samples: default S >= 2 of Gauss–Hermite nodes for `predict`.
        training_iters: Adam steps on the marginal likelihood (0 keeps gpytorch's start values).
        lr: Adam learning rate.
        seed: stored for the Posterior contract; fitting and prediction draw no random numbers.
        device: "auto", "cpu" or "cuda[:i]".
    """

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
    ) -> None:
        try:
            self.kernel = Kernel(kernel)
        except ValueError:
            raise ConfigError(f"kernel: expected one of 'rbf', 'matern52', got {kernel!r}") from None
        if not isinstance(n_samples, int) or n_samples < 2:
            raise ConfigError(f"n_samples: expected an integer >= 2 (Gauss–Hermite nodes), got {n_samples!r}")
        if not isinstance(training_iters, int) or training_iters < 0:
            raise ConfigError(f"training_iters: expected a non-negative integer, got {training_iters!r}")
        if not lr > 0:
            raise ConfigError(f"lr: expected a positive learning rate, got {lr!r}")
        self.ard = bool(ard)
        self.noise = _positive("noise", noise)
        self.lengthscale = _positive("lengthscale", lengthscale)
        self.outputscale = _positive("outputscale", outputscale)
        self.n_samples = n_samples
        self.training_iters = training_iters
        self.lr = lr
        self.seed = seed
        self.device = device
        self.model_: _ExactGP | None = None
        self.device_: torch.device | None = None
        self.x_shift_: Tensor | None = None
        self.x_scale_: Tensor | None = None
        self.y_shift_: float | None = None
        self.y_scale_: float | None = None
        self.noise_: float | None = None
        self.lengthscale_: Tensor | None = None
        self.outputscale_: float | None = None
        self.log_marginal_likelihood_: float | None = None

    # ------------------------------------------------------------------ fitting
    def fit(self, x: Tensor, y: Tensor) -> GaussianProcess:
        """Standardise, build the exact GP and fit the hyper-parameters not fixed.

        Args:
            x: inputs [N, D] (real, finite); y: targets [N] (real, finite).
        """
        x = _matrix("x", x)
        y = _targets(y, x.shape[0])
        if x.shape[0] < 1:
            raise ShapeError("x: expected at least one training point, got N=0")
        dev = resolve_device(self.device)
        x, y = x.to(dev), y.to(dev)
        x_shift = x.mean(0)
        x_std = x.std(0, unbiased=False) if self.ard else (x - x_shift).pow(2).mean().sqrt().expand(x.shape[1])
        x_scale = torch.where(x_std > 1e-12, x_std, torch.ones_like(x_std))
        y_shift = float(y.mean())
        y_std = float(y.std(unbiased=False))
        y_scale = y_std if y_std > 1e-12 else 1.0
        xs, ys = (x - x_shift) / x_scale, (y - y_shift) / y_scale

        noise_s = None if self.noise is None else self.noise / y_scale**2
        bound = _MIN_NOISE if noise_s is None else min(_MIN_NOISE, 0.5 * noise_s)
        likelihood = gpytorch.likelihoods.GaussianLikelihood(noise_constraint=gpytorch.constraints.GreaterThan(bound))
        model = _ExactGP(xs, ys, likelihood, self.kernel, self.ard).to(device=dev, dtype=_WORK)
        base = model.covar_module.base_kernel
        if noise_s is not None:
            likelihood.noise = noise_s
            likelihood.raw_noise.requires_grad_(False)
        if self.lengthscale is not None:
            scaled = self.lengthscale / (x_scale if self.ard else x_scale[:1])  # [D] or [1]
            base.lengthscale = scaled.reshape(base.lengthscale.shape)
            base.raw_lengthscale.requires_grad_(False)
        if self.outputscale is not None:
            model.covar_module.outputscale = self.outputscale / y_scale**2
            model.covar_module.raw_outputscale.requires_grad_(False)

        mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, model)
        params = [p for p in model.parameters() if p.requires_grad]
        model.train()
        with _exact():
            if params and self.training_iters > 0:
                optimiser = torch.optim.Adam(params, lr=self.lr)
                for _ in range(self.training_iters):
                    optimiser.zero_grad()
                    loss = -mll(model(xs), ys)
                    loss.backward()
                    optimiser.step()
            with torch.no_grad():
                # ExactMarginalLogLikelihood divides by N; report the total in the ORIGINAL units of y.
                total = float(mll(model(xs), ys)) * xs.shape[0] - xs.shape[0] * math.log(y_scale)
        model.eval()
        for p in model.parameters():
            p.requires_grad_(False)

        self.model_, self.device_ = model, dev
        self.x_shift_, self.x_scale_, self.y_shift_, self.y_scale_ = x_shift, x_scale, y_shift, y_scale
        self.noise_ = float(likelihood.noise) * y_scale**2
        self.outputscale_ = float(model.covar_module.outputscale) * y_scale**2
        lengthscale = base.lengthscale.detach().reshape(-1) * (x_scale if self.ard else x_scale[:1])
        self.lengthscale_ = lengthscale.to(_OUT).cpu()  # [D] with ard, else [1]
        self.log_marginal_likelihood_ = total
        return self

    def to(self, device: str | torch.device) -> GaussianProcess:
        """Move the fitted GP to `device`; returns self."""
        check_fitted(self, "model_")
        dev = resolve_device(device)
        self.model_ = self.model_.to(dev)  # type: ignore[union-attr]
        self.model_.set_train_data(self.model_.train_inputs[0].to(dev), self.model_.train_targets.to(dev), strict=False)
        self.x_shift_, self.x_scale_ = self.x_shift_.to(dev), self.x_scale_.to(dev)  # type: ignore[union-attr]
        self.device_ = dev
        return self

    # --------------------------------------------------------------- prediction
    def _latent(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """μ [N], σ² [N] of f(x) in original units, float64 on the fitted device."""
        check_fitted(self, "model_")
        x = _matrix("x", x, self.x_shift_.shape[0])  # type: ignore[union-attr]
        xs = (x.to(self.device_) - self.x_shift_) / self.x_scale_
        means, variances = [], []
        with torch.no_grad(), _exact(), gpytorch.settings.fast_pred_var(False), \
                gpytorch.settings.max_cholesky_size(10**9), warnings.catch_warnings():
            # Scoring the labelled points themselves is legitimate; gpytorch warns about it.
            warnings.simplefilter("ignore", gpytorch.utils.warnings.GPInputWarning)
            for chunk in xs.split(_CHUNK):
                f = self.model_(chunk)  # type: ignore[misc]
                means.append(f.mean)
                variances.append(f.variance.clamp_min(0.0))
        if not means:
            empty = xs.new_zeros(0)
            return empty, empty
        mean = torch.cat(means) * self.y_scale_ + self.y_shift_  # type: ignore[operator]
        return mean, torch.cat(variances) * self.y_scale_**2  # type: ignore[operator]

    def predict_mean_var(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Latent posterior mean μ [N] and variance σ² [N] (closed form; float32).

        Add `noise_` to σ² for the predictive variance of a new observation y.
        """
        mean, var = self._latent(x)
        return mean.to(_OUT), var.to(_OUT)

    def predict(self, x: Tensor, n_samples: int | None = None) -> GaussianPredictive:
        """Exact Gaussian predictive of y(x_n) (module docstring): latent_mean, latent_var [N] =
        μ_n, σ_n², with the Gauss–Hermite nodes of f(x_n) as mean [S, N], var [S, N] = σ_ε² and
        weights [S]; float32. Deterministic; the same for any batching of the candidates.
        """
        s = self.n_samples if n_samples is None else n_samples
        if not isinstance(s, int) or s < 2:
            raise ConfigError(f"n_samples: expected an integer >= 2 (Gauss–Hermite nodes), got {s!r}")
        mu, var = self._latent(x)
        nodes, weights = hermite_rule(s)
        nodes, weights = nodes.to(mu.device), weights.to(mu.device)
        mean = mu[None, :] + math.sqrt(2.0) * var.sqrt()[None, :] * nodes[:, None]  # [S, N]
        noise = torch.full_like(mean, self.noise_)  # type: ignore[arg-type]
        return GaussianPredictive(
            mean.to(_OUT), noise.to(_OUT), weights.to(_OUT), check=False, latent_mean=mu.to(_OUT), latent_var=var.to(_OUT)
        )
