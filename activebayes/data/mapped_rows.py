"""Rows of the features copied out of the feature cache's file, not through its memory map.

A project's features are the cache's .npy mapped read-only (`feature_cache`). Reading rows of
the mapping faults its pages into the process and they stay mapped, a read-around of the file
each: a round that fingerprints and scores the pool chunk by chunk ended with the whole file in
its resident memory (the 284 MB of a [200,000, 355] float32 cache) besides the chunk, and even
the 1,000 scattered rows of the stop set mapped most of it. `take_rows` reads the rows with
plain reads of the file instead, each run of consecutive rows in one read: the file's pages stay
in the kernel's page cache (nothing is read from the disk twice) and only the copy counts in the
process's memory. A read-only mapping (`mmap_mode="r"`) shows the file as it is, so the copy is
the same array as `x[rows]`; any other array (in memory, a view, a writable mapping) is indexed.

    x = take_rows(data.x, rows)      # [len(rows), ...] C-ordered copy, as x[rows]
"""

from __future__ import annotations

import mmap
from typing import BinaryIO

import numpy as np


def take_rows(x: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """x[rows] [len(rows), ...] as a new C-ordered array (rows: positions into x's first axis,
    negative ones from the end; IndexError outside it); read from the file for a read-only
    memmap of a whole .npy (module docstring)."""
    rows = np.asarray(rows, dtype=np.int64).reshape(-1)
    if not _whole_read_only_map(x) or len(rows) == 0:
        return np.ascontiguousarray(x[rows])
    n = x.shape[0]
    if rows.min() < -n or rows.max() >= n:
        raise IndexError(f"take_rows: rows must lie in [-{n}, {n}), got {rows.min()} .. {rows.max()}")
    rows = np.where(rows < 0, rows + n, rows)
    in_order = bool(np.all(rows[1:] > rows[:-1]))
    wanted, inverse = (rows, None) if in_order else np.unique(rows, return_inverse=True)
    out = np.empty((len(wanted), *x.shape[1:]), dtype=x.dtype)
    with open(x.filename, "rb", buffering=0) as fh:
        _read_runs(fh, int(x.offset), out, wanted)
    return out if inverse is None else out[inverse.reshape(-1)]


def _whole_read_only_map(x: np.ndarray) -> bool:
    """x is a C-ordered read-only memmap of a file from its first element (not a view into one),
    so that row r lies at x.offset + r · row bytes of x.filename."""
    return (
        isinstance(x, np.memmap) and x.mode == "r" and x.filename is not None and isinstance(x.base, mmap.mmap)
        and x.flags.c_contiguous and x.ndim >= 1
    )  # fmt: skip


def _read_runs(fh: BinaryIO, offset: int, out: np.ndarray, rows: np.ndarray) -> None:
    """Fills out[i] with row rows[i] of the file (rows ascending, distinct; a row's bytes at
    offset + row · out[0].nbytes), one read per run of consecutive rows."""
    row_bytes = out[0].nbytes if len(out) else 0
    buffer = memoryview(out.reshape(-1).view(np.uint8))
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    for start, stop in zip(np.r_[0, breaks].tolist(), np.r_[breaks, len(rows)].tolist()):
        fh.seek(offset + int(rows[start]) * row_bytes)
        target, done = buffer[start * row_bytes : stop * row_bytes], 0
        while done < len(target):
            got = fh.readinto(target[done:])
            if not got:
                raise OSError(f"take_rows: {fh.name!r} ended before row {int(rows[start]) + done // row_bytes}")
            done += got
