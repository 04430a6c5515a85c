"""The terminal prompt's turns among other labellers of the same round.

The labelling page leases each item it shows (`PoolStore.lease_item`, see
`activebayes.store.lease_access`), so two labellers are not shown the same item at once. The
prompt takes part in the same leases: before it shows an item it leases it under the name
"<labeller> (terminal)" (told apart from that labeller's page), and it passes over an item that
another labeller holds or that has been answered in the round since the prompt started. A daemon
thread renews the lease while the person thinks; the lease ends when the prompt stops. A prompt
killed, or closed with its terminal, leaves its lease to run out after `seconds`; the same
labeller's next prompt takes the item back at once (its own name's lease), where a session token
in the name would have made them wait. Two prompts of one labeller at once therefore share their
leases, as two tabs of one labeller's page do. A lease is advisory: an answer is still checked
against the item's label when it is written (`PoolStore.record_labels`). Answers piped in (not a
terminal) are taken one a line for the items in the order first listed, so there nothing is
passed over.

The round may stop waiting while the prompt is open: another session's `round` closed it (every
query answered) or discarded it (`round --restart-round`), and the next round may ask some of
the same items. The prompt then shows no further item (`take` raises `RoundGone`), and an answer
typed meanwhile is recorded for the round that waits now when it asks that item, else outside a
round (`round_for_answer`), as `label --from` records an answer to an item no round asks.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from activebayes.errors import RoundNotWaitingError
from activebayes.store.engine import DATABASE_AWAY

LEASE_SECONDS = 120.0  # as the page's default --lease-seconds


def holder_name(who: str) -> str:
    """The lease name of the prompt sessions of `who`: "alice (terminal)"."""
    return f"{who} (terminal)"


class RoundGone(Exception):
    """The prompt's round no longer waits for answers; `str()` says what it is now."""


class PromptTurns:
    """Leases for one prompt session.

    Args:
        store: an open PoolStore.
        project: the project's name.
        round_number: the round whose queries are asked.
        holder: this session's lease name (`holder_name`).
        item_ids: {key: item id} of the queries the prompt may show.
        seconds: the length of a lease; `renew` extends it by as much.
        pass_over: pass over the items others have (a person at a terminal, who sees which item
            is asked); False for answers piped in, one a line for the items in the order listed,
            which a passed-over item would shift onto the wrong items.
    """

    def __init__(self, store: Any, project: str, round_number: int, holder: str, item_ids: Mapping[str, int], *,
                 seconds: float = LEASE_SECONDS, pass_over: bool = True) -> None:  # fmt: skip
        self.store, self.project, self.round_number, self.holder = store, project, round_number, holder
        self.item_ids = dict(item_ids)
        self.seconds = float(seconds)
        self.pass_over = pass_over
        self.current: str | None = None  # the key this session holds now
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def take(self, key: str) -> bool:
        """Lease `key` to this session (its lease on any other item ends); False when another
        labeller holds it or it was answered in the round, so that the prompt passes it over (and
        notes it in `PromptOracle.passed`); True all the same without `pass_over`: answers piped in
        are each for the next item listed."""
        try:
            with self._lock:
                leased = self._lease(key, waiting=True)  # one transaction: the round still waits, and the lease
        except RoundNotWaitingError:
            raise self._gone() from None
        except DATABASE_AWAY:  # a lease is advisory: show the item; its answer says whether the database is back
            return True
        return leased or not self.pass_over

    def _waiting(self) -> Any:
        """The project's latest round when it waits for answers, else None."""
        latest = self.store.latest_round(self.project)
        return latest if latest is not None and latest.status.waiting else None

    def _gone(self) -> RoundGone:
        """The prompt's round waits no longer: the error that says which round waits now."""
        try:
            waiting = self._waiting()
            now = f"; round {waiting.number} waits now" if waiting is not None else "; no round waits now"
        except DATABASE_AWAY:
            now = ""
        return RoundGone(f"round {self.round_number} no longer waits for answers (closed or discarded meanwhile){now}")

    def round_for_answer(self, key: str) -> int | None:
        """The round an answer to `key` belongs to when it is written: the prompt's round while it
        waits, else the round waiting now if it asks `key`, else None (outside a round)."""
        waiting = self._waiting()
        if waiting is None:
            return None
        if waiting.number == self.round_number:
            return waiting.number
        return waiting.number if any(q.key == key for q in self.store.queries(self.project, waiting.number)) else None

    def renew(self) -> bool:
        """Extend the lease on the item shown now; False when there is none or it is lost."""
        with self._lock:  # never beside a `take`: a late renewal would move the lease back
            return self.current is not None and self._lease(self.current)

    def _lease(self, key: str, *, waiting: bool = False) -> bool:
        leased = self.store.lease_item(self.project, self.holder, [self.item_ids[key]], seconds=self.seconds,
                                       round_number=self.round_number, waiting=waiting)  # fmt: skip
        self.current = key if leased is not None else None
        return leased is not None

    def release(self) -> None:
        """End this session's lease."""
        with self._lock:
            self.current = None
            self.store.release_leases(self.project, self.holder)

    def _keep(self) -> None:
        while not self._stop.wait(self.seconds / 3):
            try:
                self.renew()
            except Exception:  # noqa: BLE001 - advisory: a dropped connection must not stop the person; the answer is checked anyway
                pass

    def __enter__(self) -> PromptTurns:
        self._thread = threading.Thread(target=self._keep, name="prompt-lease", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        try:
            self.release()
        except Exception:  # noqa: BLE001 - leaving: an unreleased lease runs out by itself
            pass
