"""Output helpers: rich text for people, JSON on stdout for programs, progress on stderr, and
the learning-curve table the study and demo commands print (`curves_table`).

With `--json`, stdout carries exactly one JSON document per command and nothing else; notes go
to stderr. With `--quiet`, notes and progress bars are left out (results and errors remain).

Both consoles print text as it is: rich's markup is off, so a cell, a column name or a class
holding square brackets ('[draft]', 'B[/x]') is shown as written, never read as a style. The
few styled lines ask for markup themselves (`print(..., markup=True)`, their data `escape`d).
Piped or redirected, neither wraps its lines (`unwrapped_when_piped`): a script reads each whole.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table



_TRAILING_BLANKS = re.compile(r"[ \t]+(?=\n)")


class TrimmedLines:
    """A text stream for a rich Console that drops the blanks rich leaves at the end of a line it
    wraps (or pads), so that piped output carries no trailing spaces; everything else (isatty,
    encoding, flush) is the stream's own."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(_TRAILING_BLANKS.sub("", text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def unwrapped_when_piped(console: Console) -> Console:
    """`console`, set to never wrap its text where it writes to no terminal (a pipe, a file, a
    test's runner) and no $COLUMNS asks for a width: rich would break a long note or message at
    80 columns there, splitting the line a script greps for. On a terminal it wraps at the
    terminal's width as before; tables still fit rich's width either way."""
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.soft_wrap = True
    return console


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
            self._stdout = unwrapped_when_piped(Console(file=TrimmedLines(sys.stdout), highlight=False, markup=False))
        return self._stdout

    @property
    def err(self) -> Console:
        if self._stderr is None:
            self._stderr = unwrapped_when_piped(Console(file=TrimmedLines(sys.stderr), highlight=False, markup=False))
        return self._stderr

    def note(self, message: str) -> None:
        """A line for a person (what happened, what to do next); stderr under --json, there as one
        line however long (a program reading stderr line by line gets each note whole)."""
        if self.quiet:
            return
        if self.json:
            self.err.print(message, soft_wrap=True)
        else:
            self.console.print(message)

    def result(self, data: Any, render: Callable[[Console], None] | None = None) -> None:
        """The command's result: `data` as JSON under --json (strict JSON: an infinite or NaN
        figure, such as an interval's open end, is null), else `render(console)`."""
        if self.json:
            sys.stdout.write(json.dumps(strict_json(data), indent=2, default=str, sort_keys=False, allow_nan=False) + "\n")
            sys.stdout.flush()
        elif render is not None:
            render(self.console)

    def bar(self) -> Progress | None:
        """A rich Progress on stderr for several tasks at once, or None under --quiet or where
        stderr is no terminal (piped or redirected, a bar shows nothing but leaves a blank line)."""
        if self.quiet or not self.err.is_terminal:
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
        Silent under --quiet and where stderr is no terminal."""
        bar = self.bar()
        if bar is None:
            yield lambda done, total=None, description=None: None
            return
        with bar:
            task = bar.add_task(escape(description), total=total)  # the bar's text column reads markup

            def advance(done: int, new_total: int | None = None, text: str | None = None) -> None:
                if new_total is not None:
                    bar.update(task, total=new_total)
                if text is not None:
                    bar.update(task, description=escape(f"{description}: {text}"))
                bar.update(task, completed=done)

            yield advance


def strict_json(value: Any) -> Any:
    """`value` with every float that JSON cannot hold (inf, -inf, NaN) as None, through dicts,
    lists and tuples."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {k: strict_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(v) for v in value]
    return value


def titled_table(title: str) -> Table:
    """A rich Table under `title`, at least as wide as the title up to the console's width: rich
    wraps a title to its table's width, which broke a long title over lines of a narrow table."""
    from rich.cells import cell_len

    return Table(title=title, min_width=cell_len(title))


