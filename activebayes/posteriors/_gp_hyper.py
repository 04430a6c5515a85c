"""The GP's predictive averaged over its hyper-parameters' posterior (`GaussianProcess(hyper_samples=K)`).

In the GP's internal units (inputs x̃ normalised, targets ỹ standardised; `activebayes.posteriors.gp`)
the hyper-parameters are φ = (log ℓ̃_1..L, log a, [log v], log σ̃_ε²) [P] (L lengthscales, the
outputscale, the linear part's variance with a "+linear" kernel, the noise). Their posterior, in
these log coordinates, is the MAP fit's objective with the change of variables' Jacobian:
    log π(φ) = log p(ỹ | φ) + Σ_d log N(φ_ℓd; √2 + ½ log D, 3) + log N(φ_σ; μ, σ²) + φ_a + φ_v + const,
the LogNormal priors of the MAP fit being Normals of the logs and its flat priors on a and v
becoming e^φ; truncated at the MAP fit's lower bounds (ℓ̃ >= 0.025, σ̃_ε² >= 1e-4), so that it
is the same model. Fixed hyper-parameters stay at their values (not sampled).

Self-normalised importance sampling with a Laplace proposal (Geweke 1989): from the MAP,
Newton steps on log π reach its mode m in the log coordinates (the Jacobian moves it off the
MAP); H = −∇² log π(m), its eigenvalues floored at 1/3² (no direction wider than 3 in logs);
then K draws φ_k from the multivariate t_ν(m, H⁻¹) with ν = 5 (tails heavier than the target's,
so the weights stay bounded) and weights
    w_k ∝ π(φ_k) / q(φ_k),  Σ_k w_k = 1,   ESS = 1 / Σ_k w_k²,
draws outside the bounds weighing 0 and dropped. The predictive of y at x_n is the mixture
    p(y | x_n) ≈ Σ_k w_k N(μ_k(x_n), σ_k²(x_n) + σ_εk²),
μ_k, σ_k² the exact GP posterior of f(x_n) under φ_k, consistent as K → ∞ for any proposal
covering the posterior. Cost: K Cholesky factorisations of N x N (kept: K N² floats).

>>> import torch
>>> from activebayes.posteriors.gp import GaussianProcess
>>> x = torch.linspace(0, 1, 12).unsqueeze(-1)
>>> gp = GaussianProcess(hyper_samples=8, seed=0, device="cpu").fit(x, torch.sin(6 * x[:, 0]))
>>> w, mean, var = gp.predict_mixture(torch.rand(5, 1))
>>> w.shape[0] == mean.shape[0] <= 8, mean.shape[1], float(w.sum())
(True, 5, 1.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch
from torch import Tensor

from activebayes.posteriors._gp_kernels import Kernel, parts
from activebayes.posteriors._gp_modules import MIN_LENGTHSCALE, MIN_NOISE

_WORK = torch.float64
_NU = 5.0  # degrees of freedom of the t proposal
_MAX_SD = 3.0  # the proposal's widest standard deviation in log units
_NEWTON_STEPS = 8
_ELEMENTS = 1 << 22  # [K, N, chunk] cross-covariances held at once in prediction


@dataclass(frozen=True)
class HyperModel:
    """What log π needs besides φ: the kernel, the linear part's centre c [D] (normalised units),
    which entries of φ [P] are free (bool [P]), the priors (loc, scale) of log ℓ̃ and log σ̃_ε², and
    the lower bounds of ℓ̃ and σ̃_ε²."""

    kernel: Kernel
    centre: Tensor
    free: Tensor
    lengthscale_prior: tuple[float, float]
    noise_prior: tuple[float, float]
    min_lengthscale: float
    min_noise: float

    @property
    def n_lengthscales(self) -> int:
        return self.free.shape[0] - (3 if self.kernel.linear else 2)


def unpack(phi: Tensor, n_lengthscales: int, linear: bool) -> tuple[Tensor, Tensor, Tensor | None, Tensor]:
    """φ [K, P] -> (ℓ̃ [K, L], a [K], v [K] or None, σ̃_ε² [K]), exponentiated."""
    values = phi.exp()
    lengthscale, a = values[:, :n_lengthscales], values[:, n_lengthscales]
    v = values[:, n_lengthscales + 1] if linear else None
    return lengthscale, a, v, values[:, -1]


def cross_covariance(x1: Tensor, x2: Tensor, phi: Tensor, model: HyperModel) -> Tensor:
    """k_φk(x1, x2) [K, N, M] for inputs x1 [N, D], x2 [M, D] (normalised), without the noise:
    a k_s(r) (+ v (x1 − c)·(x2 − c)), r² = Σ_d (x1_d − x2_d)² / ℓ̃_d²."""
    lengthscale, a, v, _ = unpack(phi, model.n_lengthscales, model.kernel.linear)
    z1, z2 = x1[None] / lengthscale[:, None, :], x2[None] / lengthscale[:, None, :]  # [K, N, D], [K, M, D]
    shift = z1.mean(1, keepdim=True)  # centring, as gpytorch does, keeps r² accurate
    z1, z2 = z1 - shift, z2 - shift
    r2 = (z1**2).sum(-1)[:, :, None] + (z2**2).sum(-1)[:, None, :] - 2.0 * z1 @ z2.transpose(-2, -1)
    r2 = r2.clamp_min(0.0)
    if model.kernel.smooth == Kernel.RBF:
        smooth = torch.exp(-0.5 * r2)
    else:
        r = math.sqrt(5.0) * r2.clamp_min(1e-30).sqrt()
        smooth = (1.0 + r + r**2 / 3.0) * torch.exp(-r)
    k = a[:, None, None] * smooth
    if v is not None:
        k = k + v[:, None, None] * ((x1 - model.centre) @ (x2 - model.centre).T)[None]
    return k


def prior_variance(x: Tensor, phi: Tensor, model: HyperModel) -> Tensor:
    """k_φk(x_n, x_n) [K, M] for x [M, D]: a (+ v |x_n − c|²)."""
    _, a, v, _ = unpack(phi, model.n_lengthscales, model.kernel.linear)
    out = a[:, None].expand(-1, x.shape[0])
    if v is not None:
        out = out + v[:, None] * ((x - model.centre) ** 2).sum(-1)[None]
    return out


def _factor(x: Tensor, phi: Tensor, model: HyperModel) -> tuple[Tensor, Tensor]:
    """(Cholesky factors of K_φ + σ̃_ε² I [K, N, N], whether each succeeded [K])."""
    noise = unpack(phi, model.n_lengthscales, model.kernel.linear)[3]
    gram = cross_covariance(x, x, phi, model) + noise[:, None, None] * torch.eye(x.shape[0], dtype=x.dtype, device=x.device)
    chol, info = torch.linalg.cholesky_ex(gram)
    return chol, info == 0


def log_evidence(x: Tensor, y: Tensor, phi: Tensor, model: HyperModel) -> Tensor:
    """log p(ỹ | φ_k) [K] = −½ ỹᵀ C⁻¹ ỹ − ½ log det C − (N/2) log 2π, C = K_φ + σ̃_ε² I; x [N, D],
    y [N]; −inf where C is not numerically positive definite."""
    chol, ok = _factor(x, phi, model)
    chol = torch.where(ok[:, None, None], chol, torch.eye(x.shape[0], dtype=x.dtype, device=x.device))
    alpha = torch.linalg.solve_triangular(chol, y[None, :, None].expand(phi.shape[0], -1, -1), upper=False)[..., 0]
    value = -0.5 * (alpha**2).sum(-1) - chol.diagonal(dim1=-2, dim2=-1).log().sum(-1) - 0.5 * x.shape[0] * math.log(2 * math.pi)
    return torch.where(ok, value, torch.full_like(value, -math.inf))


def log_prior(phi: Tensor, model: HyperModel, *, truncate: bool = True) -> Tensor:
    """The log prior density of the free entries of φ [K, P] in log coordinates [K] (module
    docstring), up to a constant; −inf below the lower bounds when `truncate`."""
    n_ls, free = model.n_lengthscales, model.free
    loc, scale = model.lengthscale_prior
    ls = -0.5 * ((phi[:, :n_ls] - loc) / scale) ** 2
    mu, sigma = model.noise_prior
    noise = -0.5 * ((phi[:, -1] - mu) / sigma) ** 2
    value = (ls * free[:n_ls]).sum(-1) + (phi[:, n_ls:-1] * free[n_ls:-1]).sum(-1) + noise * free[-1]
    if truncate:
        low = (phi[:, :n_ls] < math.log(model.min_lengthscale)).logical_and(free[:n_ls]).any(-1)
        low = low | ((phi[:, -1] < math.log(model.min_noise)) & free[-1])
        value = torch.where(low, torch.full_like(value, -math.inf), value)
    return value


def log_posterior(x: Tensor, y: Tensor, phi: Tensor, model: HyperModel, *, truncate: bool = True) -> Tensor:
    """log π(φ_k) [K] up to a constant: `log_evidence` + `log_prior`."""
    return log_evidence(x, y, phi, model) + log_prior(phi, model, truncate=truncate)


def laplace(x: Tensor, y: Tensor, start: Tensor, model: HyperModel) -> tuple[Tensor, Tensor]:
    """(mode m [P], covariance H⁻¹ [F, F] over the F free entries) of log π by damped Newton steps
    from `start` [P] (the MAP's logs); H's eigenvalues floored at 1/`_MAX_SD`²."""
    free = model.free.nonzero().reshape(-1)

    def full(theta: Tensor) -> Tensor:
        return start.index_put((free,), theta)[None]

    def objective(theta: Tensor) -> Tensor:
        return log_posterior(x, y, full(theta), model, truncate=False)[0]

    theta = start[free].clone()
    for step in range(_NEWTON_STEPS + 1):
        grad = torch.autograd.functional.jacobian(objective, theta)
        values, vectors = torch.linalg.eigh(-torch.autograd.functional.hessian(objective, theta))
        values = values.clamp_min(1.0 / _MAX_SD**2)
        if step == _NEWTON_STEPS:
            break
        move = vectors @ ((vectors.T @ grad) / values)
        now = float(log_posterior(x, y, full(theta), model)[0])
        for _ in range(20):  # backtracking: accept the first step that raises the (truncated) target
            if float(log_posterior(x, y, full(theta + move), model)[0]) > now:
                break
            move = move / 2
        else:
            break
        theta = theta + move
        if float(move.abs().max()) < 1e-6:
            break
    covariance = (vectors / values) @ vectors.T
    return full(theta)[0], 0.5 * (covariance + covariance.T)


def draw_t(mode: Tensor, covariance: Tensor, free: Tensor, k: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """K draws φ [K, P] of the multivariate t_ν(mode, covariance) over the free entries (the
    others fixed at `mode`) and their log densities log q(φ_k) [K]:
        log q = log Γ((ν+F)/2) − log Γ(ν/2) − (F/2) log(νπ) − log det L − ((ν+F)/2) log(1 + δ/ν),
    δ = |L⁻¹(φ − m)|², L the Cholesky factor of the covariance [F, F]."""
    f = covariance.shape[0]
    chol = torch.linalg.cholesky(covariance)
    z = torch.randn(k, f, generator=generator, dtype=_WORK).to(mode.device)
    chi2 = (torch.randn(k, int(_NU), generator=generator, dtype=_WORK) ** 2).sum(-1).to(mode.device)  # χ²_ν, ν an integer
    scale = (_NU / chi2).sqrt()
    phi = mode[None].repeat(k, 1)
    phi[:, free.nonzero().reshape(-1)] = mode[free][None] + scale[:, None] * (z @ chol.T)
    delta = (z**2).sum(-1) * scale**2
    log_q = (
        math.lgamma((_NU + f) / 2) - math.lgamma(_NU / 2) - 0.5 * f * math.log(_NU * math.pi)
        - chol.diagonal().log().sum() - 0.5 * (_NU + f) * torch.log1p(delta / _NU)
    )  # fmt: skip
    return phi, log_q


@dataclass(frozen=True)
class HyperMixture:
    """The fitted mixture: K' kept draws φ [K', P] with weights [K'] (Σ = 1) and their Cholesky
    factors [K', N, N] on the training inputs x [N, D] (normalised) and targets y [N]
    (standardised); `ess` = 1 / Σ w²; `draws` = K, the draws made (weights 0 dropped)."""

    phi: Tensor
    weights: Tensor
    chol: Tensor
    x: Tensor
    y: Tensor
    model: HyperModel
    ess: float
    draws: int

    def latent(self, xq: Tensor) -> tuple[Tensor, Tensor]:
        """μ_k [K', M], σ_k² [K', M] of f(xq) under each φ_k (standardised units), xq [M, D] normalised."""
        k, n = self.phi.shape[0], self.x.shape[0]
        alpha = torch.cholesky_solve(self.y[None, :, None].expand(k, -1, -1), self.chol)[..., 0]  # [K', N]
        means, variances = [], []
        for chunk in xq.split(max(1, _ELEMENTS // max(1, k * n))):
            cross = cross_covariance(self.x, chunk, self.phi, self.model)  # [K', N, m]
            means.append(torch.einsum("kn,knm->km", alpha, cross))
            solved = torch.linalg.solve_triangular(self.chol, cross, upper=False)
            variances.append((prior_variance(chunk, self.phi, self.model) - (solved**2).sum(1)).clamp_min(0.0))
        if not means:
            empty = xq.new_zeros(k, 0)
            return empty, empty
        return torch.cat(means, 1), torch.cat(variances, 1)

    def components(self, xq: Tensor, shift: Tensor, scale: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """(w [K'], μ_k [K', M], σ_k² [K', M], σ_εk² [K']) in the original units, for xq [M, D]
        normalised and the targets' standardisation (m_y = shift, s_y = scale)."""
        with torch.no_grad():
            mu, var = self.latent(xq)
        return self.weights, mu * scale + shift, var * scale**2, self.noise * scale**2

    def to(self, device: torch.device) -> HyperMixture:
        """A copy with every tensor on `device`."""
        model = replace(self.model, centre=self.model.centre.to(device), free=self.model.free.to(device))
        moved = {name: getattr(self, name).to(device) for name in ("phi", "weights", "chol", "x", "y")}
        return replace(self, model=model, **moved)

    @property
    def noise(self) -> Tensor:
        """σ̃_εk² [K'] (standardised units)."""
        return unpack(self.phi, self.model.n_lengthscales, self.model.kernel.linear)[3]


def integrate(x: Tensor, y: Tensor, start: Tensor, model: HyperModel, k: int, seed: int) -> HyperMixture:
    """The importance-weighted mixture (module docstring) from the MAP's logs `start` [P]; x [N, D]
    normalised, y [N] standardised; K = `k` draws from a generator seeded with `seed`."""
    with torch.enable_grad():
        mode, covariance = laplace(x, y, start, model)
    generator = torch.Generator().manual_seed(seed)
    phi, log_q = draw_t(mode, covariance, model.free, k, generator)
    log_w = log_posterior(x, y, phi, model) - log_q
    if not bool(torch.isfinite(log_w).any()):  # no draw inside the bounds: the mode alone
        phi, log_w = mode[None], torch.zeros(1, dtype=_WORK, device=mode.device)
    weights = torch.softmax(log_w, 0)
    keep = weights > 0
    phi, weights = phi[keep], weights[keep] / weights[keep].sum()
    chol, _ = _factor(x, phi, model)
    return HyperMixture(phi, weights, chol, x, y, model, float(1.0 / (weights**2).sum()), k)


def integrate_map(gp, kernel: Kernel, x: Tensor, centre: Tensor, fixed: dict, noise_prior: tuple[float, float], k: int, seed: int) -> HyperMixture:
    """`integrate` from a fitted exact BoTorch GP `gp` (`GaussianProcess.model_`, its MAP): x [N, D]
    normalised inputs, centre [D] the linear part's, `fixed` {"lengthscale", "outputscale",
    "noise": the value given, or None where learnt}; the targets are its standardised ones."""
    scaled, linear = parts(gp.covar_module)
    values = [scaled.base_kernel.lengthscale.reshape(-1), scaled.outputscale.reshape(1)]
    values += [linear.variance.reshape(1)] if linear is not None else []
    values += [gp.likelihood.noise.reshape(1)]
    n_ls = values[0].shape[0]
    free = [fixed["lengthscale"] is None] * n_ls + [fixed["outputscale"] is None] + [True] * (linear is not None)
    free += [fixed["noise"] is None]
    # the MAP fit's priors and bounds (`_gp_modules.gp_modules`)
    loc, scale = math.sqrt(2.0) + 0.5 * math.log(x.shape[1]), math.sqrt(3.0)
    model = HyperModel(kernel, centre, torch.tensor(free, device=x.device), (loc, scale), noise_prior, MIN_LENGTHSCALE, MIN_NOISE)
    targets = gp.train_targets.reshape(-1)  # ỹ: standardised by the outcome transform when `gp` was built
    return integrate(x, targets, torch.cat(values).detach().log(), model, k, seed)
