"""The schema: SQLAlchemy 2.0 typed declarative models.

    projects      one study: task, classes, the data file (path, format, sha256), settings
    items         one candidate: stable key, row index into the data file, pool|test split
    rounds        one fit → score → query → answer cycle and its status, metrics, timings
    queries       what a round asked: item, acquisition score, rank (0 = best), and the
                  model's prediction for the item when it was asked (revision 0004) and the
                  probability with which a stochastic acquisition drew it (revision 0005)
    round_scores  every candidate's acquisition score of a round (one row per scored round,
                  packed arrays; see `RoundScores`), for the reports' histograms
    observations  append-only answers: item, value, who, source, round (nullable), time
    round_locks   who runs a round of a project now (pid, host, since, heartbeat; revision
                  0003, see `PoolStore.round_lock`)
    item_leases   which labeller of the labelling page holds an item until when (revision 0005)

An item's label is its latest observation (largest id). Features never live in the database:
the project references its data file by path and checksum. Schema changes go through the
Alembic migrations in `activebayes/store/migrations/versions`; never call `create_all` on a
store.
"""

from __future__ import annotations

import enum
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(timezone.utc)


def as_utc(moment: datetime) -> datetime:
    """`moment` as aware UTC (SQLite hands back naive datetimes, written as UTC; PostgreSQL aware ones)."""
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment.astimezone(timezone.utc)


def utc_text(moment: datetime | None) -> str | None:
    """`moment` in ISO 8601 with its UTC offset (2026-11-28T10:21:09.683122+00:00), alike from
    SQLite and PostgreSQL; None stays None."""
    return as_utc(moment).isoformat() if moment is not None else None


class Task(str, enum.Enum):
    classification = "classification"
    regression = "regression"
    design = "design"


class Split(str, enum.Enum):
    pool = "pool"
    test = "test"


class RoundStatus(str, enum.Enum):
    """started → fitted → scored → queried → answered → done, or failed (with a reason).

    The database stores the values (plain strings); a member compares equal to its value and
    prints as it (`f"{RoundStatus.done}"` is "done"). The resume rule lives here: see the
    properties and `RoundStatus.next_step`.
    """

    started = "started"
    fitted = "fitted"
    scored = "scored"
    queried = "queried"
    answered = "answered"
    done = "done"
    failed = "failed"

    def __str__(self) -> str:
        return self.value

    __format__ = str.__format__

    @property
    def finished(self) -> bool:
        """Closed for good (done, failed): the next round is a new one."""
        return self in (RoundStatus.done, RoundStatus.failed)

    @property
    def refits(self) -> bool:
        """Resuming a round in this status fits (and scores) again: nothing of a fit is stored."""
        return self in (RoundStatus.started, RoundStatus.fitted)

    @property
    def computing(self) -> bool:
        """Stopped before its queries were asked (a killed fit or score): resuming computes."""
        return self in (RoundStatus.started, RoundStatus.fitted, RoundStatus.scored)

    @property
    def waiting(self) -> bool:
        """Asking: the round waits here for answers (a human's, or an oracle that stopped)."""
        return self is RoundStatus.queried

    @staticmethod
    def next_step(status: str | None, unanswered: int = 0) -> RoundStep:
        """What the next round run does, given the latest round's `status` (None: no round yet)
        and how many of its queries are `unanswered` (counts only while it is queried)."""
        if status is None or RoundStatus(status).finished:
            return RoundStep.new
        if RoundStatus(status).computing or (RoundStatus(status).waiting and unanswered > 0):
            return RoundStep.resume
        return RoundStep.close  # queried with every answer in, or answered


class RoundStep(str, enum.Enum):
    """The resume rule's answer (`RoundStatus.next_step`): start a `new` round, `resume` the
    unfinished one (fit/score again, or ask its unanswered queries), or `close` a round whose
    answers are all in (then a new one may start)."""

    new = "new"
    resume = "resume"
    close = "close"


