"""Keeping freed memory in a study worker (glibc's malloc on Linux).

A study worker trains and evaluates a network round after round, and each optimiser step or
batch allocates and frees the same activation buffers (Gal et al.'s CNN: 10 MB for a step on 128
images, 80 MB for the first convolution's output on 1,024 test images). By default glibc gives
blocks over its mmap threshold (adaptive, at most 32 MB) their own mapping and returns the free
top of the heap to the kernel once it passes the trim threshold, so the same pages are mapped
and faulted in again at every step: a minor fault and a zeroed 4 KiB page each. Raising both
thresholds keeps freed blocks in the process for the next step. The process then holds its peak
memory until it ends, which suits a process that runs one study's rounds and exits: the study
workers and `activebayes study run --jobs 1`. The CLI's other commands and library callers keep
glibc's defaults.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

#: mallopt parameters (glibc's malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: Blocks up to this size come from the heap and stay there when freed.
KEEP_BYTES = 1 << 30


def keep_freed_memory(limit: int = KEEP_BYTES) -> bool:
    """Sets glibc's mmap and trim thresholds to `limit` bytes in this process; True when glibc
    took both, False elsewhere (another C library or platform: nothing changes)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, limit)) and bool(mallopt(M_TRIM_THRESHOLD, limit))


__all__ = ["KEEP_BYTES", "keep_freed_memory"]
