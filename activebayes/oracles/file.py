"""`FileOracle`: a human's answers from a `key,label` CSV file."""

from __future__ import annotations

import csv
from collections.abc import Container, Sequence
from pathlib import Path
from typing import Any

from activebayes.errors import DataError
from activebayes.oracles.base import Answer


class FileOracle:
    """Answers read from a CSV of `key,label` rows (a `key,label` header line is optional).

    The whole file is read and EVERY row validated on construction, before anything can be
    recorded: malformed rows (wrong number of fields, empty key), a key given two different
    labels, a label not among `classes`, a key not in `keys`. Each error is a DataError naming
    the file and line. Repeated rows with the same label are kept once. A row whose label is
    empty is a question not answered yet (a partly filled `round-N.csv`): it is skipped.

    Args:
        path: the CSV file.
        classes: allowed labels (compared as text), or None for any.
        keys: the known item keys (any container, e.g. a set), or None to skip that check.
    """

    stop_requested = False

    def __init__(self, path: str | Path, *, classes: Sequence[Any] | None = None, keys: Container[str] | None = None) -> None:
        self.path = Path(path)
        self.classes = [str(c) for c in classes] if classes is not None else None
        self.labels: dict[str, str] = self._read(keys)

    def _read(self, known: Container[str] | None) -> dict[str, str]:
        if not self.path.is_file():
            raise DataError(f"labels file {str(self.path)!r} does not exist")
        where: dict[str, int] = {}
        labels: dict[str, str] = {}
        allowed = set(self.classes) if self.classes is not None else None
        with self.path.open(newline="", encoding="utf-8") as fh:
            for line_no, row in enumerate(csv.reader(fh), start=1):
                if not row or all(not f.strip() for f in row):
                    continue
                fields = [f.strip() for f in row]
                if line_no == 1 and [f.lower() for f in fields] == ["key", "label"]:
                    continue
                at = f"{str(self.path)!r} line {line_no}"
                if len(fields) != 2:
                    raise DataError(f"{at}: expected 2 fields 'key,label', got {len(fields)}: {','.join(row)!r}")
                key, label = fields
                if not key:
                    raise DataError(f"{at}: expected a key before the label, got {','.join(row)!r}")
                if not label:
                    continue  # not answered yet
                if allowed is not None and label not in allowed:
                    raise DataError(f"{at}: label {label!r} is not one of the classes {sorted(allowed)}")
                if known is not None and key not in known:
                    raise DataError(f"{at}: key {key!r} is not an item of this project")
                if key in labels and labels[key] != label:
                    raise DataError(
                        f"{at}: key {key!r} has label {label!r} but line {where[key]} gave {labels[key]!r}"
                    )
                labels.setdefault(key, label)
                where.setdefault(key, line_no)
        return labels

    def answers(self) -> list[Answer]:
        """Every answer in the file, in file order."""
        return [Answer(k, v) for k, v in self.labels.items()]

    def ask(self, keys: Sequence[str], candidates: Any = None) -> list[Answer]:
        """The file's answer for each key; None (skipped) for keys the file does not answer."""
        return [Answer(str(k), self.labels.get(str(k))) for k in keys]
