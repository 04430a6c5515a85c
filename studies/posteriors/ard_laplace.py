"""Automatic relevance determination (ARD) for the last layer's Laplace posterior (MacKay 1992;
Tipping 2001): one prior precision δ_i per weight, fitted by the last layer's Laplace evidence.

Glossary as in `activebayes.posteriors._curvature`: N items, features φ [N, D], C classes,
θ = [vec(W), b] [P], P = C·D + C, in laplace-torch's order (W [C, D] row-major, then b [C]);
φ̃ = [φ, 1]; H = Σ_n Λ_n ⊗ φ̃_n φ̃_nᵀ [P, P] the exact GGN (= the Hessian) of Σ_n CE at θ
(`ggn_full`).

Prior θ ~ N(0, diag(δ)⁻¹), δ [P]. Laplace posterior N(θ, A⁻¹), A = H + diag(δ), and evidence

    log p(D | δ) ≈ log p(D | θ) − ½ (log det A − Σ_i log δ_i + Σ_i δ_i θ_i²)      (`log_evidence`)

(the isotropic `_curvature.log_marginal_likelihood` with δ a vector). Its gradient in log δ_i is
½ (γ_i − δ_i θ_i²), γ_i = 1 − δ_i (A⁻¹)_ii, so the stationary points are MacKay's fixed point

    δ_i ← γ_i / θ_i²                                                              (`ard_fixed_point`).

That iteration converges linearly (not within 500 steps at P = 1,290 in the screen), so δ is
fitted instead by damped Newton ascent on the evidence in log δ (`ard_newton`, 7-10 steps
there), which reaches the same point (tests/test_ard_laplace.py). Each δ_i is kept in [floor, cap] (an unneeded weight's δ_i runs
to infinity when θ is re-fitted, variant B; a weight the data leave free with θ_i ≠ 0 runs to 0 at
fixed θ). At the fixed point each weight's prior variance is 1/δ_i = θ_i²/γ_i ≥ θ_i².
    Variant A (post hoc): θ the trained network's last layer, held fixed.
    Variant B: alternations of θ ← argmax log p(D | θ) − ½ Σ δ_i θ_i² (Newton, `map_weights`, on
        the features φ as given, e.g. a network's eval-mode features),
        H at that θ, then δ by `ard_newton`.
Predictive: the probit GLM with f_var[n, c] = φ̃_nᵀ (A⁻¹)_cc φ̃_n (`_curvature.LastLayerGaussian`
on the precision A, δ = 0 added).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from activebayes.posteriors._curvature import LastLayerGaussian, ggn_full
from activebayes.posteriors._moment_propagation import probit_softmax

CAP, FLOOR = 1e8, 1e-6  # bounds on each δ_i


def logits_of(phi: Tensor, theta: Tensor, c: int) -> Tensor:
    """f = W φ + b [N, C] for θ [P] in laplace-torch order."""
    d = phi.shape[1]
    return phi @ theta[: c * d].reshape(c, d).T + theta[c * d :]


def log_likelihood(phi: Tensor, y: Tensor, theta: Tensor, c: int) -> Tensor:
    """log p(D | θ) = −Σ_n CE(f_n, y_n), a scalar."""
    return -torch.nn.functional.cross_entropy(logits_of(phi, theta, c), y, reduction="sum")


def log_evidence(log_lik: Tensor, h: Tensor, theta: Tensor, delta: Tensor) -> Tensor:
    """The Laplace evidence above from log p(D | θ), H [P, P], θ [P], δ [P] (differentiable in δ)."""
    a = h + torch.diag(delta)
    return log_lik - 0.5 * (torch.linalg.slogdet(a)[1] - delta.log().sum() + (delta * theta.square()).sum())


def effective_parameters(h: Tensor, delta: Tensor) -> Tensor:
    """γ_i = 1 − δ_i (A⁻¹)_ii [P], A = H + diag(δ) (by its Cholesky factor); Σ γ_i is MacKay's γ."""
    factor = torch.linalg.cholesky(h + torch.diag(delta))
    return 1.0 - delta * torch.cholesky_inverse(factor).diagonal()


