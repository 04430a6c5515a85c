"""`PromptOracle`: asks a human in the terminal, one item at a time.

Images (8x8, 28x28, or any square [D] row, [H, W], [1, H, W], or colour [3, H, W]) are drawn as
terminal art (`terminal_art`): in 24-bit colour where the terminal shows it, else small images
with two shade characters per pixel and larger ones with Unicode half blocks (one character holds
two vertical pixels; a colour image by its luminance), shrunk by block averages
to fit the terminal's width. Table rows are drawn as a `rich` table under their column names, or,
when that table is wider than the terminal, as `name: value` cells: one a line while they fit the
terminal's height, else packed into columns down the page (as `ls` packs file names), and a row
still too long for the screen (thousands of columns) is cut there, with `a` to show every cell.
A cell too long to share a line (a text column) always comes whole, under its name, wrapped to
the terminal's width with its paragraphs kept (`wrapped_cell`).

At the prompt the person types a label, or a class's number in the list shown (1 for the first,
as the labelling page's number keys; only where no class is itself named by a number), or

    s   skip this item (it stays open)
    u   undo the last answer given in this session and ask that item again
    q   stop; the answers given so far are kept
    a   show every column of a row that was cut to fit the screen
    ?   show these keys and the classes

(a class named like a key wins; the key is then typed with a colon, `:s`). Ctrl-C and the end
of input stop like `q`; `interrupted` tells Ctrl-C apart. With `on_answer` each answer is handed
over the moment it is given (the CLI commits it to the database there, so a killed process
loses nothing already typed), and `on_undo` takes one back.
"""

from __future__ import annotations

import io
import os
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

import numpy as np

from activebayes.data.features import is_number
from activebayes.errors import closest_name
from activebayes.oracles.base import Answer
from activebayes.oracles.file import integral_text
from activebayes.oracles.terminal_art import colour_art, image_art, picture, shows_colour

def _one_line(value: Any) -> str:
    """A table cell as one line of text (runs of whitespace, newlines included, become a space)."""
    return " ".join(str(value).split())


def wrapped_cell(name: str, text: str, width: int) -> str:
    """A cell too long to share a line (a text column): `name:` on a line, then `text` whole,
    wrapped at spaces to `width` two spaces in; each of its lines (a paragraph, a list item) is
    wrapped on its own and a run of blank lines between them is kept as one."""
    import textwrap

    out, blank = [f"{name}:"], False
    for line in text.splitlines():
        words = " ".join(line.split())
        if not words:
            blank = len(out) > 1
            continue
        out += [""] if blank else []
        out += textwrap.wrap(words, width=max(width, 20), initial_indent="  ", subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)
        blank = False
    return "".join(line + "\n" for line in out)