_S = RoundStatus
#: Allowed status changes. A round may fail from any unfinished state.
TRANSITIONS: dict[str, frozenset[str]] = {
    _S.started: frozenset({_S.fitted, _S.failed}),
    _S.fitted: frozenset({_S.scored, _S.failed}),
    _S.scored: frozenset({_S.queried, _S.failed}),
    _S.queried: frozenset({_S.answered, _S.failed}),
    _S.answered: frozenset({_S.done, _S.failed}),
    _S.done: frozenset(),
    _S.failed: frozenset(),
}


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class Project(Base):
    __tablename__ = "projects"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    task: Mapped[str] = mapped_column(String(32))
    classes: Mapped[list[Any] | None] = mapped_column(JSON, nullable=True)
    data_path: Mapped[str | None] = mapped_column(Text, nullable=True)
    data_format: Mapped[str | None] = mapped_column(String(32), nullable=True)
    data_sha256: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    settings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class Item(Base):
    __tablename__ = "items"
    __table_args__ = (
        UniqueConstraint("project_id", "key", name="uq_items_project_key"),
        Index("ix_items_project_split", "project_id", "split"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(200))
    row: Mapped[int] = mapped_column(Integer)
    consumable: Mapped[bool] = mapped_column(Boolean, default=True)
    split: Mapped[str] = mapped_column(String(8), default="pool")


class Round(Base):
    __tablename__ = "rounds"
    __table_args__ = (UniqueConstraint("project_id", "number", name="uq_rounds_project_number"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    number: Mapped[int] = mapped_column(Integer)
    posterior: Mapped[str] = mapped_column(String(200))
    posterior_settings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    acquisition: Mapped[str] = mapped_column(String(200))
    acquisition_settings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    status: Mapped[str] = mapped_column(String(16), default=RoundStatus.started.value)
    failure_reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    labelled_count: Mapped[int] = mapped_column(Integer, default=0)
    metrics: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    seed: Mapped[int] = mapped_column(Integer, default=0)
    timings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Query(Base):
    __tablename__ = "queries"
    __table_args__ = (
        UniqueConstraint("round_id", "item_id", name="uq_queries_round_item"),
        UniqueConstraint("round_id", "rank", name="uq_queries_round_rank"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    round_id: Mapped[int] = mapped_column(ForeignKey("rounds.id", ondelete="CASCADE"))
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"))
    score: Mapped[float] = mapped_column(Float)
    rank: Mapped[int] = mapped_column(Integer)
    # the round's posterior predictive for the item (a pre-annotation): {"label": class,
    # "probability": p} or {"mean": μ, "sd": σ}; None for a cold-start round or one recorded
    # before revision 0004
    prediction: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True), nullable=True)  # None: SQL NULL
    # the probability with which a stochastic acquisition drew the item at its draw (revision
    # 0005); None for a deterministic top-k query or one recorded before
    probability: Mapped[float | None] = mapped_column(Float, nullable=True)


class RoundScores(Base):
    """Every scored candidate of a round and its acquisition score, as two packed arrays of
    `n_candidates` little-endian values: `item_ids` int32 (`Item.id`, in candidate order) and
    `scores` float32.

    One row per round that scored its candidates (none for a random cold-start round, a random
    acquisition, or a round recorded before revision 0002). ~8 bytes per candidate: 480 KB for a
    pool of 60,000, written in one INSERT (a row per candidate would cost 60,000 rows a round).
    For batch-bald the scores are its BALD pre-filter scores (nats) of every candidate.
    """

    __tablename__ = "round_scores"

    round_id: Mapped[int] = mapped_column(ForeignKey("rounds.id", ondelete="CASCADE"), primary_key=True)
    n_candidates: Mapped[int] = mapped_column(Integer)
    item_ids: Mapped[bytes] = mapped_column(LargeBinary)
    scores: Mapped[bytes] = mapped_column(LargeBinary)


class Observation(Base):
    __tablename__ = "observations"
    __table_args__ = (Index("ix_observations_item", "item_id", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"))
    value: Mapped[str] = mapped_column(Text)
    who: Mapped[str] = mapped_column(String(200), default="")
    source: Mapped[str] = mapped_column(String(64), default="")
    round_id: Mapped[int | None] = mapped_column(ForeignKey("rounds.id", ondelete="SET NULL"), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class RoundLock(Base):
    """The process that runs a round of a project now (`PoolStore.round_lock`); no row: none.

    SQLite: the row IS the lock (written in a BEGIN IMMEDIATE transaction; stale once its holder
    `pid` is gone from this `host`, or its `heartbeat` is old). PostgreSQL: a session advisory lock
    keyed by the project is the lock and this row only says who holds it (for the message).
    """

    __tablename__ = "round_locks"

    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True)
    token: Mapped[str] = mapped_column(String(32))
    pid: Mapped[int] = mapped_column(Integer)
    host: Mapped[str] = mapped_column(String(255))
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    heartbeat: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ItemLease(Base):
    """A labeller of the labelling page holds an item until `expires_at` (revision 0005), so that
    two labellers are not shown the same item at once. Advisory: an answer is never refused for
    the lack of a lease, and an expired lease is as good as none."""

    __tablename__ = "item_leases"
    __table_args__ = (Index("ix_item_leases_project", "project_id", "expires_at"),)

    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"), primary_key=True)
    labeller: Mapped[str] = mapped_column(String(200), primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
