"""Choosing a network by its Laplace evidence (Immer, Bauer, Fortuin, Rätsch and Khan, "Scalable
marginal likelihood estimation for model selection in deep learning", ICML 2021; MacKay 1992).

With a few labels and no validation set, candidate architectures M_1, ..., M_K (widths, depths)
are compared by their evidence p(D | M_k), approximated by Laplace at the MAP weights θ̂_k:

    log q(D | M_k) = log p(D | θ̂_k) − ½ (log det(φH_k + δ_k I) − P_k log δ_k + δ_k ‖θ̂_k‖²),

with H_k the whole network's GGN (KFAC or diagonal, `activebayes.posteriors._kfac`), φ = 1/σ² for
regression (1 for classification), P_k the number of weights and δ_k the scalar prior precision
that maximises it (`activebayes.marglik.log_evidence(..., prior_precision="marglik")`). Each
candidate is trained the same way (the same `TrainConfig`, mini-batch order and seed) and the one
of highest evidence is kept; ties go to the earlier candidate.

>>> import torch
>>> from activebayes.training import TrainConfig
>>> x, y = torch.randn(12, 3), torch.arange(12) % 2
>>> choice = select_model(mlp_candidates(3, 2, widths=((4,), (8,))), x, y, train=TrainConfig(epochs=2), seed=0)
>>> choice.name in choice.evidences and choice.evidences[choice.name] == max(choice.evidences.values())
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor, nn

from activebayes.errors import ConfigError
from activebayes.marglik import likelihood_of, log_evidence
from activebayes.nets import mlp
from activebayes.training import TrainConfig, build_model
from activebayes.training import train as train_network

ModelFn = Callable[[], nn.Module]

#: The hidden layers of the default candidates, `mlp_candidates`: one or two layers, 64 to 256 wide.
DEFAULT_WIDTHS: tuple[tuple[int, ...], ...] = ((64,), (64, 64), (128, 128), (256,))


def candidate_name(hidden: Sequence[int]) -> str:
    """"mlp-2x128" for (128, 128), "mlp-1x64" for (64,), "mlp-64-32" for unequal widths."""
    widths = [int(w) for w in hidden]
    if len(set(widths)) == 1:
        return f"mlp-{len(widths)}x{widths[0]}"
    return "mlp-" + "-".join(map(str, widths))


def mlp_candidates(
    in_features: int, n_outputs: int, *, widths: Sequence[Sequence[int]] = DEFAULT_WIDTHS, dropout: float = 0.5
) -> dict[str, ModelFn]:
    """{name: factory} of ReLU MLPs (`activebayes.nets.mlp`, dropout `dropout` as the CLI's
    `--model mlp`) with each hidden-layer tuple of `widths`; inputs [N, D] (or flattened to D =
    `in_features`), outputs [N, n_outputs]."""
    if not widths:
        raise ConfigError("widths: expected at least one tuple of hidden-layer widths")
    candidates = {candidate_name(hidden): mlp(in_features, n_outputs, hidden=tuple(hidden), dropout=dropout) for hidden in widths}
    if len(candidates) != len(widths):
        raise ConfigError(f"widths: expected distinct hidden-layer tuples, got {[tuple(h) for h in widths]}")
    return candidates


@dataclass(frozen=True)
class ModelChoice:
    """What `select_model` returns.

    name: the chosen candidate. model_fn: its factory. evidences: log q(D | M) of every candidate
    (nats, in the order given; -inf where it was not finite). model: the chosen candidate's trained
    network (eval mode).
    """

    name: str
    model_fn: ModelFn
    evidences: dict[str, float]
    model: nn.Module = field(repr=False, compare=False)

    def record(self) -> dict[str, Any]:
        """{"model": name, "evidences": {name: log evidence}} as a round records it (JSON: a
        non-finite evidence is recorded as None)."""
        return {"model": self.name, "evidences": {k: (v if math.isfinite(v) else None) for k, v in self.evidences.items()}}


def select_model(
    candidates: Mapping[str, ModelFn],
    x: Tensor,
    y: Tensor,
    *,
    train: TrainConfig = TrainConfig(),
    seed: int | None = 0,
    device: str | torch.device = "auto",
    hessian: str = "kron",
    likelihood: str | None = None,
) -> ModelChoice:
    """Train every candidate on (x [N, ...], y [N]) and keep the one of highest Laplace evidence
    (module docstring).

    Args:
        candidates: {name: zero-argument factory of a fresh network}; outputs [N, C] logits
            (classification, integer y) or [N, 1] (regression, float y); every trainable tensor in
            an nn.Linear or nn.Conv2d (`log_evidence`'s condition).
        train: how each candidate is trained (`activebayes.training.train`; the same for all).
        seed: each candidate's initialisation and mini-batch order (the same seed for all, so the
            same seed gives the same choice).
        hessian: "kron" (KFAC) or "diag" for the evidence's curvature.
        likelihood: "categorical" or "gaussian"; None infers it from y's dtype.
    Raises ConfigError for no candidates, or when no candidate's evidence is finite.
    """
    if not candidates:
        raise ConfigError("candidates: expected at least one model factory")
    likelihood = likelihood or likelihood_of(y)
    evidences: dict[str, float] = {}
    best: tuple[float, str, ModelFn, nn.Module] | None = None
    for name, model_fn in candidates.items():
        if not callable(model_fn):
            raise ConfigError(f"candidates[{name!r}]: expected a zero-argument model factory, got {type(model_fn).__name__}")
        model = train_network(build_model(model_fn, seed), x, y, train, seed=seed, device=device)
        value = float(log_evidence(model, x, y, "marglik", hessian=hessian, likelihood=likelihood))
        evidences[str(name)] = value if math.isfinite(value) else -math.inf
        if math.isfinite(value) and (best is None or value > best[0]):
            best = (value, str(name), model_fn, model)
    if best is None:
        raise ConfigError(f"select_model: no candidate has a finite evidence ({', '.join(evidences)})")
    return ModelChoice(best[1], best[2], evidences, best[3])


__all__ = ["DEFAULT_WIDTHS", "ModelChoice", "candidate_name", "mlp_candidates", "select_model"]
