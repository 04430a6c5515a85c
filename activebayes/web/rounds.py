"""The "next round" button: a round run in a background thread while the page shows its progress.

The round itself is the caller's `run_round(project)` (for `activebayes serve`, the same code path
as `activebayes round`, holding the project's round lock, so a `round` started meanwhile in a
terminal is refused in one line, and a round running there makes this one fail with that line).
It returns when the round waits for answers and raises an exception whose text is one line when
it cannot run. One round at a time per project in this server; the progress shown is the stage
the store records for the latest round.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: What the page says while the latest round is in each recorded status.
STAGES = {
    "started": "fitting the posterior",
    "fitted": "scoring the pool",
    "scored": "recording the queries",
    "queried": "waiting for answers",
    "answered": "closing the round",
    "done": "done",
    "failed": "failed",
}


@dataclass
class RoundRun:
    """One run of the button: `error` is its one-line failure, None while running or once done."""

    project: str
    started: float
    finished: float | None = None
    error: str | None = None

    @property
    def running(self) -> bool:
        return self.finished is None


class RoundWorker:
    """Runs `run_round(project)` in a daemon thread, one at a time per project."""

    def __init__(self, run_round: Callable[[str], Any] | None) -> None:
        self._run_round = run_round
        self._runs: dict[str, RoundRun] = {}
        self._lock = threading.Lock()

    @property
    def available(self) -> bool:
        return self._run_round is not None

    def start(self, project: str) -> RoundRun | None:
        """Start a round of `project`; None when one started here is still running (or rounds
        cannot be run from this page)."""
        if self._run_round is None:
            return None
        with self._lock:
            current = self._runs.get(project)
            if current is not None and current.running:
                return None
            run = RoundRun(project, time.time())
            self._runs[project] = run
        threading.Thread(target=self._work, args=(run,), name=f"activebayes-round-{project}", daemon=True).start()
        return run

    def _work(self, run: RoundRun) -> None:
        assert self._run_round is not None
        try:
            self._run_round(run.project)
        except Exception as exc:  # noqa: BLE001 - shown on the page as one line
            run.error = " ".join(str(exc).split()) or type(exc).__name__
        finally:
            run.finished = time.time()

    def last(self, project: str) -> RoundRun | None:
        with self._lock:
            return self._runs.get(project)
