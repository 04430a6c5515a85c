"""Output helpers: rich text for people, JSON on stdout for programs, progress on stderr.

With `--json`, stdout carries exactly one JSON document per command and nothing else; notes go
to stderr. With `--quiet`, notes and progress bars are left out (results and errors remain).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn


@dataclass
class Output:
    """Where a command's results, notes and progress go, given --json and --quiet."""

    json: bool = False
    quiet: bool = False
    _stdout: Console | None = field(default=None, repr=False)
    _stderr: Console | None = field(default=None, repr=False)

    @property
    def console(self) -> Console:
        """stdout, for human-readable results (tables). Created lazily so tests capture it."""
        if self._stdout is None:
            self._stdout = Console(file=sys.stdout, highlight=False, soft_wrap=False)
        return self._stdout

    @property
    def err(self) -> Console:
        if self._stderr is None:
            self._stderr = Console(file=sys.stderr, highlight=False)
        return self._stderr

    def note(self, message: str) -> None:
        """A line for a person (what happened, what to do next); stderr under --json."""
        if self.quiet:
            return
        (self.err if self.json else self.console).print(message)

    def result(self, data: Any, render: Callable[[Console], None] | None = None) -> None:
        """The command's result: `data` as JSON under --json, else `render(console)`."""
        if self.json:
            sys.stdout.write(json.dumps(data, indent=2, default=str, sort_keys=False) + "\n")
            sys.stdout.flush()
        elif render is not None:
            render(self.console)

    def bar(self) -> Progress | None:
        """A rich Progress on stderr for several tasks at once, or None under --quiet."""
        if self.quiet:
            return None
        return Progress(
            SpinnerColumn(),
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.err,
            transient=True,
        )

    @contextmanager
    def progress(self, description: str, total: int | None = None) -> Iterator[Callable[..., None]]:
        """A progress bar on stderr; yields `advance(done, total=None, description=None)`.
        Silent under --quiet."""
        if self.quiet:
            yield lambda done, total=None, description=None: None
            return
        bar = self.bar()
        with bar:
            task = bar.add_task(description, total=total)

            def advance(done: int, new_total: int | None = None, text: str | None = None) -> None:
                if new_total is not None:
                    bar.update(task, total=new_total)
                if text is not None:
                    bar.update(task, description=f"{description}: {text}")
                bar.update(task, completed=done)

            yield advance
