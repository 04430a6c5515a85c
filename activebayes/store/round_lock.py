"""Round locks (revision 0003, `PoolStore.round_lock`): one process at a time runs a round of a
project; another gets a `RoundBusyError` naming the round and its holder (pid, host, since when).

PostgreSQL: a session advisory lock keyed by (database, schema, project), held on a connection of
its own for the round's duration (a killed holder's session ends and the server frees it); the
`round_locks` row only names the holder. SQLite: the `round_locks` row is the lock, written in a
BEGIN IMMEDIATE transaction and refreshed by a heartbeat thread; a row is stale, and taken over,
once its holder's pid is gone from this host (or a zombie), or its heartbeat is older than
LOCK_STALE_S for a holder on another host (LOCK_ORPHAN_S on this host: a pid reused meanwhile).
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import StaticPool

from activebayes.errors import RoundBusyError, StoreError
from activebayes.store.engine import BUSY_TIMEOUT_MS, make_engine, session_factories, session_transaction
from activebayes.store.project_access import get_project
from activebayes.store.models import RoundLock, RoundStatus, as_utc, utcnow
from activebayes.store.round_access import latest_round

# pg_try_advisory_lock(key) while a round runs: advisory locks are server-wide, so the key hashes
# the database and schema with the project id (project 1 of one schema must not lock another's)
_PG_ROUND_LOCK_KEY = ("hashtextextended(current_database() || '/' || current_schema() || '/round/' || CAST(:p AS text), "
                      "74261008)")
LOCK_HEARTBEAT_S = 15.0  # a SQLite round lock's holder refreshes its heartbeat this often
LOCK_STALE_S = 120.0  # a holder on another host whose heartbeat is older is gone
LOCK_ORPHAN_S = 900.0  # a holder on this host whose pid runs but whose heartbeat is older: pid reused
_PG_DYING_S = 5.0  # PostgreSQL: wait this long for the server to free the lock of a holder that died
_HOST = socket.gethostname()
_HELD_TOKENS: set[str] = set()  # the round locks this process holds, through any PoolStore


@dataclass(frozen=True)
class LockHolder:
    """Who holds (or held) a round lock: `pid` on `host`, since `started_at`, last heard of at
    `heartbeat` (SQLite only; PostgreSQL's advisory lock needs none)."""

    pid: int
    host: str
    started_at: datetime
    heartbeat: datetime

    def text(self) -> str:
        return f"pid {self.pid} on host {self.host} at {as_utc(self.started_at):%Y-%m-%d %H:%M:%S} UTC"


@dataclass
class RoundLockInfo:
    """A round lock this process holds (what `PoolStore.round_lock` yields). `taken_over`: the
    holder of a stale lock this one replaced, and `stale_reason` why it was stale (None when the
    lock was free). `lost`: SQLite only, another process took the lock over meanwhile (this
    holder's heartbeat stopped for longer than the stale timeout)."""

    project: str
    project_id: int
    token: str
    holder: LockHolder
    taken_over: LockHolder | None = None
    stale_reason: str | None = None
    lost: bool = False
    depth: int = field(default=0, repr=False)
    _conn: Any = field(default=None, repr=False)
    _stop: threading.Event | None = field(default=None, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)




def _pid_running(pid: int) -> bool:
    """Whether process `pid` of this host runs (a zombie, killed but not yet reaped, does not)."""
    if os.name == "nt":  # os.kill(pid, 0) would end it: trust the heartbeat there
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    except OSError:
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X", "x")
    except (OSError, IndexError):
        return True  # no /proc (macOS): kill(0) answered


def _holder(row: RoundLock) -> LockHolder:
    return LockHolder(int(row.pid), str(row.host), as_utc(row.started_at), as_utc(row.heartbeat))


def _stale_reason(holder: LockHolder, token: str) -> str | None:
    """Why the lock row of `holder` (with `token`) no longer holds, or None while it does."""
    silent = (utcnow() - holder.heartbeat).total_seconds()
    if holder.host != _HOST:
        return f"no heartbeat from host {holder.host} for {silent:.0f} s" if silent > LOCK_STALE_S else None
    if holder.pid == os.getpid():
        return None if token in _HELD_TOKENS else "left by this process"
    if not _pid_running(holder.pid):
        return f"process {holder.pid} is no longer running"
    return f"no heartbeat for {silent:.0f} s (pid {holder.pid} reused)" if silent > LOCK_ORPHAN_S else None


class RoundLocks:
    """The round locks one `PoolStore` holds, by project name (see the module docstring).

    Args:
        engine: the store's engine; url: its URL (a SQLite file's locks get an engine of their own).
        transaction: the store's `transaction(write=...)`, used where the locks need no engine of
            their own (PostgreSQL, an in-memory SQLite database).
    """

    def __init__(self, engine: Engine, url: str, transaction: Callable[..., AbstractContextManager[Session]]) -> None:
        self.engine, self.url, self._store_transaction = engine, url, transaction
        self.held: dict[str, RoundLockInfo] = {}
        self._lock_engine: Engine | None = None  # SQLite file: the round locks' own connections
        self._lock_sessions: tuple[sessionmaker, sessionmaker] | None = None

    def transaction(self, *, write: bool = True) -> AbstractContextManager[Session]:
        """`PoolStore.transaction` for the round locks. A SQLite file: on an engine of their own,
        so that the lock's statements and heartbeat never share a connection with the caller's work."""
        if self.engine.dialect.name != "sqlite" or isinstance(self.engine.pool, StaticPool):
            return self._store_transaction(write=write)
        if self._lock_sessions is None:
            self._lock_engine = make_engine(self.url)
            self._lock_sessions = session_factories(self._lock_engine)
        return session_transaction(self._lock_sessions[0] if write else self._lock_sessions[1], self.url)

    @contextmanager
    def hold(self, name: str) -> Iterator[RoundLockInfo]:
        """`PoolStore.round_lock`: hold project `name`'s round lock for the `with` block."""
        held = self.held.get(name)
        if held is not None:
            held.depth += 1
            try:
                yield held
            finally:
                held.depth -= 1
            return
        with self.transaction(write=False) as s:
            project_id = get_project(s, name).id
        me = LockHolder(os.getpid(), _HOST, utcnow(), utcnow())
        lock = RoundLockInfo(name, project_id, uuid.uuid4().hex, me)
        if self.engine.dialect.name == "postgresql":
            self._acquire_pg_lock(lock)
        else:
            self._acquire_sqlite_lock(lock)
        self.held[name] = lock
        try:
            yield lock
        finally:
            if self.held.get(name) is lock:
                del self.held[name]
                self._release(lock)

    def holder(self, name: str) -> LockHolder | None:
        """Who the database says holds project `name`'s round lock (stale or not), or None."""
        with self.transaction(write=False) as s:
            row = s.get(RoundLock, get_project(s, name).id)
            return _holder(row) if row is not None else None

    def close(self) -> None:
        """Release every lock still held and close the locks' own connections."""
        for lock in list(self.held.values()):
            self.held.pop(lock.project, None)
            self._release(lock)
        if self._lock_engine is not None:
            self._lock_engine.dispose()

    def _busy(self, s: Session, lock: RoundLockInfo, holder: LockHolder | None) -> RoundBusyError:
        latest = latest_round(s, lock.project_id)
        if latest is None:
            number = 1
        else:
            number = latest.number + 1 if RoundStatus(latest.status).finished else latest.number
        who = f"started by {holder.text()}" if holder is not None else "started by another session"
        return RoundBusyError(
            f"round {number} of project {lock.project!r} is running ({who}); wait for it to finish, or stop "
            "that process (the next round takes over a lock left by a killed process)",
            project=lock.project, number=number, pid=holder.pid if holder else None,
            host=holder.host if holder else None, started_at=holder.started_at if holder else None,
        )  # fmt: skip

    @staticmethod
    def _write_lock_row(s: Session, lock: RoundLockInfo, row: RoundLock | None) -> None:
        me = lock.holder
        if row is None:
            s.add(RoundLock(project_id=lock.project_id, token=lock.token, pid=me.pid, host=me.host,
                            started_at=me.started_at, heartbeat=me.heartbeat))  # fmt: skip
        else:
            row.token, row.pid, row.host, row.started_at, row.heartbeat = lock.token, me.pid, me.host, me.started_at, me.heartbeat

    def _acquire_sqlite_lock(self, lock: RoundLockInfo) -> None:
        with self.transaction() as s:  # BEGIN IMMEDIATE: one writer decides at a time
            row = s.get(RoundLock, lock.project_id)
            if row is not None:
                holder = _holder(row)
                reason = _stale_reason(holder, row.token)
                if reason is None:
                    raise self._busy(s, lock, holder)
                lock.taken_over, lock.stale_reason = holder, reason
            self._write_lock_row(s, lock, row)
        _HELD_TOKENS.add(lock.token)
        if not isinstance(self.engine.pool, StaticPool):  # an in-memory database has no other process
            lock._stop = threading.Event()
            lock._thread = threading.Thread(target=self._heartbeat, args=(lock,), name="activebayes-round-lock", daemon=True)
            lock._thread.start()

    def _heartbeat(self, lock: RoundLockInfo) -> None:
        table = RoundLock.__table__
        assert lock._stop is not None
        while not lock._stop.wait(LOCK_HEARTBEAT_S):
            try:
                with self.transaction() as s:
                    stmt = (table.update().where(table.c.project_id == lock.project_id, table.c.token == lock.token)
                            .values(heartbeat=utcnow()))  # fmt: skip
                    if s.execute(stmt).rowcount == 0:
                        lock.lost = True
                        return
            except Exception:  # noqa: BLE001 - a busy or vanished database: try again at the next beat
                continue

    def _acquire_pg_lock(self, lock: RoundLockInfo) -> None:
        conn = self.engine.connect()  # holds the session advisory lock until released or the process dies
        try:
            deadline = time.monotonic() + _PG_DYING_S
            while True:
                got = conn.execute(text(f"SELECT pg_try_advisory_lock({_PG_ROUND_LOCK_KEY})"), {"p": lock.project_id}).scalar()
                conn.commit()  # the lock is the session's: no transaction stays open
                if got:
                    break
                with self.transaction(write=False) as s:
                    row = s.get(RoundLock, lock.project_id)
                    holder = _holder(row) if row is not None else None
                    # no row: its holder is between taking the lock and naming itself (milliseconds),
                    # or was killed there and the server has not yet ended its session
                    dying = holder is None or (holder.host == _HOST and not _pid_running(holder.pid))
                    if not dying or time.monotonic() > deadline:
                        raise self._busy(s, lock, holder)
                time.sleep(0.1)  # its holder died: the server frees the lock when it notices
            with self.transaction() as s:
                row = s.get(RoundLock, lock.project_id)
                if row is not None:  # its writer no longer holds the advisory lock
                    lock.taken_over = _holder(row)
                    if lock.taken_over.host == _HOST and not _pid_running(lock.taken_over.pid):
                        lock.stale_reason = f"process {lock.taken_over.pid} is no longer running"
                    else:
                        lock.stale_reason = "its database session ended"
                self._write_lock_row(s, lock, row)
        except BaseException:
            conn.close()
            raise
        lock._conn = conn
        _HELD_TOKENS.add(lock.token)

    def _release(self, lock: RoundLockInfo) -> None:
        """Give the lock up, best effort: a lock row left behind is stale once this process ends."""
        _HELD_TOKENS.discard(lock.token)
        if lock._stop is not None and lock._thread is not None:
            lock._stop.set()
            lock._thread.join(timeout=BUSY_TIMEOUT_MS / 1000)
        table = RoundLock.__table__
        try:
            with self.transaction() as s:
                s.execute(table.delete().where(table.c.project_id == lock.project_id, table.c.token == lock.token))
        except (StoreError, SQLAlchemyError):
            pass
        if lock._conn is not None:
            try:
                lock._conn.execute(text(f"SELECT pg_advisory_unlock({_PG_ROUND_LOCK_KEY})"), {"p": lock.project_id})
                lock._conn.commit()
            except SQLAlchemyError:
                pass
            finally:
                lock._conn.close()
                lock._conn = None
