"""Files written whole or not at all.

`atomic_write(path)` opens a temporary file beside `path` (`.<name>.<pid>.partial`, in the same
folder so that the rename stays on one file system), hands it to the caller, and when the block
ends without an error flushes it, syncs it to disk and renames it over `path` (`os.replace`,
atomic on POSIX and Windows). A write that raises, or a process killed midway, leaves `path` as it
was (the old file, or none) and the temporary file removed (a kill: left under its hidden
`.partial` name, never under `path`).

    with atomic_write(path, encoding="utf-8") as fh:
        fh.write(text)
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


@contextmanager
def atomic_write(path: str | Path, mode: str = "w", *, encoding: str | None = None, newline: str | None = None) -> Iterator[IO[Any]]:
    """A file object (`mode` "w" for text, "wb" for bytes) whose contents replace `path` when the
    block ends without an error; on an error `path` is untouched and the temporary file removed."""
    if mode not in ("w", "wb"):
        raise ValueError(f"mode: expected 'w' or 'wb', got {mode!r}")
    path = Path(path)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        with partial.open(mode, encoding=encoding, newline=newline) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def write_text_atomic(path: str | Path, text: str, encoding: str = "utf-8") -> Path:
    """Write `text` to `path` through `atomic_write`; returns the path."""
    with atomic_write(path, encoding=encoding) as fh:
        fh.write(text)
    return Path(path)


def write_json_atomic(path: str | Path, document: Any) -> Path:
    """Write `document` as indented JSON and a newline to `path` through `atomic_write`, streamed
    (`json.dump`: no second copy of a large document as one string); returns the path."""
    with atomic_write(path, encoding="utf-8") as fh:
        json.dump(document, fh, indent=2)
        fh.write("\n")
    return Path(path)
