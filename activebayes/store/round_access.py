"""Rounds: starting the next one, finding one, and moving it through its statuses (checked
against `TRANSITIONS`). Each function takes an open `Session` inside a transaction and never
commits."""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, select, update
from sqlalchemy.orm import Session

from activebayes.errors import RoundNotWaitingError, StoreError
from activebayes.store.label_access import count_labelled
from activebayes.store.models import TRANSITIONS, Project, Round, RoundStatus, utcnow


def latest_round(session: Session, project_id: int) -> Round | None:
    """The project's round with the largest number, None before its first."""
    stmt = select(Round).where(Round.project_id == project_id).order_by(Round.number.desc()).limit(1)
    return session.scalar(stmt)


def get_round(session: Session, project: Project, number: int) -> Round:
    """Round `number` of `project`; StoreError when it has none."""
    found = session.scalar(select(Round).where(Round.project_id == project.id, Round.number == number))
    if found is None:
        raise StoreError(f"round: project {project.name!r} has no round {number}")
    return found


def waiting_round(session: Session, project: Project, number: int) -> Round:
    """Round `number` of `project` while it waits for answers (queried; then it is the latest
    round, as no round starts while one waits); RoundNotWaitingError when it no longer does."""
    found = get_round(session, project, number)
    if not RoundStatus(found.status).waiting:
        raise RoundNotWaitingError(f"round {number} of project {project.name!r} no longer waits for answers (it is {found.status})")
    return found


def project_rounds(session: Session, project_id: int) -> list[Round]:
    """Every round of the project, by number."""
    return list(session.scalars(select(Round).where(Round.project_id == project_id).order_by(Round.number)))


def start_round(
    session: Session,
    project: Project,
    *,
    posterior: str,
    acquisition: str,
    seed: int,
    posterior_settings: dict[str, Any] | None,
    acquisition_settings: dict[str, Any] | None,
) -> Round:
    """Add the next round (status "started", flushed); StoreError while the latest is unfinished."""
    last = latest_round(session, project.id)
    if last is not None and not RoundStatus(last.status).finished:
        raise StoreError(f"project {project.name!r}: round {last.number} is still {last.status!r}; finish it first")
    rnd = Round(
        project_id=project.id, number=(last.number + 1) if last else 1, posterior=posterior,
        posterior_settings=dict(posterior_settings or {}), acquisition=acquisition,
        acquisition_settings=dict(acquisition_settings or {}), status=RoundStatus.started.value,
        labelled_count=count_labelled(session, project.id), seed=int(seed), metrics={}, timings={},
    )  # fmt: skip
    session.add(rnd)
    session.flush()
    return rnd


def set_status(session: Session, rnd: Round, status: str, **fields: Any) -> None:
    """Move `rnd` to `status` (checked against TRANSITIONS) and update the given columns.

    The UPDATE is guarded by the old status, so two processes cannot both make the same move.
    """
    status = str(status)  # a RoundStatus's value: the database stores the plain string
    if status not in TRANSITIONS.get(rnd.status, frozenset()):
        raise StoreError(f"round {rnd.number}: cannot go from status {rnd.status!r} to {status!r}")
    values = {"status": status, "updated_at": utcnow(), **fields}
    stmt = update(Round).where(and_(Round.id == rnd.id, Round.status == rnd.status)).values(**values)
    if session.execute(stmt.execution_options(synchronize_session=False)).rowcount != 1:
        raise StoreError(f"round {rnd.number}: another process changed its status meanwhile; run again")
    session.expire(rnd)