def name_value_cells(names: Sequence[str], cells: Sequence[str], width: int, max_lines: int | None) -> tuple[str, int]:
    """`name: value` cells of a row too wide for a table; returns (text, number of cells left out).

    A cell longer than half the width (a text column) comes after the others, whole, wrapped to
    the width with its paragraphs (`wrapped_cell`). The others, each on one line, are one a line
    when they fit in `max_lines` (each long cell counted as one line); else they are packed
    column-major into as many equal columns as `width` holds (names left-aligned, values
    right-aligned, three spaces apart) and cut to `max_lines - 1` lines with the long ones, leaving
    one for the caller's note. `max_lines=None` packs them and never cuts.
    """
    values = [_one_line(c) for c in cells]
    fits = [len(n) + 2 + len(v) <= width // 2 for n, v in zip(names, values)]
    short = [(n, v) for n, v, ok in zip(names, values, fits) if ok]
    long = "".join(wrapped_cell(n, str(c), width) for n, c, ok in zip(names, cells, fits) if not ok)
    n_long = len(fits) - len(short)
    if not short:
        return long, 0
    pad, right = max(len(n) for n, _ in short) + 1, max(len(v) for _, v in short)
    lines = [f"{n + ':':<{pad}} {v:>{right}}" for n, v in short]
    if max_lines is not None and len(lines) + n_long <= max_lines:
        return "".join(line + "\n" for line in lines) + long, 0
    columns = max(1, (width + 3) // (pad + 1 + right + 3))
    shown = len(lines) if max_lines is None else min(len(lines), columns * max(1, max_lines - 1 - n_long))
    rows = -(-shown // columns)
    grid = ("   ".join(lines[c * rows + r] for c in range(columns) if c * rows + r < shown) for r in range(rows))
    return "".join(line + "\n" for line in grid) + long, len(lines) - shown


class PromptOracle:
    """Asks a person for each label in the terminal (see the module docstring for the keys).

    Args:
        classes: allowed labels (a typed label must be one of them; `3.0` is taken for class `3`),
            or None for any text.
        feature_names: column names for table rows (default x0, x1, ...).
        input, output: text streams (default stdin/stdout); tests pass io.StringIO.
        image: "auto" (square 64/784 rows, [1, H, W] and [3, H, W] are drawn as images), True or False.
        colour: draw images in 24-bit colour: "auto" (where `output` is a terminal that shows it,
            `terminal_art.shows_colour`), True or False.
        width: the terminal's width in characters; None asks the terminal each time an item is
            drawn ($COLUMNS, else the size of `output`, else of stdout, else 120).
        height: the terminal's height in lines, asked the same way ($LINES, else 24); a table row
            is cut to about this many lines, and `a` shows the rest.
        on_answer: called as `on_answer(key, label)` as soon as a label is typed; what it returns
            is kept and handed back to `on_undo`. A ValueError (e.g. DataError) it raises is shown
            and the same item asked again.
        on_undo: called as `on_undo(key, returned)` when the person undoes that answer; returning
            False refuses the undo (it should say why on `output`).
        hints: key -> a line shown under the item as "model: ..." (the round's prediction, e.g.
            "7 (0.62)"); the person still types the label.
        on_show: called as `on_show(key)` before an item is shown; False passes over it (another
            labeller has it: the CLI leases each item as the labelling page does). Such keys are
            in `passed` after `ask`, answered None, and counted neither as skipped nor answered.
        names: key -> what the person is shown for it (default: the key); the CLI names an image
            folder's items "query R", as the labelling page does, since a file's path may spell its class.

    After `ask`: `stop_requested` is True when the person stopped (q, Ctrl-C, end of input) before
    the last item, `interrupted` when that was Ctrl-C.
    """

    COMMANDS = {"s": "skip", "u": "undo", "q": "quit", "a": "all", "?": "help"}

    def __init__(
        self,
        *,
        classes: Sequence[Any] | None = None,
        feature_names: Sequence[str] | None = None,
        input: TextIO | None = None,
        output: TextIO | None = None,
        image: bool | str = "auto",
        colour: bool | str = "auto",
        width: int | None = None,
        height: int | None = None,
        on_answer: Callable[[str, str], Any] | None = None,
        on_undo: Callable[[str, Any], bool | None] | None = None,
        hints: Mapping[str, str] | None = None,
        on_show: Callable[[str], bool] | None = None,
        names: Mapping[str, str] | None = None,
    ) -> None:
        self.on_show = on_show
        self.names = dict(names or {})  # what the person is shown for a key (an image file's path may spell its class)
        self.passed: list[str] = []
        self.hints = dict(hints or {})
        self.classes = [str(c) for c in classes] if classes is not None else None
        self.feature_names = [str(n) for n in feature_names] if feature_names is not None else None
        self.input = input if input is not None else sys.stdin
        self.output = output if output is not None else sys.stdout
        self.image = image
        self.colour = colour
        self.width = width
        self.height = height
        self._last_row: np.ndarray | None = None  # the row drawn last, for `a`
        self._cut = False  # whether that row was cut to fit the screen
        self.on_answer = on_answer
        self.on_undo = on_undo
        self.stop_requested = False
        self.interrupted = False
        taken = set(self.classes or ())
        # what the person types for each command: "s", or ":s" when a class is called "s"
        self.keys = {cmd: (cmd if cmd not in taken else f":{cmd}") for cmd in self.COMMANDS}

    # ---- drawing ------------------------------------------------------------------------
    def terminal_width(self) -> int:
        """`width`, else $COLUMNS, else the size of the output's terminal, else stdout's, else 120."""
        return self._terminal_size(self.width, "COLUMNS", 0)

    def terminal_height(self) -> int:
        """`height`, else $LINES, else the size of the output's terminal, else stdout's, else 24."""
        return self._terminal_size(self.height, "LINES", 1)

    def _terminal_size(self, given: int | None, variable: str, axis: int) -> int:
        """One axis of the terminal (0: columns, 1: lines): `given`, else $variable, else ..."""
        if given:
            return int(given)
        value = os.environ.get(variable, "")
        if value.isdigit() and int(value) > 0:
            return int(value)
        try:
            return os.get_terminal_size(self.output.fileno())[axis]
        except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
            return shutil.get_terminal_size((120, 24))[axis]

    def _write(self, text: str) -> None:
        self.output.write(text)
        self.output.flush()

    def _show(self, key: str, candidate: Any, index: int, total: int) -> None:
        self._write(f"item {index + 1}/{total}: {self.names.get(key, key)}\n")
        if self.hints.get(key):
            self._write(f"model: {self.hints[key]}\n")
        if candidate is None:
            return
        image = picture(candidate) if self.image is not False else None
        if image is not None and (self.image is True or self.image == "auto"):
            colour = shows_colour(self.output) if self.colour == "auto" else bool(self.colour)
            draw = colour_art if colour else image_art
            self._write(draw(image, max_width=self.terminal_width()) + "\n")
            return
        self._last_row = np.asarray(candidate).reshape(-1)
        self._write(self.render_row(self._last_row))

    def render_row(self, row: np.ndarray, *, whole: bool = False) -> str:
        """A table row under its column names, or `name: value` cells when the table would be
        wider than the terminal (see the module docstring); `whole` never cuts the row."""
        from rich.console import Console
        from rich.table import Table

        cells = [f"{v:.4g}" if isinstance(v, (int, float)) else str(v) for v in np.asarray(row).reshape(-1).tolist()]
        values = [_one_line(c) for c in cells]
        names = list(self.feature_names or [])
        if len(names) != len(values):
            names = [f"x{j}" for j in range(len(values))]
        width = self.terminal_width()
        # rich's default box: one space of padding either side of a cell, one border between cells
        table_width = sum(max(len(n), len(v)) + 3 for n, v in zip(names, values)) + 1
        self._cut = False
        if table_width > width:
            max_lines = None if whole else max(12, self.terminal_height() - 8)
            text, left_out = name_value_cells(names, cells, width, max_lines)
            if left_out:
                self._cut = True
                text += f"… {left_out:,} more columns: type {self.keys['a']} to show every one\n"
            return text
        buffer = io.StringIO()
        console = Console(file=buffer, force_terminal=False, width=width, color_system=None, highlight=False, markup=False)  # cells as written
        table = Table(show_header=True)
        for name in names:
            table.add_column(name, no_wrap=True)
        table.add_row(*values)
        console.print(table)
        return buffer.getvalue()

    def help_text(self) -> str:
        k = self.keys
        if self.classes is None:
            label = "  a label   any text: the item's label\n"
        elif self.numbered:
            label = f"  a class   one of: {', '.join(self.classes)}, or its number (1 for {self.classes[0]})\n"
        else:
            label = f"  a class   one of: {', '.join(self.classes)}\n"
        return (
            label
            + f"  {k['s']:<8}  skip this item (it stays open)\n"
            + f"  {k['u']:<8}  undo the last answer of this session and ask that item again\n"
            + f"  {k['q']:<8}  stop here; the answers given so far are kept\n"
            + (f"  {k['a']:<8}  show every column of a row cut to fit the screen\n" if self._cut else "")
            + f"  {k['?']:<8}  this help\n"
            + "  Ctrl-C    stop at once; the answers given so far are kept\n"
        )

    # ---- reading ------------------------------------------------------------------------
    @property
    def numbered(self) -> bool:
        """Whether a class may be typed as its number (1 = the first): no class is named by a number."""
        return self.classes is not None and not any(is_number(c) for c in self.classes)

    def _label(self, text: str) -> str | None:
        """The class (or free text) `text` stands for, or None when it is not a label."""
        if not text:
            return None
        if self.classes is None or text in self.classes:
            return text
        if self.numbered and text.isdigit() and 1 <= int(text) <= len(self.classes):
            return self.classes[int(text) - 1]
        whole = integral_text(text)
        return whole if whole is not None and whole in self.classes else None

    def _read(self) -> tuple[str, str | None]:
        """The person's next action: ("label", text), ("skip"|"undo"|"quit"|"interrupt", None)."""
        k = self.keys
        shown = [f"{i} {c}" for i, c in enumerate(self.classes, start=1)] if self.numbered else self.classes
        choices = f" [{', '.join(shown)}]" if shown is not None and len(shown) <= 20 else ""
        commands = {typed: action for action, typed in ((self.COMMANDS[c], k[c]) for c in self.COMMANDS)}
        commands.update({f":{c}": self.COMMANDS[c] for c in self.COMMANDS})
        while True:
            self._write(f"label{choices} ({k['s']} skip, {k['u']} undo, {k['q']} quit, {k['?']} help): ")
            try:
                line = self.input.readline()
            except KeyboardInterrupt:
                self._write("\n")
                return "interrupt", None
            if line == "":  # end of input: behave like q
                self._write("\n")
                return "quit", None
            text = line.strip()
            action = commands.get(text)
            if action == "help":
                self._write(self.help_text())
                continue
            if action == "all":
                if self._cut and self._last_row is not None:
                    self._write(self.render_row(self._last_row, whole=True))
                else:
                    self._write("  every column of this item is shown already\n")
                continue
            if action is not None:
                return action, None
            label = self._label(text)
            if label is not None:
                return "label", label
            expected = "one of the classes" if self.classes is not None else "a label"
            close = closest_name(text, self.classes, cutoff=0.8) if self.classes is not None else None
            meant = f"did you mean {close!r}? " if close else ""  # a typo ('setosaa') is never taken for the class
            self._write(f"  {text!r} is not a label; {meant}type {expected}, or {k['?']} for help\n")

    def ask(self, keys: Sequence[str], candidates: Any = None) -> list[Answer]:
        """Ask for each key in turn; skipped keys, undone ones and those after a stop get None.
        `skipped` then holds the positions the person skipped (and did not answer later)."""
        keys = [str(k) for k in keys]
        answers = [Answer(k, None) for k in keys]
        given: list[tuple[int, Any]] = []  # (position, what on_answer returned) of this session's answers
        self.stop_requested = self.interrupted = False
        self.skipped: set[int] = set()
        self.passed = []
        i = 0
        while i < len(keys):
            if self.on_show is not None and not self.on_show(keys[i]):
                self._write(f"item {i + 1}/{len(keys)}: {self.names.get(keys[i], keys[i])} is with another labeller (answered or on their screen); passed over\n")
                if keys[i] not in self.passed:
                    self.passed.append(keys[i])
                i += 1
                continue
            self._show(keys[i], None if candidates is None else candidates[i], i, len(keys))
            while True:
                action, label = self._read()
                if action == "label":
                    token = None
                    if self.on_answer is not None:
                        try:
                            token = self.on_answer(keys[i], label)
                        except ValueError as exc:  # e.g. not a number for a regression project
                            self._write(f"  {exc}\n")
                            continue
                    answers[i] = Answer(keys[i], label)
                    given.append((i, token))
                    self.skipped.discard(i)
                    i += 1
                elif action == "skip":
                    self.skipped.add(i)
                    i += 1
                elif action == "undo":
                    if not given:
                        self._write("  nothing to undo: no answer given in this session yet\n")
                        continue
                    j, token = given[-1]
                    if self.on_undo is not None and self.on_undo(keys[j], token) is False:
                        continue
                    given.pop()
                    self._write(f"  undone: {self.names.get(keys[j], keys[j])} was {answers[j].value!r}; asking it again\n")
                    answers[j] = Answer(keys[j], None)
                    i = j
                else:  # quit or interrupt
                    self.stop_requested = True
                    self.interrupted = action == "interrupt"
                    return answers
                break
        return answers


__all__ = ["PromptOracle", "image_art", "name_value_cells"]  # image_art: from terminal_art
