"""A design session: choose a design, ask the participant, update the grid posterior, repeat.

Each trial t: EIG [D] = h(wᵀP) − wᵀH from the session's `EIGTable` (built once), the strategy
picks design d_t, the participant answers y_t, and the posterior is multiplied by the stored
column p(y_t | θ_g, ξ_{d_t}). The session stops after `n_trials` or, with `target_sd`, as soon as
the posterior sd of θ is at most `target_sd`.

>>> from activebayes.design.model import MemorySpanModel
>>> from activebayes.design.grid import GridPosterior
>>> from activebayes.design import SimulatedParticipant
>>> post = GridPosterior(MemorySpanModel())
>>> who = SimulatedParticipant(6.0, deterministic=True)
>>> trace = run_design_session(post, torch.arange(1.0, 15.0), who, 3, seed=0)
>>> [t.design for t in trace.trials]
[7.0, 6.0, 5.0]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import torch
from torch import Tensor

from activebayes.design.baselines import Strategy, make_strategy
from activebayes.design.eig import EIGTable
from activebayes.design.grid import GridPosterior
from activebayes.errors import ConfigError


class Participant(Protocol):
    def answer(self, design: Any) -> int: ...


@dataclass(frozen=True)
class Trial:
    """One trial: the design shown (digits, or [digits, rate]), the outcome, the design's EIG
    before the answer (nats), and the posterior of θ after it."""

    index: int
    design: float | list[float]
    outcome: int
    eig: float
    mean: float
    sd: float
    interval: tuple[float, float]


@dataclass
class SessionTrace:
    """The trials of a session, in order, and its final posterior."""

    strategy: str
    trials: list[Trial] = field(default_factory=list)
    posterior: GridPosterior | None = None

    def to_dict(self) -> dict[str, Any]:
        """{"strategy", "trials": [...], "posterior": {"mean", "sd", "interval"}} (JSON-ready)."""
        out: dict[str, Any] = {"strategy": self.strategy, "trials": [asdict(t) for t in self.trials]}
        if self.posterior is not None:
            out["posterior"] = summarise_posterior(self.posterior)
        return out


def summarise_posterior(posterior: GridPosterior, level: float = 0.9) -> dict[str, Any]:
    """{"mean", "sd", "interval"} of θ (and "slope_mean" when the slope is learnt)."""
    out: dict[str, Any] = {"mean": posterior.mean, "sd": posterior.sd, "interval": list(posterior.interval(level))}
    if posterior.slope_grid is not None:
        out["slope_mean"] = posterior.slope_mean
    return out


def _design_value(design: Tensor) -> float | list[float]:
    return float(design) if design.dim() == 0 else [float(v) for v in design]


def nearest_design(designs: Tensor, value: float) -> int:
    """Index of the design whose difficulty (first column) is nearest `value`."""
    first = designs if designs.dim() == 1 else designs[:, 0]
    return int(torch.argmin((first - value).abs()))


def run_design_session(
    posterior: GridPosterior,
    designs: Tensor,
    participant: Participant,
    n_trials: int,
    strategy: Strategy | str = Strategy.EIG,
    target_sd: float | None = None,
    seed: int | None = None,
    *,
    table: EIGTable | None = None,
    target: str = "all",
    on_trial: Callable[[Trial], None] | None = None,
) -> SessionTrace:
    """Run up to `n_trials` trials; `posterior` is updated in place and returned in the trace.

    Args:
        posterior: the prior (or the posterior so far) over θ (and slope).
        designs: [D] digits, or [D, 2] (digits, rate), sorted from easiest to hardest.
        participant: anything with `answer(design) -> 0 | 1` (a SimulatedParticipant, a person).
        n_trials: the most trials to run.
        strategy: "eig", "random", "fixed" or "staircase" (see `activebayes.design.baselines`).
        target_sd: stop once sd[θ | data] <= target_sd.
        seed: seeds the random strategy (None → 0).
        table: a prebuilt EIGTable for these designs and this grid (reused across sessions).
        target: what the EIG is about on a joint (θ, s) grid: "all" (θ and slope) or "theta"
            (the span only, the slope a nuisance); see `EIGTable.eig`.
        on_trial: called with each Trial as it completes (printing, persisting).
    """
    if n_trials < 0:
        raise ConfigError(f"n_trials: expected a count >= 0, got {n_trials}")
    if target_sd is not None and not target_sd > 0:
        raise ConfigError(f"target_sd: expected a positive sd, got {target_sd!r}")
    table = table if table is not None else EIGTable(posterior, designs)
    if table.p_recall.shape[0] != posterior.n_points:
        raise ConfigError("table: built for another grid; build it from this posterior")
    generator = torch.Generator().manual_seed(0 if seed is None else int(seed))
    chooser = make_strategy(
        strategy, table.n_designs, generator=generator, start=nearest_design(table.designs, posterior.mean)
    )
    trace = SessionTrace(strategy=Strategy(strategy).value, posterior=posterior)
    history: list[tuple[int, int]] = []
    for t in range(n_trials):
        if target_sd is not None and posterior.sd <= target_sd:
            break
        eig = table.eig(posterior.weights, target=target)  # [D]
        d = chooser.choose(history, eig)
        design = _design_value(table.designs[d])
        outcome = int(participant.answer(design))
        if outcome not in (0, 1):
            raise ConfigError(f"participant: expected an answer of 0 or 1, got {outcome!r}")
        table.update(posterior, d, outcome)
        history.append((d, outcome))
        trial = Trial(t, design, outcome, float(eig[d]), posterior.mean, posterior.sd, posterior.interval(0.9))
        trace.trials.append(trial)
        if on_trial is not None:
            on_trial(trial)
    return trace
