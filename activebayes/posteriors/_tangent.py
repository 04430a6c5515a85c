"""The prior precision of the linearised network from the evidence of its tangent linear model
(prior_precision="tangent"; Antorán, Janz, Allingham, Daxberger, Barbano, Nalisnick and
Hernández-Lobato, "Adapting the linearised Laplace model evidence for modern deep learning",
ICML 2022; MacKay 1992 for the fixed point).

Glossary as in `_gram`: N items, C classes, P parameters. J(x) [C, P] is the network's Jacobian at
its trained weights θ*. The tangent linear model is h(x; w) = J(x) w with the prior w ~ N(0, I/δ),
so its outputs are a Gaussian process with kernel k(x, x') = J(x) J(x')ᵀ / δ, and its labels
enter through the softmax likelihood. The Laplace evidence used by `prior_precision="marglik"` and
by online marglik is evaluated at θ*, with the regulariser ½ δ ‖θ*‖²: but θ* is not the mode of
this linear model (it carries its initialisation's weights in the P − N·C directions that the
data never touch), so ‖θ*‖² is far too large, δ ≈ γ/‖θ*‖² far too small, and the predictive
J Σ Jᵀ far too wide (the under-confidence measured in README_EXPERIMENTS). Here the evidence is
the tangent model's own, at its own mode, in the dual (N·C) space, as a Gaussian-process
classifier (Rasmussen & Williams 2006, §3.4, with a full N·C × N·C kernel):

    mode:      û = argmax_u  log p(y | u) − ½ uᵀ K⁻¹ u,   K = G/δ,  G = J(X) J(X)ᵀ  [NC, NC]
               Newton: b = W u + ∇ log p(y | u),  a = b − W½ B⁻¹ W½ K b,  u ← K a,
               W = blockdiag(diag p_n − p_n p_nᵀ), B = I + W½ K W½ (W½ each block's symmetric root);
    evidence:  log q(y | δ) = log p(y | û) − ½ aᵀ û − Σ log diag chol(B);
    δ:         MacKay's fixed point δ ← γ / ‖w‖², with the tangent mode's weights w = Jᵀ a / δ
               (the representer theorem: they lie in the data's span) and γ = tr(R G)/δ the number
               of directions the data determine, R = W½ B⁻¹ W½ = (W⁻¹ + K)⁻¹; so
               δ ← δ · tr(R G) / (aᵀ G a), from δ₀ = tr G / (N·C) until it moves by < `tol`.
               It is the stationary point of the evidence with the curvature W held at the mode,
               the convention of the deep-learning Laplace evidence (laplace-torch's and online
               marglik's gradient in δ treats the GGN as fixed too). Differentiating W(û(δ)) as
               well moves the maximum to a far smaller δ on separable data (on 200 MNIST labels
               about 7 against 97.9, README_EXPERIMENTS), the wide prior that makes the Laplace
               predictive under-confident.

The posterior that predicts is then N(θ*, (Jᵀ W(û) J + δ I)⁻¹): the exact GGN in `_gram`'s dual
form, with the softmax Hessians at the tangent mode û instead of at the network's outputs (one
δ for every tensor), so `_gram.GramGaussian` gives its linearised predictive (mean f(x; θ*),
J* Σ J*ᵀ = k** − k*ᵀ R k*) and its weight samples unchanged. Classification only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from activebayes.errors import ConfigError
from activebayes.posteriors._glm import _unit_vectors
from activebayes.posteriors._gram import MAX_GRAM_ROWS, GramCurvature, cross, jacobian_rows
from activebayes.posteriors._kfac import _nll_sum, curvature_layers, parameter_tensors

MAX_FIXED_POINT_STEPS = 200


@dataclass(frozen=True)
class TangentMode:
    """The tangent model's mode at one δ: outputs u [C·N] (class-major, as `_gram.cross` orders
    rows), a = K⁻¹ u [C·N], the Hessian roots W½ [N, C, C], chol(B) [C·N, C·N], the evidence."""

    outputs: Tensor
    coefficients: Tensor
    root: Tensor
    chol: Tensor
    evidence: Tensor


def softmax_hessian_root(logits: Tensor) -> Tensor:
    """The symmetric square root of diag p − p pᵀ for each row of logits [N, C]: [N, C, C]."""
    p = torch.softmax(logits, dim=1)
    values, vectors = torch.linalg.eigh(torch.diag_embed(p) - p[:, :, None] * p[:, None, :])
    return vectors @ torch.diag_embed(values.clamp_min(0.0).sqrt()) @ vectors.mT


def _apply_root(root: Tensor, rows: Tensor) -> Tensor:
    """W½ · rows for rows [C·N, ...] in class-major order (row c·N + n); W½ [N, C, C]."""
    n, c = root.shape[0], root.shape[1]
    by_item = rows.reshape(c, n, -1).permute(1, 0, 2)  # [N, C, ...]
    return (root @ by_item).permute(1, 0, 2).reshape(rows.shape)


def _log_likelihood(outputs: Tensor, y: Tensor, n_classes: int) -> Tensor:
    return -_nll_sum("categorical", outputs.reshape(n_classes, -1).T, y)


def tangent_mode(kernel: Tensor, y: Tensor, n_classes: int, start: Tensor | None = None, *, tol: float = 1e-10) -> TangentMode:
    """Newton's method for the mode of log p(y | u) − ½ uᵀ K⁻¹ u (module docstring), halving a step
    that lowers the objective; kernel [C·N, C·N] class-major, y [N] labels, `start` the
    coefficients a [C·N] to start from (u = K a; zeros when None)."""
    rows = kernel.shape[0]
    eye = torch.eye(rows, dtype=kernel.dtype, device=kernel.device)
    onehot = nn.functional.one_hot(y.long(), n_classes).to(kernel.dtype).T.reshape(-1)  # class-major
    a = torch.zeros(rows, dtype=kernel.dtype, device=kernel.device) if start is None else start
    u = kernel @ a
    objective = _log_likelihood(u, y, n_classes) - 0.5 * a @ u
    for _ in range(100):
        logits = u.reshape(n_classes, -1).T
        root = softmax_hessian_root(logits)
        chol = torch.linalg.cholesky(eye + _apply_root(root, _apply_root(root, kernel).T))
        grad = onehot - torch.softmax(logits, dim=1).T.reshape(-1)
        b = _apply_root(root, _apply_root(root, u[:, None]))[:, 0] + grad
        target = b - _apply_root(root, torch.cholesky_solve(_apply_root(root, (kernel @ b)[:, None]), chol))[:, 0]
        step, previous = 1.0, objective
        while True:
            trial = a + step * (target - a)
            u_trial = kernel @ trial
            objective = _log_likelihood(u_trial, y, n_classes) - 0.5 * trial @ u_trial
            if objective >= previous or step < 1e-6:
                break
            step /= 2
        a, u = trial, u_trial
        if float(objective - previous) < tol * max(1.0, abs(float(objective))):
            break
    root = softmax_hessian_root(u.reshape(n_classes, -1).T)
    chol = torch.linalg.cholesky(eye + _apply_root(root, _apply_root(root, kernel).T))
    evidence = _log_likelihood(u, y, n_classes) - 0.5 * a @ u - chol.diagonal().log().sum()
    return TangentMode(u, a, root, chol, evidence)


def tangent_precision(gram: Tensor, y: Tensor, n_classes: int, *, tol: float = 1e-6) -> tuple[float, TangentMode]:
    """(δ, the mode at δ) at MacKay's fixed point of the tangent model's evidence (module docstring);
    gram = J(X) J(X)ᵀ [C·N, C·N] class-major, y [N]."""
    delta = float(gram.diagonal().mean())
    mode = tangent_mode(gram / delta, y, n_classes)
    for _ in range(MAX_FIXED_POINT_STEPS):
        weighted = _apply_root(mode.root, _apply_root(mode.root, gram).T)  # W½ G W½
        determined = torch.cholesky_solve(weighted, mode.chol).diagonal().sum()  # tr(R G) = tr(B⁻¹ W½ G W½)
        norm = mode.coefficients @ gram @ mode.coefficients  # aᵀ G a = δ² ‖w‖²
        new = delta * float(determined / norm)
        if not math.isfinite(new) or new <= 0:
            raise ConfigError("prior_precision: the tangent model's evidence has no finite maximum here (its mode fits no label)")
        moved = abs(math.log(new / delta))
        mode = tangent_mode(gram / new, y, n_classes, start=mode.coefficients * (new / delta))  # the same u to start from
        delta = new
        if moved < tol:
            break
    return delta, mode


@dataclass(frozen=True)
class TangentFit:
    """`fit_tangent`'s result: the exact GGN at the tangent mode in `_gram`'s dual form, δ, the
    tangent model's evidence at δ, and what `evidence` needs at another δ (G [C·N, C·N], y [N])."""

    curvature: GramCurvature
    delta: float
    evidence: Tensor
    gram: Tensor
    labels: Tensor

    def evidence_at(self, delta: float | Tensor) -> Tensor:
        """The tangent model's evidence log q(y | δ) at another single δ (module docstring)."""
        return tangent_mode(self.gram / delta, self.labels, self.curvature.n_outputs).evidence


