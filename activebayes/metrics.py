"""Predictive quality and calibration metrics: pure functions of probs [N, C] and labels [N].

    accuracy = (1/N) Σ_n [argmax_c p_nc = y_n]
    nll      = −(1/N) Σ_n log p_{n, y_n}                    (nats; p clamped at 1e-12)
    brier    = (1/N) Σ_n Σ_c (p_nc − [c = y_n])²            (summed over classes, in [0, 2])
    ece      = Σ_b (|B_b| / N) · |acc(B_b) − conf(B_b)|      (equal-width confidence bins)
    auroc    = P(score_out > score_in) + ½ P(score_out = score_in)

Regression, of a Gaussian predictive N(μ_n, v_n) with v_n = σ_n² + σ_ε² against targets y [N]:

    rmse         = √( (1/N) Σ_n (y_n − μ_n)² )
    gaussian_nll = (1/N) Σ_n [ ½ log(2π v_n) + (y_n − μ_n)² / (2 v_n) ]     (nats)

>>> import torch
>>> probs, labels = torch.tensor([[0.9, 0.1], [0.2, 0.8]]), torch.tensor([0, 0])
>>> float(accuracy(probs, labels))
0.5
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from activebayes.errors import ShapeError

_EPS = 1e-12


def _check(probs: Tensor, labels: Tensor) -> tuple[Tensor, Tensor]:
    if not isinstance(probs, Tensor) or probs.dim() != 2:
        got = tuple(probs.shape) if isinstance(probs, Tensor) else type(probs).__name__
        raise ShapeError(f"probs: expected a tensor [N, C], got {got}")
    if not isinstance(labels, Tensor) or labels.dim() != 1 or labels.shape[0] != probs.shape[0]:
        got = tuple(labels.shape) if isinstance(labels, Tensor) else type(labels).__name__
        raise ShapeError(f"labels: expected a tensor [N] with N={probs.shape[0]}, got {got}")
    if probs.shape[0] == 0:
        raise ShapeError("probs: expected at least one item, got N=0")
    labels = labels.to(probs.device).long()
    if bool((labels < 0).any()) or bool((labels >= probs.shape[1]).any()):
        raise ShapeError(f"labels: expected classes in [0, {probs.shape[1] - 1}], got range "
                         f"[{int(labels.min())}, {int(labels.max())}]")
    return probs, labels


def accuracy(probs: Tensor, labels: Tensor) -> Tensor:
    """Share of items whose most probable class is the label, a scalar tensor."""
    probs, labels = _check(probs, labels)
    return (probs.argmax(1) == labels).to(probs.dtype).mean()


def nll(probs: Tensor, labels: Tensor) -> Tensor:
    """Mean negative log-likelihood −(1/N) Σ_n log p_{n, y_n} in nats."""
    probs, labels = _check(probs, labels)
    picked = probs.gather(1, labels.unsqueeze(1)).squeeze(1)
    return -picked.clamp_min(_EPS).log().mean()


def brier(probs: Tensor, labels: Tensor) -> Tensor:
    """Brier score: squared error summed over the C classes, averaged over items (0 best, 2 worst)."""
    probs, labels = _check(probs, labels)
    onehot = torch.nn.functional.one_hot(labels, probs.shape[1]).to(probs.dtype)
    return (probs - onehot).square().sum(1).mean()


def expected_calibration_error(probs: Tensor, labels: Tensor, n_bins: int = 15) -> Tensor:
    """ECE with `n_bins` equal-width bins of the confidence max_c p_nc over [0, 1].

    Bin b holds the items with confidence in ((b−1)/B, b/B] (the first bin also takes 0);
    ECE = Σ_b (|B_b| / N) |acc(B_b) − conf(B_b)|, empty bins contribute 0.
    """
    probs, labels = _check(probs, labels)
    if n_bins < 1:
        raise ShapeError(f"n_bins: expected a positive integer, got {n_bins}")
    confidence, predicted = probs.max(1)
    correct = (predicted == labels).to(probs.dtype)
    bins = (torch.ceil(confidence * n_bins).long() - 1).clamp(0, n_bins - 1)  # [N]
    count = torch.zeros(n_bins, dtype=probs.dtype, device=probs.device).index_add_(0, bins, torch.ones_like(confidence))
    conf_sum = torch.zeros_like(count).index_add_(0, bins, confidence)
    acc_sum = torch.zeros_like(count).index_add_(0, bins, correct)
    return (acc_sum - conf_sum).abs().sum() / probs.shape[0]


def auroc(scores_in: Tensor, scores_out: Tensor) -> Tensor:
    """Area under the ROC curve for telling out-of-distribution items (positives) from
    in-distribution ones, where a higher score means more likely OOD; ties count ½.

    Computed as the Mann-Whitney U statistic with mid-ranks: (R_out − n_out(n_out+1)/2) / (n_in n_out).
    """
    for name, s in (("scores_in", scores_in), ("scores_out", scores_out)):
        if not isinstance(s, Tensor) or s.dim() != 1 or s.shape[0] == 0:
            got = tuple(s.shape) if isinstance(s, Tensor) else type(s).__name__
            raise ShapeError(f"{name}: expected a non-empty tensor [N], got {got}")
    scores = torch.cat([scores_in, scores_out.to(scores_in)]).to(torch.float64)
    n_in, n_out = scores_in.shape[0], scores_out.shape[0]
    sorted_scores, order = torch.sort(scores)
    _, inverse, counts = torch.unique_consecutive(sorted_scores, return_inverse=True, return_counts=True)
    ends = counts.cumsum(0).to(torch.float64)
    mid_rank = ends - (counts.to(torch.float64) - 1) / 2  # 1-based average rank of each tie group
    ranks = torch.empty_like(scores)
    ranks[order] = mid_rank[inverse]
    rank_out = ranks[n_in:].sum()
    return (rank_out - n_out * (n_out + 1) / 2) / (n_in * n_out)


def _check_regression(mean: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    for name, t in (("mean", mean), ("target", target)):
        if not isinstance(t, Tensor) or t.dim() != 1:
            got = tuple(t.shape) if isinstance(t, Tensor) else type(t).__name__
            raise ShapeError(f"{name}: expected a tensor [N], got {got}")
    if target.shape[0] != mean.shape[0]:
        raise ShapeError(f"target: expected N={mean.shape[0]} values to match mean, got {target.shape[0]}")
    if mean.shape[0] == 0:
        raise ShapeError("mean: expected at least one item, got N=0")
    return mean.to(torch.float64), target.to(device=mean.device, dtype=torch.float64)


def rmse(mean: Tensor, target: Tensor) -> Tensor:
    """Root mean squared error √((1/N) Σ_n (y_n − μ_n)²) of predicted means [N] against targets
    [N], in target units (float64 scalar)."""
    mean, target = _check_regression(mean, target)
    return (target - mean).square().mean().sqrt()


def gaussian_nll(mean: Tensor, var: Tensor, target: Tensor, noise: float | Tensor = 0.0) -> Tensor:
    """Mean negative log-likelihood of targets y [N] under N(μ_n, v_n), v_n = var_n + noise:

        (1/N) Σ_n [ ½ log(2π v_n) + (y_n − μ_n)² / (2 v_n) ]      (nats, float64 scalar)

    `var` [N] is the predictive variance of y, or the latent variance σ_n² of f with the
    observation noise σ_ε² given as `noise` (a float or a tensor [N]); v_n is clamped at 1e-12.
    """
    mean, target = _check_regression(mean, target)
    if not isinstance(var, Tensor) or tuple(var.shape) != tuple(mean.shape):
        got = tuple(var.shape) if isinstance(var, Tensor) else type(var).__name__
        raise ShapeError(f"var: expected a tensor [{mean.shape[0]}] like mean, got {got}")
    noise_t = torch.as_tensor(noise, dtype=torch.float64, device=mean.device)
    v = (var.to(device=mean.device, dtype=torch.float64) + noise_t).clamp_min(_EPS)
    return (0.5 * torch.log(2 * math.pi * v) + (target - mean).square() / (2 * v)).mean()