def curves_table(title: str, curves: dict[str, list[dict[str, Any]]], repeats: int) -> Table:
    """Labels down, one column per curve: mean test accuracy (± sd over repeats), from
    `activebayes.study`'s curves [{"labels", "mean", "sd", "n"}]."""
    table = titled_table(title)
    table.add_column("labels", justify="right")
    for name in curves:
        table.add_column(name, justify="right")
    by_name = [{p["labels"]: p for p in points} for points in curves.values()]
    for n in sorted({p["labels"] for points in curves.values() for p in points}):
        cells = []
        for points in by_name:
            p = points.get(n)
            cells.append("" if p is None else (f"{p['mean']:.3f} ± {p['sd']:.3f}" if repeats > 1 else f"{p['mean']:.3f}"))
        table.add_row(str(n), *cells)
    return table


# ---- file names ---------------------------------------------------------------------------------
def safe_name(text: str) -> str:
    """`text` usable in a file name: runs of anything but letters, digits, '.', '_', '-' become '_'."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "item"


def round_csv_name(project: str, number: int) -> str:
    """The default round file of round `number`: `<project>-round-<N>.csv` (in the current folder)."""
    return f"{safe_name(project)}-round-{number}.csv"


def early_round_note(settings: Mapping[str, Any] | None) -> str:
    """What chose an early round's batch, for the round's title (the loop's acquisition_settings):
    " (TypiClust's typical items: 10 labels so far, 10 classes)", " (no labels yet: a random first
    batch)", " (a uniform draw: 3 of 9 classes have no label yet)", or "" for the acquisition's own."""
    settings = settings or {}
    typical, cover, first = settings.get("typical"), settings.get("cover"), settings.get("first")
    if typical:
        so_far = f"{typical['labels']} labels so far" if typical["labels"] else "no labels yet"
        return f" (TypiClust's typical items: {so_far}, {typical['classes']} classes)"
    if first:
        return f" (no labels yet: a {'typical' if first == 'typical' else 'random'} first batch)"
    if cover:
        return f" (a uniform draw: {cover['classes'] - cover['seen']} of {cover['classes']} classes have no label yet)"
    return ""


TRUTH_TEXT = {"none": "no labels", "known": "labels imported", "held-back": "labels held back as the truth"}


def items_from(verb: str, summary: dict, source: Any) -> str:
    """"Added 40 pool items and 10 test items from FILE" (the test items when there are any)."""
    test = f" and {summary['test_items']} test items" if summary["test_items"] else ""
    return f"{verb} {summary['pool_items']} pool items{test} from {source}"


def after_pool_add(st: Any, truth: str) -> str:
    """`pool add`'s Next line: a round a person answers, and where labels are held back the
    simulated round they answer too (before, only that one was named, to a person who meant to
    label)."""
    person = st.next_command("round")
    if truth != "held-back":
        return person
    return f"{person} (you label what it asks), or {st.next_command('round', '--oracle', 'truth')} (the held-back labels answer it)"


def shown_data(path: str | None) -> str:
    """A project's data file as the user knows it: the image folder for a converted folder's
    cache file (`*.image-folder.npz`), else the path; "none yet" without one."""
    if path is None:
        return "none yet"
    from activebayes.data.images import source_folder

    folder = source_folder(path)
    return f"{folder} (images)" if folder is not None else path


def shown_source(info: Any) -> str:
    """The project's data as the user knows it (`shown_data`); after `pool add --append`, the
    first file plus the files appended: "t.csv + 2 appended (b.csv, c.csv; 40 rows)"; an image
    folder plus the images appended to it: "/data/imgs (images) + 20 images appended"."""
    settings = info.settings or {}
    appended = settings.get("appended") or []
    if not appended:
        return shown_data(info.data_path)
    rows = sum(a["rows"] for a in appended)
    if info.data_format == "image-folder":  # new images put in the same folder
        return f"{shown_data(info.data_path)} + {rows} images appended"
    names = ", ".join(Path(a["file"]).name for a in appended[-3:])
    more = "..., " if len(appended) > 3 else ""
    return f"{settings.get('first_data_path')} + {len(appended)} appended ({more}{names}; {rows} rows)"
