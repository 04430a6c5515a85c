"""EPIG, the expected predictive information gain (Bickford Smith, Kirsch, Farquhar, Gal, Foster
& Rainforth 2023, "Prediction-oriented Bayesian active learning", AISTATS):

    EPIG(x) = E_{x* ~ p*(x*)} I[y; y* | x, x*] ≈ (1/M) Σ_m I[y; y* | x, x*_m],

what a label at candidate x tells about the predictions at M target inputs x*_m (samples of the
inputs the model will be asked about), in nats; larger = ask first. Unlike BALD it ignores
information about θ that no prediction at the targets needs: 0 <= EPIG(x) <= BALD(x) (y and y*
are independent given θ, so I[y; y*] <= I[y; θ] by data processing; this holds exactly for the
estimators too, the samples s playing θ).

Classification, from S posterior samples θ_s with weights w_s, the SAME θ_s for the candidates'
probs [S, N, C] and the targets' [S, M, C] (the reference code's `epig_from_probs_using_matmul`):
    p(y, y* | x, x*) ≈ Σ_s w_s p(y | x, θ_s) p(y* | x*, θ_s)               [C, C]
    I[y; y* | x, x*] = Σ_{y,y*} p(y, y*) log[p(y, y*) / (p(y) p(y*))] = H[y] + H[y*] − H[y, y*]
    EPIG(x) = H[p(y | x)] + (1/M) Σ_m H[p(y* | x*_m)] − (1/M) Σ_m H[p(y, y* | x, x*_m)].
The joints of a candidates and b targets are one matmul [a·C, S] @ [S, b·C], so memory is
O(a · b · C²) whatever N and M; float64 on the inputs' device, 0 log 0 = 0, rows renormalised,
the result clamped at 0 and returned in the probs' working dtype.

Regression: for jointly Gaussian (y, y*) with correlation ρ, I[y; y*] = −½ log(1 − ρ²):
  * `epig_gaussian`, from joint samples y | θ_s ~ N(μ_s, σ_s²): the moment-matched Gaussian,
        Cov[y, y*] = Σ_s w_s (μ_s(x) − μ̄(x)) (μ_s(x*) − μ̄(x*)),
        Var[y] = Σ_s w_s (μ_s(x) − μ̄(x))² + Σ_s w_s σ_s²(x)   (likewise Var[y*]);
  * `epig_from_covariance`: the same from an explicit cross-covariance and variances (noise on);
  * a GP (`botorch_model`): the exact joint posterior covariance k_D(x, x*) with σ_ε² added to
    k_D(x, x) and k_D(x*, x*), from `model.posterior([x; x*])`.
ρ² is clamped at 1 − 1e-12 (at most ~13.8 nats). A GP's `predict` (quadrature nodes of each
MARGINAL, `latent_*` with weights) has no joint samples and is refused by `epig_gaussian`.

Pools (`TargetPosterior`): scoring predicts each candidate batch TOGETHER with the targets, in
one `predict` call on [x_B; x*], so sample s is one θ_s for both whatever a posterior does
between calls. Refused: mc-dropout's masks="independent" (each item has its own masks) and
predictive="analytic" (each item's draws come from its own marginal): neither has joint samples.

>>> import torch
>>> p = torch.tensor([[[1.0, 0.0], [1.0, 0.0]], [[0.0, 1.0], [0.0, 1.0]]])   # [S=2, N=2, C=2]
>>> epig(p, p[:, :1])   # each sample settles y and y* alike: log 2
tensor([0.6931, 0.6931])
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any, NamedTuple

import torch
from torch import Tensor

from activebayes.acquisition import _entropy as E
from activebayes.errors import ConfigError, ShapeError
from activebayes.predictive import GaussianPredictive, Predictive, as_predictive

_BUDGET = 1 << 22  # elements of one joint block [a·C, b·C] (32 MiB in float64)
_GAUSS_BUDGET = 1 << 22  # elements of one cross-covariance block [a, b]
_MAX_RHO2 = 1.0 - 1e-12
_F64 = torch.float64


def _pair(pred: Any, target_pred: Any) -> tuple[Any, Any, Tensor]:
    """Both as predictives of one kind with the same S (and weights); the weights w [S] float64."""
    pred, target = as_predictive(pred), as_predictive(target_pred)
    if type(pred) is not type(target):
        raise ShapeError(f"epig: target_pred: expected a {type(pred).__name__} like pred, got a {type(target).__name__}")
    if target.n_samples != pred.n_samples:
        raise ShapeError(f"epig: target_pred: expected the same S={pred.n_samples} posterior samples as pred, got S={target.n_samples}")
    if target.n_candidates == 0:
        raise ShapeError("epig: target_pred: expected at least one target input, got M=0")
    w = pred.sample_weights().to(_F64)
    if target.weights is not None and target.weights is not pred.weights and not torch.allclose(target.weights.to(w), w, atol=1e-6):
        raise ShapeError("epig: target_pred: expected the same sample weights as pred (the same θ_s), got others")
    return pred, target, w


def _rows(probs: Tensor, device: torch.device) -> Tensor:
    """probs [S, N, C] as float64 on `device`, negatives clamped, each row renormalised to sum 1."""
    probs = probs.to(device=device, dtype=_F64).clamp_min(0.0)
    return probs / probs.sum(-1, keepdim=True).clamp_min(torch.finfo(_F64).tiny)


def epig(
    pred: Predictive | GaussianPredictive | Tensor,
    target_pred: Predictive | GaussianPredictive | Tensor,
    *,
    candidate_chunk: int | None = None,
    target_chunk: int | None = None,
) -> Tensor:
    """EPIG(x_n) [N] in nats of candidates `pred` (probs [S, N, C]) against targets `target_pred`
    (probs [S, M, C], the same S samples in the same order); see the module docstring.

    candidate_chunk a, target_chunk b: the joint block held at once is [a·C, b·C] (None: a = 256
    or fewer, b filling 2^22 elements). GaussianPredictives go to `epig_gaussian`.
    """
    pred, target, w = _pair(pred, target_pred)
    if isinstance(pred, GaussianPredictive):
        return epig_gaussian(pred, target, candidate_chunk=candidate_chunk, target_chunk=target_chunk)
    if target.n_classes != pred.n_classes:
        raise ShapeError(f"epig: target_pred: expected C={pred.n_classes} classes like pred, got C={target.n_classes}")
    device = pred.probs.device
    q, w = _rows(target.probs, device), w.to(device)
    S, N, C = pred.probs.shape
    M = q.shape[1]
    _check_chunks(candidate_chunk, target_chunk)
    a = candidate_chunk or max(1, min(256, _BUDGET // (C * C)))
    b = target_chunk or max(1, _BUDGET // (a * C * C))
    h_targ = E.entropy(torch.einsum("s,smc->mc", w, q)).mean()  # (1/M) Σ_m H[p(y* | x*_m)]
    right = q.reshape(S, M * C)  # [S, M·C]
    block = torch.empty(min(a, N) * C * min(b, M) * C, dtype=_F64, device=device)  # reused: no allocator churn
    parts = []
    for i in range(0, N, a):  # one chunk of candidates in float64 at a time: memory flat in N
        p = _rows(pred.probs[:, i : i + a], device)  # [S, a, C]
        left = (p * w[:, None, None]).permute(1, 2, 0).reshape(-1, S)  # [a·C, S]
        h_joint = torch.zeros(p.shape[1], dtype=_F64, device=device)
        for j in range(0, M, b):
            cols = right[:, j * C : (j + b) * C]
            joint = block[: left.shape[0] * cols.shape[1]].view(left.shape[0], cols.shape[1])
            torch.matmul(left, cols, out=joint)  # [a·C, b·C] = p(y, y* | x_n, x*_m)
            h_joint += torch.special.entr(joint.clamp_min_(0.0), out=joint).reshape(p.shape[1], -1).sum(1)
        parts.append(E.entropy(torch.einsum("s,snc->nc", w, p)) + h_targ - h_joint / M)
    out = torch.cat(parts) if parts else q.new_zeros(0)
    dtype = pred.probs.dtype if pred.probs.dtype in (torch.float32, _F64) else torch.float32
    return out.clamp_min(0.0).to(dtype)


def _check_chunks(a: int | None, b: int | None) -> None:
    for name, value in (("candidate_chunk", a), ("target_chunk", b)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ConfigError(f"epig: {name}: expected a positive integer or None, got {value!r}")


def _information(cross: Tensor, var: Tensor, target_var: Tensor) -> Tensor:
    """−½ log(1 − ρ²) [a, b], ρ² = cross² / (var ⊗ target_var) clamped to [0, 1 − 1e-12]."""
    rho2 = (cross.square() / (var[:, None] * target_var[None, :])).clamp(0.0, _MAX_RHO2)
    return -0.5 * torch.log1p(-rho2)


def _spread(pred: GaussianPredictive, w: Tensor, device: torch.device, min_var: float) -> tuple[Tensor, Tensor]:
    """(μ_s − μ̄) [S, N] and Var[y] = Σ_s w_s (μ_s − μ̄)² + Σ_s w_s σ_s² [N], float64."""
    mean = pred.mean.to(device=device, dtype=_F64)
    centred = mean - torch.einsum("s,sn->n", w, mean)
    noise = torch.einsum("s,sn->n", w, pred.var.to(device=device, dtype=_F64))
    return centred, (torch.einsum("s,sn->n", w, centred.square()) + noise).clamp_min(min_var)


def epig_gaussian(
    pred: GaussianPredictive,
    target_pred: GaussianPredictive,
    *,
    candidate_chunk: int | None = None,
    target_chunk: int | None = None,
    min_var: float = 1e-12,
) -> Tensor:
    """EPIG [N] of regression candidates from joint samples: mean, var [S, N] and [S, M] of the
    same θ_s; the moment-matched Gaussian of the module docstring (exact as S -> ∞ when f is
    Gaussian under the posterior, e.g. last-layer Laplace). Variances clamped at `min_var`.
    Returned in the working dtype of pred.mean."""
    pred, target, w = _pair(pred, target_pred)
    if not isinstance(pred, GaussianPredictive):
        raise ShapeError(f"epig_gaussian: expected GaussianPredictives, got a {type(pred).__name__}")
    for name, p in (("pred", pred), ("target_pred", target)):
        if p.has_latent and p.weights is not None:
            raise ConfigError(
                f"epig_gaussian: {name} holds quadrature nodes of each item's marginal (a GP's predict), not joint "
                "samples; use TargetPosterior / gp_joint with the GP, or epig_from_covariance"
            )
    device = pred.mean.device
    w = w.to(device)
    centred, var = _spread(pred, w, device, min_var)
    t_centred, t_var = _spread(target, w, device, min_var)
    N, M = var.shape[0], t_var.shape[0]
    _check_chunks(candidate_chunk, target_chunk)
    a = candidate_chunk or min(max(N, 1), 1024)
    b = target_chunk or max(1, _GAUSS_BUDGET // a)
    parts = []
    for i in range(0, N, a):
        left = (centred[:, i : i + a] * w[:, None]).T  # [a, S]
        total = torch.zeros(left.shape[0], dtype=_F64, device=device)
        for j in range(0, M, b):
            total += _information(left @ t_centred[:, j : j + b], var[i : i + a], t_var[j : j + b]).sum(1)
        parts.append(total / M)
    out = torch.cat(parts) if parts else var.new_zeros(0)
    return out.to(E.working_dtype(pred))


def epig_from_covariance(cross: Tensor, var: Tensor, target_var: Tensor) -> Tensor:
    """EPIG [N] = (1/M) Σ_m −½ log(1 − ρ²_nm) of jointly Gaussian (y_n, y*_m) from the
    cross-covariance Cov[y_n, y*_m] [N, M] and the variances Var[y_n] [N], Var[y*_m] [M] (each
    with the observation noise); float64 inside, returned in cross's dtype."""
    if not isinstance(cross, Tensor) or cross.dim() != 2:
        raise ShapeError(f"epig_from_covariance: cross: expected a tensor [N, M], got {getattr(cross, 'shape', type(cross).__name__)}")
    N, M = cross.shape
    for name, t, n in (("var", var, N), ("target_var", target_var, M)):
        if not isinstance(t, Tensor) or tuple(t.shape) != (n,):
            raise ShapeError(f"epig_from_covariance: {name}: expected [{n}] to match cross [{N}, {M}], got {getattr(t, 'shape', t)}")
    if M == 0:
        raise ShapeError("epig_from_covariance: cross: expected at least one target, got M=0")
    info = _information(cross.to(_F64), var.to(device=cross.device, dtype=_F64), target_var.to(device=cross.device, dtype=_F64))
    return info.mean(1).to(cross.dtype if cross.is_floating_point() else torch.float32)