@torch.no_grad()
def fit_tangent(model: nn.Module, x: Tensor, y: Tensor) -> TangentFit:
    """The tangent model's δ and the posterior it gives (module docstring) for `model` (eval mode)
    on x [N, ...] and labels y [N]."""
    layers = curvature_layers(model)
    c = model(x[:1]).shape[1]
    if x.shape[0] * c > MAX_GRAM_ROWS:
        raise ConfigError(f"prior_precision: 'tangent' works with N·C x N·C matrices, and N·C = {x.shape[0] * c} is above "
                          f"{MAX_GRAM_ROWS}; use 'marglik' with hessian='kron'")  # fmt: skip
    logits, jacobians = jacobian_rows(model, layers, x, _unit_vectors, c)
    gram = sum(cross(j, j) for j in jacobians)
    delta, mode = tangent_precision(gram, y, c)  # type: ignore[arg-type]
    # U = W½(û) J: each item's C Jacobian rows mixed by its Hessian root at the tangent mode
    weighted = tuple((torch.einsum("mkc,cm...->km...", mode.root, g), rows) for g, rows in jacobians)
    blocks = tuple(cross(f, f) for f in weighted)
    mean = tuple(p.detach().reshape(-1).to(torch.float64) for p in parameter_tensors(layers))
    loss = _nll_sum("categorical", logits, y)
    curvature = GramCurvature("full", blocks, mean, loss, x.shape[0], c, "categorical", weighted)
    return TangentFit(curvature, delta, mode.evidence, gram, y)  # type: ignore[arg-type]


__all__ = ["TangentFit", "TangentMode", "fit_tangent", "softmax_hessian_root", "tangent_mode", "tangent_precision"]