def ard_fixed_point(h: Tensor, theta: Tensor, delta: Tensor, *, iterations: int = 500, tol: float = 1e-6,
                    cap: float = CAP, floor: float = FLOOR) -> tuple[Tensor, int]:  # fmt: skip
    """δ_i ← clip(γ_i / θ_i², floor, cap) from δ [P] until max |Δ log δ_i| < tol over the entries
    that are not at a bound; returns (δ [P], the iterations run)."""
    for step in range(1, iterations + 1):
        gamma = effective_parameters(h, delta).clamp(0.0, 1.0)
        new = (gamma / theta.square().clamp_min(1e-300)).clamp(floor, cap)
        free = (new > floor) & (new < cap)
        change = (new.log() - delta.log()).abs()
        delta = new
        if not free.any() or float(change[free].max()) < tol:
            return delta, step
    return delta, iterations


def evidence_derivatives(h: Tensor, theta: Tensor, delta: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """The δ-dependent part F of the evidence and its gradient [P] and Hessian [P, P] in t = log δ:

        F = −½ (log det A − Σ_i t_i + Σ_i δ_i θ_i²),    Σ = A⁻¹ = (H + diag δ)⁻¹,
        ∂F/∂t_i = ½ (1 − δ_i Σ_ii − δ_i θ_i²) = ½ (γ_i − δ_i θ_i²),
        ∂²F/∂t_i∂t_j = −½ [i = j] (δ_i Σ_ii + δ_i θ_i²) + ½ δ_i δ_j Σ_ij².
    """
    factor = torch.linalg.cholesky(h + torch.diag(delta))
    sigma = torch.cholesky_inverse(factor)
    value = -0.5 * (2 * factor.diagonal().log().sum() - delta.log().sum() + (delta * theta.square()).sum())
    diag = delta * sigma.diagonal() + delta * theta.square()
    hessian = 0.5 * torch.outer(delta, delta) * sigma.square() - 0.5 * torch.diag(diag)
    return value, 0.5 * (1.0 - diag), hessian


def ard_newton(h: Tensor, theta: Tensor, delta: Tensor, *, iterations: int = 200, tol: float = 1e-8,
               cap: float = CAP, floor: float = FLOOR) -> tuple[Tensor, int]:  # fmt: skip
    """argmax of the evidence over δ ∈ [floor, cap]^P by damped (Levenberg-Marquardt) Newton steps
    in t = log δ (`evidence_derivatives`), each solved over the entries not held at a bound by
    their gradient, accepted when F rises (else the damping grows ten-fold); from δ [P] until the
    free entries' |∂F/∂t_i| < tol. Returns (δ [P], the iterations run)."""
    lower, upper = torch.log(torch.tensor(floor)).item(), torch.log(torch.tensor(cap)).item()
    t = delta.log().clamp(lower, upper)
    value, grad, hessian = evidence_derivatives(h, theta, t.exp())
    damping = 1e-3
    for step in range(1, iterations + 1):
        free = ~(((t <= lower) & (grad < 0)) | ((t >= upper) & (grad > 0)))
        if not free.any() or float(grad[free].abs().max()) < tol:
            return t.exp(), step - 1
        system = -hessian[free][:, free]
        while damping < 1e12:
            change = torch.linalg.solve(system + damping * torch.eye(int(free.sum()), dtype=t.dtype), grad[free])
            trial = t.clone()
            trial[free] = (t[free] + change.clamp(-5.0, 5.0)).clamp(lower, upper)
            trial_value, trial_grad, trial_hessian = evidence_derivatives(h, theta, trial.exp())
            if trial_value >= value:
                t, value, grad, hessian = trial, trial_value, trial_grad, trial_hessian
                damping = max(damping / 10, 1e-9)
                break
            damping *= 10
        else:
            return t.exp(), step
    return t.exp(), iterations


def map_weights(phi: Tensor, y: Tensor, theta: Tensor, delta: Tensor, c: int, *, iterations: int = 100,
                tol: float = 1e-9) -> Tensor:  # fmt: skip
    """argmin_θ Σ_n CE(f_n, y_n) + ½ Σ_i δ_i θ_i² (convex) by Newton's method from θ [P], the
    Hessian H(θ) + diag(δ) and the gradient Σ_n (p_n − e_{y_n}) ⊗ φ̃_n + δ ⊙ θ, with step halving."""
    d = phi.shape[1]
    tilde = torch.cat([phi, phi.new_ones(phi.shape[0], 1)], dim=1)

    def objective(t: Tensor) -> Tensor:
        return -log_likelihood(phi, y, t, c) + 0.5 * (delta * t.square()).sum()

    value = objective(theta)
    for _ in range(iterations):
        probs = torch.softmax(logits_of(phi, theta, c), dim=1)
        residual = probs - torch.nn.functional.one_hot(y, c).to(probs)  # [N, C]
        outer = residual.T @ tilde  # [C, D+1]
        grad = torch.cat([outer[:, :d].reshape(-1), outer[:, d]]) + delta * theta
        step = torch.linalg.solve(ggn_full(phi, probs) + torch.diag(delta), grad)
        scale = 1.0
        while scale > 1e-8:
            trial = theta - scale * step
            trial_value = objective(trial)
            if trial_value <= value:
                break
            scale *= 0.5
        theta, decrease, value = trial, float(value - trial_value), trial_value
        if decrease < tol * max(1.0, abs(float(value))):
            break
    return theta


@dataclass
class ArdFit:
    """A fitted ARD last layer: θ [P], δ [P], H [P, P] at θ, the evidence, Σ γ_i, and per
    alternation (the first: at the given θ) the Newton iterations and the evidence after them."""

    theta: Tensor
    delta: Tensor
    h: Tensor
    evidence: float
    gamma: float
    iterations: list[int] = field(default_factory=list)
    evidences: list[float] = field(default_factory=list)

    def moments(self, phi: Tensor, c: int) -> tuple[Tensor, Tensor]:
        """(f_map [N, C], diag f_var [N, C]) of the GLM predictive at features φ [N, D]."""
        gaussian = LastLayerGaussian("full", None, self.theta, c, phi.shape[1], curvature=self.h + torch.diag(self.delta))
        return logits_of(phi, self.theta, c), gaussian.functional_variance(phi, 0.0, diagonal=True)

    def predict_proba(self, phi: Tensor, c: int) -> Tensor:
        """The probit GLM predictive [N, C]."""
        return probit_softmax(*self.moments(phi, c))


def fit_ard(phi: Tensor, y: Tensor, theta: Tensor, delta: Tensor, c: int, *, alternations: int = 0,
            until: float | None = None) -> ArdFit:  # fmt: skip
    """Variant A (alternations = 0): δ by `ard_newton` at the given θ [P] from δ [P]; variant B:
    then `alternations` times θ ← `map_weights` at δ, H at θ, δ by `ard_newton`, or fewer when
    `until` is set: stop after an alternation that raises the evidence by less than `until` nats
    (float64 inside)."""
    phi, theta, delta = phi.double(), theta.double(), delta.double()

    def curvature(t: Tensor) -> Tensor:
        return ggn_full(phi, torch.softmax(logits_of(phi, t, c), dim=1))

    iterations, evidences = [], []
    for alternation in range(alternations + 1):
        if alternation:
            theta = map_weights(phi, y, theta, delta, c)
        h = curvature(theta)
        delta, steps = ard_newton(h, theta, delta)
        iterations.append(steps)
        evidences.append(float(log_evidence(log_likelihood(phi, y, theta, c), h, theta, delta)))
        if until is not None and alternation and evidences[-1] - evidences[-2] < until:
            break
    gamma = float(effective_parameters(h, delta).sum())
    return ArdFit(theta, delta, h, evidences[-1], gamma, iterations, evidences)