class JointGaussian(NamedTuple):
    """The joint of y at candidates and y* at targets: cross [B, M], var [B], target_var [M]."""

    cross: Tensor
    var: Tensor
    target_var: Tensor


def _botorch_model(posterior: Any) -> Any:
    """The posterior's BoTorch model (an attribute or a method `botorch_model`), or None."""
    exposed = getattr(posterior, "botorch_model", None)
    return exposed() if inspect.ismethod(exposed) or inspect.isfunction(exposed) else exposed


def gp_joint(posterior: Any, x: Tensor, targets: Tensor, *, target_chunk: int = 1024) -> JointGaussian:
    """Cov[y(x_n), y(x*_m)] = k_D(x_n, x*_m) and Var = k_D + σ_ε² of a fitted GP posterior
    (`botorch_model` and `noise_`, original units), from the joint posterior of [x_n; x*_chunk]
    per target chunk (exact or variational GP alike); float64 on the model's device."""
    import gpytorch

    model, noise = _botorch_model(posterior), getattr(posterior, "noise_", None)
    if model is None or noise is None:
        raise ConfigError(f"epig: {type(posterior).__name__} has no botorch_model and noise_ (a fitted GaussianProcess)")
    device = next(iter(model.parameters())).device
    x, targets = x.to(device=device, dtype=_F64).reshape(x.shape[0], -1), targets.to(device=device, dtype=_F64)
    n = x.shape[0]
    crosses, t_vars, var = [], [], None
    settings = gpytorch.settings.fast_computations(covar_root_decomposition=False, log_prob=False, solves=False)
    with torch.no_grad(), settings, gpytorch.settings.fast_pred_var(False), \
            gpytorch.settings.max_cholesky_size(10**9), warnings.catch_warnings():  # fmt: skip
        warnings.simplefilter("ignore", gpytorch.utils.warnings.GPInputWarning)
        for chunk in targets.reshape(targets.shape[0], -1).split(target_chunk):
            cov = model.posterior(torch.cat([x, chunk])).distribution.covariance_matrix
            diag = cov.diagonal() + float(noise)
            crosses.append(cov[:n, n:])
            t_vars.append(diag[n:])
            var = diag[:n] if var is None else var
    return JointGaussian(torch.cat(crosses, 1), var, torch.cat(t_vars))


