"""Images drawn in a terminal, for the labelling prompt (`PromptOracle`).

`picture` reads an item as an image: [H, W], [1, H, W], a colour [3, H, W], or a flat row of 64
or 784 values (8x8, 28x28); a table row (text, or any other shape) is none.

`image_art` draws a grey image with plain characters, for any terminal and for text output:
side <= 16, two shade characters per pixel from " ░▒▓█"; larger, one half-block character per
pair of rows, " ▀▄█", thresholded at 0.5 (a colour image is drawn by its luminance).

`colour_art` draws in 24-bit colour where the terminal shows it: each character "▀" carries the
upper pixel as its foreground colour and the lower one as its background (two pixels a cell, the
colours as they are; grey images in grey levels instead of two). Both shrink an image wider than
`max_width` by block averages.
"""

from __future__ import annotations

import math
import os

import numpy as np

LUMINANCE = np.asarray([0.299, 0.587, 0.114])  # ITU-R BT.601
SHADES = " ░▒▓█"


def _shrink(img: np.ndarray, factor: int) -> np.ndarray:
    """`img` [H, W] or [H, W, 3] averaged over factor x factor blocks (edges padded by repetition)."""
    h, w = (-(-n // factor) * factor for n in img.shape[:2])
    pad = ((0, h - img.shape[0]), (0, w - img.shape[1])) + ((0, 0),) * (img.ndim - 2)
    padded = np.pad(img, pad, mode="edge")
    return padded.reshape(h // factor, factor, w // factor, factor, *img.shape[2:]).mean(axis=(1, 3))


def image_art(pixels: np.ndarray, max_width: int | None = None) -> str:
    """Terminal art of a 2-D grey image (any range; scaled to [0, 1]).

    Side <= 16: each pixel is two shade characters from " ░▒▓█" (dark to bright).
    Larger: each character is a top/bottom pixel pair thresholded at 0.5: " ▀▄█".
    max_width: at most this many characters a line; a wider image is shrunk by block averages.
    """
    img = np.asarray(pixels, dtype=np.float64)
    if img.ndim == 3:  # colour [H, W, 3]: its luminance
        img = img @ LUMINANCE
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


def colour_art(pixels: np.ndarray, max_width: int | None = None) -> str:
    """24-bit colour art of an image [H, W] (grey) or [H, W, 3] (RGB), any range (scaled to
    [0, 1] by its own range): "▀" with the upper pixel's colour in front and the lower one's
    behind, one character a pixel wide; ends every line with a colour reset."""
    img = np.asarray(pixels, dtype=np.float64)
    if max_width is not None and max_width > 0 and img.shape[1] > max_width:
        img = _shrink(img, -(-img.shape[1] // max_width))
    lo, hi = float(img.min()), float(img.max())
    img = (img - lo) / (hi - lo) if hi > lo else np.zeros_like(img)
    rgb = np.repeat(img[..., None], 3, axis=-1) if img.ndim == 2 else img
    if rgb.shape[0] % 2:
        rgb = np.concatenate([rgb, np.zeros((1, *rgb.shape[1:]))])
    levels = np.clip((rgb * 255).round().astype(int), 0, 255)
    lines = []
    for r in range(0, levels.shape[0], 2):
        cells = (f"\x1b[38;2;{t[0]};{t[1]};{t[2]}m\x1b[48;2;{b[0]};{b[1]};{b[2]}m▀" for t, b in zip(levels[r], levels[r + 1]))
        lines.append("".join(cells) + "\x1b[0m")
    return "\n".join(lines)


def shows_colour(stream: object) -> bool:
    """Whether `stream` is a terminal that shows 24-bit colour: a tty, $NO_COLOR unset, $TERM
    not "dumb", and $COLORTERM "truecolor" or "24bit" (the terminals that set it)."""
    try:
        tty = bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError):
        return False
    env = os.environ
    return tty and "NO_COLOR" not in env and env.get("TERM", "") != "dumb" and env.get("COLORTERM", "").lower() in ("truecolor", "24bit")


def picture(candidate: np.ndarray) -> np.ndarray | None:
    """The item as an image [H, W] or [H, W, 3] (module docstring), or None for a table row."""
    arr = np.asarray(candidate)
    if arr.dtype.kind not in "fiub":  # a table row as text, never a picture
        return None
    if arr.ndim == 3 and arr.shape[0] == 1:
        return arr[0]
    if arr.ndim == 3 and arr.shape[0] == 3:  # colour, channels first: [H, W, 3]
        return np.moveaxis(arr.astype(np.float64), 0, -1)
    if arr.ndim == 2:
        return arr
    if arr.ndim == 1 and arr.size in (64, 784):
        side = math.isqrt(arr.size)
        return arr.reshape(side, side)
    return None


__all__ = ["colour_art", "image_art", "picture", "shows_colour"]
