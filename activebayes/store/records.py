"""Plain frozen records that `PoolStore` returns (detached from any session)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from activebayes.store.models import Project, Round, RoundStatus


@dataclass(frozen=True)
class ProjectInfo:
    id: int
    name: str
    task: str
    classes: list[str] | None
    data_path: str | None
    data_format: str | None
    data_sha256: str | None
    settings: dict[str, Any]


@dataclass(frozen=True)
class RoundInfo:
    id: int
    number: int
    posterior: str
    posterior_settings: dict[str, Any]
    acquisition: str
    acquisition_settings: dict[str, Any]
    status: RoundStatus
    failure_reason: str | None
    labelled_count: int
    metrics: dict[str, Any]
    seed: int
    timings: dict[str, Any]


@dataclass(frozen=True)
class QueryInfo:
    """One query of a round: `value` is the item's latest label, None while unanswered;
    `prediction` the round's posterior predictive for the item ({"label": class, "probability":
    p} or {"mean": μ, "sd": σ}), None for a cold-start round or one recorded before it was kept;
    `probability` the probability q with which a stochastic acquisition drew it at its draw, None
    for a deterministic choice or a query recorded before revision 0005."""

    item_id: int
    key: str
    row: int
    score: float
    rank: int
    value: str | None
    prediction: dict[str, Any] | None = None
    probability: float | None = None


def _project_info(p: Project) -> ProjectInfo:
    classes = [str(c) for c in p.classes] if p.classes is not None else None
    return ProjectInfo(p.id, p.name, p.task, classes, p.data_path, p.data_format, p.data_sha256, dict(p.settings or {}))


def _round_info(r: Round) -> RoundInfo:
    return RoundInfo(
        r.id, r.number, r.posterior, dict(r.posterior_settings or {}), r.acquisition,
        dict(r.acquisition_settings or {}), RoundStatus(r.status), r.failure_reason, r.labelled_count,
        dict(r.metrics or {}), r.seed, dict(r.timings or {}),
    )  # fmt: skip
