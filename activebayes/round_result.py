"""`RoundResult`: what one `ActiveLearningLoop.step()` did."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from activebayes.store import RoundStatus


@dataclass(frozen=True)
class RoundResult:
    """What one `step()` did.

    status: "done", or "queried" when the round waits for answers (no oracle, or the oracle
    asked to stop). labelled: labelled pool items the round's posterior was fitted on.
    queried/scores: the round's queries by rank. recorded: observations recorded by this call.
    resumed: the round had been started by an earlier (possibly killed) run.
    """

    number: int
    status: RoundStatus
    labelled: int
    queried: list[str]
    scores: list[float]
    recorded: int
    metrics: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    resumed: bool = False

    @property
    def waiting(self) -> bool:
        return RoundStatus(self.status).waiting

    def __repr__(self) -> str:  # the packed stop set (about 1 KB of text) as its size
        metrics = {k: (f"<{v.get('n')} predictions>" if k == "stop_set" and isinstance(v, dict) else v) for k, v in self.metrics.items()}
        shown = ", ".join(f"{f.name}={metrics if f.name == 'metrics' else getattr(self, f.name)!r}" for f in fields(self))
        return f"RoundResult({shown})"
