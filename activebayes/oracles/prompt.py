"""`PromptOracle`: asks a human in the terminal, one item at a time.

Images (8x8, 28x28, or any square [D] row, or [1, H, W]) are drawn as terminal art: small
images with two shade characters per pixel, larger ones with Unicode half blocks (one character
holds two vertical pixels). Table rows are drawn as a `rich` table. The person types a label, `s`
to skip the item, or `q` to save what was answered and stop.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import numpy as np

from activebayes.oracles.base import Answer

SHADES = " ░▒▓█"


def image_art(pixels: np.ndarray) -> str:
    """Terminal art of a 2-D grey image (any range; scaled to [0, 1]).

    Side <= 16: each pixel is two shade characters from " ░▒▓█" (dark to bright).
    Larger: each character is a top/bottom pixel pair thresholded at 0.5: " ▀▄█".
    """
    img = np.asarray(pixels, dtype=np.float64)
    lo, hi = float(img.min()), float(img.max())
    img = (img - lo) / (hi - lo) if hi > lo else np.zeros_like(img)
    if max(img.shape) <= 16:
        levels = np.clip((img * (len(SHADES) - 1)).round().astype(int), 0, len(SHADES) - 1)
        return "\n".join("".join(SHADES[v] * 2 for v in row) for row in levels)
    if img.shape[0] % 2:
        img = np.vstack([img, np.zeros((1, img.shape[1]))])
    on = img >= 0.5
    blocks = {(False, False): " ", (True, False): "▀", (False, True): "▄", (True, True): "█"}
    return "\n".join(
        "".join(blocks[(bool(t), bool(b))] for t, b in zip(on[r], on[r + 1])) for r in range(0, on.shape[0], 2)
    )


def _as_image(candidate: np.ndarray) -> np.ndarray | None:
    arr = np.asarray(candidate)
    if arr.ndim == 3 and arr.shape[0] == 1:
        return arr[0]
    if arr.ndim == 2:
        return arr
    if arr.ndim == 1 and arr.size in (64, 784):
        side = math.isqrt(arr.size)
        return arr.reshape(side, side)
    return None


class PromptOracle:
    """Asks a person for each label in the terminal.

    Args:
        classes: allowed labels (a typed label must be one of them), or None for any text.
        feature_names: column names for table rows (default x0, x1, ...).
        input, output: text streams (default stdin/stdout); tests pass io.StringIO.
        image: "auto" (square 64/784 rows and [1, H, W] are drawn as images), True or False.
    """

    def __init__(self, *, classes: Sequence[Any] | None = None, feature_names: Sequence[str] | None = None,
                 input: TextIO | None = None, output: TextIO | None = None, image: bool | str = "auto") -> None:  # fmt: skip
        self.classes = [str(c) for c in classes] if classes is not None else None
        self.feature_names = list(feature_names) if feature_names is not None else None
        self.input = input if input is not None else sys.stdin
        self.output = output if output is not None else sys.stdout
        self.image = image
        self.stop_requested = False

    def _show(self, key: str, candidate: Any, index: int, total: int) -> None:
        from rich.console import Console
        from rich.table import Table

        console = Console(file=self.output, force_terminal=False, width=120, color_system=None)
        console.print(f"item {index + 1}/{total}: {key}")
        if candidate is None:
            return
        image = _as_image(candidate) if self.image is not False else None
        if image is not None and (self.image is True or self.image == "auto"):
            self.output.write(image_art(image) + "\n")
            return
        row = np.asarray(candidate).reshape(-1)
        names = self.feature_names or [f"x{j}" for j in range(row.size)]
        table = Table(show_header=True)
        for name in names:
            table.add_column(str(name))
        table.add_row(*[f"{v:.4g}" for v in row.tolist()])
        console.print(table)

    def _read_label(self) -> str | None:
        choices = f" [{', '.join(self.classes)}]" if self.classes is not None and len(self.classes) <= 20 else ""
        while True:
            self.output.write(f"label{choices} (s = skip, q = save and quit): ")
            self.output.flush()
            line = self.input.readline()
            if line == "":  # end of input: behave like q
                return "q"
            text = line.strip()
            if text in ("s", "q"):
                return text
            if text and (self.classes is None or text in self.classes):
                return text
            self.output.write(f"  {text!r} is not a label; type one of the classes, s or q\n")

    def ask(self, keys: Sequence[str], candidates: Any = None) -> list[Answer]:
        """Ask for each key in turn; skipped keys and those after `q` get None."""
        answers: list[Answer] = []
        for i, key in enumerate(keys):
            if self.stop_requested:
                answers.append(Answer(str(key), None))
                continue
            self._show(str(key), None if candidates is None else candidates[i], i, len(keys))
            text = self._read_label()
            if text == "q":
                self.stop_requested = True
                answers.append(Answer(str(key), None))
            else:
                answers.append(Answer(str(key), None if text == "s" else text))
        return answers


__all__ = ["PromptOracle", "image_art"]