def check_joint_samples(posterior: Any) -> None:
    """ConfigError for posteriors whose samples are not joint across items (module docstring)."""
    if getattr(posterior, "masks", None) == "independent":
        raise ConfigError(
            "epig: mc-dropout with masks='independent' draws other masks for every item, so no sample θ_s is shared "
            "by a candidate and the targets; use masks='shared' (the default)"
        )
    if getattr(posterior, "predictive", None) == "analytic":
        raise ConfigError(
            "epig: predictive='analytic' draws each item from its own marginal, not joint samples across items; "
            "use predictive='sampled' (the default)"
        )


class TargetPosterior:
    """A fitted posterior seen through targets x* [M, ...], for `scoring.score_pool`:
    `predict(x_B)` predicts [x_B; x*] in ONE call and returns (pred of x_B, pred of x*), the same
    θ_s for both, or for a GP (`botorch_model`) the `JointGaussian` of `gp_joint`. Score the
    result with `paired_epig`. Costs one prediction of B + M items per batch."""

    def __init__(self, posterior: Any, targets: Tensor) -> None:
        if not isinstance(targets, Tensor) or targets.dim() < 2 or targets.shape[0] == 0:
            raise ShapeError(f"epig: targets: expected a tensor [M >= 1, ...] of target inputs, got {getattr(targets, 'shape', targets)}")
        check_joint_samples(posterior)
        self.posterior, self.targets = posterior, targets

    def to(self, device: str | torch.device) -> TargetPosterior:
        if hasattr(self.posterior, "to"):
            self.posterior.to(device)
        return self

    def predict(self, x: Tensor, n_samples: int | None = None) -> tuple[Any, Any] | JointGaussian:
        if tuple(x.shape[1:]) != tuple(self.targets.shape[1:]):
            raise ShapeError(f"epig: targets: expected items of shape {tuple(x.shape[1:])} like the pool, got {tuple(self.targets.shape[1:])}")
        if _botorch_model(self.posterior) is not None:
            return gp_joint(self.posterior, x, self.targets)
        if self.targets.device != x.device or self.targets.dtype != x.dtype:
            self.targets = self.targets.to(device=x.device, dtype=x.dtype)
        pred = self.posterior.predict(torch.cat([x, self.targets]), n_samples=n_samples)
        return pred.candidates(slice(0, x.shape[0])), pred.candidates(slice(x.shape[0], None))


def paired_epig(joint: tuple[Any, Any] | JointGaussian) -> Tensor:
    """EPIG [B] of what `TargetPosterior.predict` returned."""
    if isinstance(joint, JointGaussian):
        return epig_from_covariance(*joint)
    return epig(*joint)


__all__ = ["JointGaussian", "TargetPosterior", "check_joint_samples", "epig", "epig_from_covariance",
           "epig_gaussian", "gp_joint", "paired_epig"]  # fmt: skip
