"""`PromptOracle`: asks a human in the terminal, one item at a time.

Images (8x8, 28x28, or any square [D] row, [H, W], [1, H, W], or colour [3, H, W] drawn by its
luminance) are drawn as terminal art: small images with two shade characters per pixel, larger
ones with Unicode half blocks (one character holds two vertical pixels), shrunk by block averages
to fit the terminal's width. Table rows are drawn as a `rich` table under their column names, or,
when that table is wider than the terminal, as `name: value` cells: one a line while they fit the
terminal's height, else packed into columns down the page (as `ls` packs file names), and a row
still too long for the screen (thousands of columns) is cut there, with `a` to show every cell.
A cell too long to share a line (a text column) always gets a line of its own, whole.

At the prompt the person types a label, or

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
import math
import os
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

import numpy as np

from activebayes.oracles.base import Answer
from activebayes.oracles.file import integral_text

SHADES = " ░▒▓█"


def _shrink(img: np.ndarray, factor: int) -> np.ndarray:
    """`img` [H, W] averaged over factor x factor blocks (edges padded by repetition)."""
    h, w = (-(-n // factor) * factor for n in img.shape)
    padded = np.pad(img, ((0, h - img.shape[0]), (0, w - img.shape[1])), mode="edge")
    return padded.reshape(h // factor, factor, w // factor, factor).mean(axis=(1, 3))


def image_art(pixels: np.ndarray, max_width: int | None = None) -> str:
    """Terminal art of a 2-D grey image (any range; scaled to [0, 1]).

    Side <= 16: each pixel is two shade characters from " ░▒▓█" (dark to bright).
    Larger: each character is a top/bottom pixel pair thresholded at 0.5: " ▀▄█".
    max_width: at most this many characters a line; a wider image is shrunk by block averages.
    """
    img = np.asarray(pixels, dtype=np.float64)
    small = max(img.shape) <= 16
    per_pixel = 2 if small else 1
    if max_width is not None and max_width > 0 and img.shape[1] * per_pixel > max_width:
        img = _shrink(img, -(-img.shape[1] * per_pixel // max_width))
    lo, hi = float(img.min()), float(img.max())
    img = (img - lo) / (hi - lo) if hi > lo else np.zeros_like(img)
    if small:
        levels = np.clip((img * (len(SHADES) - 1)).round().astype(int), 0, len(SHADES) - 1)
        return "\n".join("".join(SHADES[v] * 2 for v in row) for row in levels)
    if img.shape[0] % 2:
        img = np.vstack([img, np.zeros((1, img.shape[1]))])
    on = img >= 0.5
    blocks = {(False, False): " ", (True, False): "▀", (False, True): "▄", (True, True): "█"}
    return "\n".join(
        "".join(blocks[(bool(t), bool(b))] for t, b in zip(on[r], on[r + 1])) for r in range(0, on.shape[0], 2)
    )


def _one_line(value: Any) -> str:
    """A table cell as one line of text (runs of whitespace, newlines included, become a space)."""
    return " ".join(str(value).split())


def name_value_cells(names: Sequence[str], values: Sequence[str], width: int, max_lines: int | None) -> tuple[str, int]:
    """`name: value` cells of a row too wide for a table; returns (text, number of cells left out).

    A cell longer than half the width (a text column) gets a line of its own, whole, after the
    others. The others are one a line when they fit in `max_lines`; else they are packed
    column-major into as many equal columns as `width` holds (names left-aligned, values
    right-aligned, three spaces apart) and cut to `max_lines - 1` lines with the long ones, leaving
    one for the caller's note. `max_lines=None` packs them and never cuts.
    """
    short = [(n, v) for n, v in zip(names, values) if len(n) + 2 + len(v) <= width // 2]
    long = "".join(f"{n}: {v}\n" for n, v in zip(names, values) if len(n) + 2 + len(v) > width // 2)
    if not short:
        return long, 0
    pad, right = max(len(n) for n, _ in short) + 1, max(len(v) for _, v in short)
    lines = [f"{n + ':':<{pad}} {v:>{right}}" for n, v in short]
    if max_lines is not None and len(lines) + long.count("\n") <= max_lines:
        return "".join(line + "\n" for line in lines) + long, 0
    columns = max(1, (width + 3) // (pad + 1 + right + 3))
    shown = len(lines) if max_lines is None else min(len(lines), columns * max(1, max_lines - 1 - long.count("\n")))
    rows = -(-shown // columns)
    grid = ("   ".join(lines[c * rows + r] for c in range(columns) if c * rows + r < shown) for r in range(rows))
    return "".join(line + "\n" for line in grid) + long, len(lines) - shown


def _as_image(candidate: np.ndarray) -> np.ndarray | None:
    arr = np.asarray(candidate)
    if arr.dtype.kind not in "fiub":  # a table row as text, never a picture
        return None
    if arr.ndim == 3 and arr.shape[0] == 1:
        return arr[0]
    if arr.ndim == 3 and arr.shape[0] == 3:  # colour: drawn by its luminance (ITU-R BT.601)
        return np.tensordot(np.asarray([0.299, 0.587, 0.114]), arr.astype(np.float64), axes=1)
    if arr.ndim == 2:
        return arr
    if arr.ndim == 1 and arr.size in (64, 784):
        side = math.isqrt(arr.size)
        return arr.reshape(side, side)
    return None


class PromptOracle:
    """Asks a person for each label in the terminal (see the module docstring for the keys).

    Args:
        classes: allowed labels (a typed label must be one of them; `3.0` is taken for class `3`),
            or None for any text.
        feature_names: column names for table rows (default x0, x1, ...).
        input, output: text streams (default stdin/stdout); tests pass io.StringIO.
        image: "auto" (square 64/784 rows, [1, H, W] and [3, H, W] are drawn as images), True or False.
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
        width: int | None = None,
        height: int | None = None,
        on_answer: Callable[[str, str], Any] | None = None,
        on_undo: Callable[[str, Any], bool | None] | None = None,
        hints: Mapping[str, str] | None = None,
    ) -> None:
        self.hints = dict(hints or {})
        self.classes = [str(c) for c in classes] if classes is not None else None
        self.feature_names = [str(n) for n in feature_names] if feature_names is not None else None
        self.input = input if input is not None else sys.stdin
        self.output = output if output is not None else sys.stdout
        self.image = image
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
        self._write(f"item {index + 1}/{total}: {key}\n")
        if self.hints.get(key):
            self._write(f"model: {self.hints[key]}\n")
        if candidate is None:
            return
        image = _as_image(candidate) if self.image is not False else None
        if image is not None and (self.image is True or self.image == "auto"):
            self._write(image_art(image, max_width=self.terminal_width()) + "\n")
            return
        self._last_row = np.asarray(candidate).reshape(-1)
        self._write(self.render_row(self._last_row))

    def render_row(self, row: np.ndarray, *, whole: bool = False) -> str:
        """A table row under its column names, or `name: value` cells when the table would be
        wider than the terminal (see the module docstring); `whole` never cuts the row."""
        from rich.console import Console
        from rich.table import Table

        values = [f"{v:.4g}" if isinstance(v, (int, float)) else _one_line(v) for v in np.asarray(row).reshape(-1).tolist()]
        names = list(self.feature_names or [])
        if len(names) != len(values):
            names = [f"x{j}" for j in range(len(values))]
        width = self.terminal_width()
        # rich's default box: one space of padding either side of a cell, one border between cells
        table_width = sum(max(len(n), len(v)) + 3 for n, v in zip(names, values)) + 1
        self._cut = False
        if table_width > width:
            max_lines = None if whole else max(12, self.terminal_height() - 8)
            text, left_out = name_value_cells(names, values, width, max_lines)
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
        else:
            label = f"  a class   one of: {', '.join(self.classes)}\n"
        return (
            label
            + f"  {k['s']:<8}  skip this item (it stays open)\n"
            + f"  {k['u']:<8}  undo the last answer of this session and ask that item again\n"
            + f"  {k['q']:<8}  stop here; the answers given so far are kept\n"
            + f"  {k['a']:<8}  show every column of a row cut to fit the screen\n"
            + f"  {k['?']:<8}  this help\n"
            + "  Ctrl-C    stop at once; the answers given so far are kept\n"
        )

    # ---- reading ------------------------------------------------------------------------
    def _label(self, text: str) -> str | None:
        """The class (or free text) `text` stands for, or None when it is not a label."""
        if not text:
            return None
        if self.classes is None or text in self.classes:
            return text
        whole = integral_text(text)
        return whole if whole is not None and whole in self.classes else None

    def _read(self) -> tuple[str, str | None]:
        """The person's next action: ("label", text), ("skip"|"undo"|"quit"|"interrupt", None)."""
        k = self.keys
        choices = f" [{', '.join(self.classes)}]" if self.classes is not None and len(self.classes) <= 20 else ""
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
            self._write(f"  {text!r} is not a label; type {expected}, or {k['?']} for help\n")

    def ask(self, keys: Sequence[str], candidates: Any = None) -> list[Answer]:
        """Ask for each key in turn; skipped keys, undone ones and those after a stop get None.
        `skipped` then holds the positions the person skipped (and did not answer later)."""
        keys = [str(k) for k in keys]
        answers = [Answer(k, None) for k in keys]
        given: list[tuple[int, Any]] = []  # (position, what on_answer returned) of this session's answers
        self.stop_requested = self.interrupted = False
        self.skipped: set[int] = set()
        i = 0
        while i < len(keys):
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
                    self._write(f"  undone: {keys[j]} was {answers[j].value!r}; asking it again\n")
                    answers[j] = Answer(keys[j], None)
                    i = j
                else:  # quit or interrupt
                    self.stop_requested = True
                    self.interrupted = action == "interrupt"
                    return answers
                break
        return answers


__all__ = ["PromptOracle", "image_art", "name_value_cells"]
