"""Persisting design sessions through `activebayes.store.PoolStore`.

Layout in the store: one project (task "design", default name "memory-span") whose settings
record the model and prior; one reusable item per design (key "digits=7", or "digits=7,rate=1.5"
for 2-D designs; `consumable=False`, row = the design's index); one observation per trial, by
`who` = the participant id, source "design:<strategy>", whose value is the JSON text

    {"trial": t, "design": ξ, "outcome": y, "eig": EIG in nats}

The trial number keeps repeated (design, outcome) pairs distinct (the store does not record an
answer again when it equals the same person's latest answer to the same item), and `add` refuses
a trial when the participant's recorded trials are not those its session expects (another
session of the same participant id recorded some meanwhile). `replay` rebuilds a participant's posterior from their trials, so a
session resumes where the last one stopped. `recorded_trials` reads every participant's trials
of a project (status, export).
"""

from __future__ import annotations

import json
from typing import Any

import torch
from torch import Tensor

from activebayes.design.grid import GridPosterior
from activebayes.design.session import Trial
from activebayes.errors import DataError, RecordedCountError, StoreError
from activebayes.store import PoolStore


def design_key(design: float | list[float] | Tensor) -> str:
    """"digits=7" for a digit count, "digits=7,rate=1.5" for (digits, rate)."""
    values = torch.as_tensor(design, dtype=torch.float64).reshape(-1).tolist()
    names = ("digits", "rate")
    return ",".join(f"{names[i]}={v:g}" for i, v in enumerate(values))


def recorded_trials(store: PoolStore, project: str, participant: str | None = None) -> list[dict[str, Any]]:
    """The recorded trials of a design project (of one `participant`, or of all), in recording
    order: dicts with participant, trial (0-based, per participant), design, outcome, eig,
    source ("design:<strategy>") and time (when it was recorded). DataError for an observation
    that is no JSON trial record."""
    out = []
    for obs in store.observations(project):
        if participant is not None and obs["who"] != participant:
            continue
        try:
            value = json.loads(obs["value"])
            trial = {k: value[k] for k in ("trial", "design", "outcome", "eig")}
        except (ValueError, KeyError, TypeError) as exc:
            raise DataError(f"observation {obs['id']}: expected a JSON trial record, got {obs['value']!r}") from exc
        out.append({"participant": obs["who"], **trial, "source": obs["source"], "time": obs["created_at"]})
    return out


class DesignRecord:
    """The trials of one participant in one design project of a store.

    Args:
        store: an open PoolStore.
        designs: [D] or [D, 2], the designs of this session (missing items are added).
        participant: the participant's id (the observations' `who`).
        project: the project name; created with task "design" when absent.
        settings: recorded in the project's settings when it is created (model, prior).
    """

    def __init__(
        self,
        store: PoolStore,
        designs: Tensor,
        *,
        participant: str,
        project: str = "memory-span",
        settings: dict[str, Any] | None = None,
    ) -> None:
        self.store = store
        self.project = project
        self.participant = participant
        if project not in store.projects():
            store.create_project(project, task="design", settings=dict(settings or {}))
        elif store.project(project).task != "design":
            raise StoreError(f"project: {project!r} exists with task {store.project(project).task!r}, expected 'design'")
        keys = [design_key(d) for d in torch.as_tensor(designs)]
        known = store.item_keys(project)
        rows = [i for i, k in enumerate(keys) if k not in known]
        if rows:
            store.add_items(project, rows=rows, keys=[keys[i] for i in rows], consumable=False)

    def trials(self) -> list[dict[str, Any]]:
        """This participant's recorded trials, in order: dicts with trial, design, outcome, eig."""
        trials = recorded_trials(self.store, self.project, self.participant)
        return [{k: t[k] for k in ("trial", "design", "outcome", "eig")} for t in trials]

    def add(self, trial: Trial, *, offset: int = 0, strategy: str = "eig") -> None:
        """Record one trial (its number shifted by `offset`, the trials recorded before).

        The trial is trial number `trial.index + offset` (0-based) of the participant, so exactly
        that many must be recorded already. Otherwise another session of the same participant id
        recorded trials meanwhile (the same person in two terminals, or two people given one id),
        and this session's design rests on a posterior that misses them: StoreError, and nothing
        is recorded. The count and the write are one transaction (`PoolStore.record_observations`
        with `after`), so of two sessions writing trial n at once one records it and the other
        gets the StoreError."""
        number = trial.index + offset
        value = {"trial": number, "design": trial.design, "outcome": trial.outcome, "eig": trial.eig}
        try:
            self.store.record_observations(self.project, [(design_key(trial.design), json.dumps(value))], who=self.participant,
                                           source=f"design:{strategy}", after=number)  # fmt: skip
        except RecordedCountError as exc:
            raise StoreError(f"participant {self.participant!r} has {exc.found} recorded trials where this session expected {number}: "
                             "another session of this participant id recorded trials meanwhile") from exc  # fmt: skip

    def replay(self, posterior: GridPosterior) -> int:
        """Condition `posterior` on this participant's recorded trials; returns how many."""
        return replay(posterior, self.trials())


def replay(posterior: GridPosterior, trials: list[dict[str, Any]]) -> int:
    """Condition `posterior` on recorded trials (dicts with design and outcome); returns how many."""
    for t in trials:
        posterior.update(t["design"], int(t["outcome"]))
    return len(trials)
