"""Parsing and checking of command-line values; each failure is a CliError (one line, exit 2)."""

from __future__ import annotations

import re
from pathlib import Path

from activebayes_cli._app import CliError


def parse_classes(text: str) -> list[str]:
    """`--classes`: "N" -> ["0", …, "N-1"]; "a,b,c" -> ["a", "b", "c"] (distinct, at least two)."""
    text = text.strip()
    if text.isdigit():
        n = int(text)
        if n < 2:
            raise CliError(f"--classes: expected at least 2 classes, got {n}", "pass e.g. --classes 10 or --classes cat,dog")
        return [str(i) for i in range(n)]
    names = [part.strip() for part in text.split(",")]
    if len(names) < 2 or any(not name for name in names):
        raise CliError(
            f"--classes: expected a count or a comma-separated list of at least 2 names, got {text!r}",
            "pass e.g. --classes 10 or --classes cat,dog",
        )
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise CliError(f"--classes: {', '.join(duplicates)} given more than once", "list each class once")
    return names


def existing_file(path: Path, option: str) -> Path:
    """A file that must exist and be readable."""
    if not path.exists():
        raise CliError(f"{option}: no file at {path}", "check the path")
    if not path.is_file():
        raise CliError(f"{option}: {path} is not a file", "pass a file, not a folder")
    return path


def writable_target(path: Path, option: str, suffixes: tuple[str, ...]) -> str:
    """An output file whose folder exists and whose suffix is one of `suffixes`; returns the format."""
    suffix = path.suffix.lower()
    if suffix not in suffixes:
        raise CliError(
            f"{option}: unknown file type {suffix or '(none)'!r} for {path}",
            f"use a name ending in {' or '.join(suffixes)}",
        )
    if not path.parent.exists():
        raise CliError(f"{option}: the folder {path.parent} does not exist", "create it first or choose another path")
    return suffix.lstrip(".")


def new_file(path: Path, what: str, instead: str, force: bool) -> None:
    """Refuse, before anything is written, to replace the existing file `path` (`what`: "the
    export file") unless `force` (--force): a command never silently destroys a file, which may
    hold people's labels. `instead` names another target ("file name", "--config FILE"). A
    folder at `path` is refused with or without --force."""
    if path.is_dir():
        raise CliError(f"{what} {path} is a folder", f"give a file name, or choose another {instead}")
    if path.exists() and not force:
        raise CliError(f"{what} {path} already exists", f"move it away, choose another {instead}, or pass --force to overwrite it")


def fraction(value: float, option: str) -> float:
    if not 0.0 <= value < 1.0:
        raise CliError(f"{option}: expected a fraction in [0, 1), got {value}", f"pass e.g. {option} 0.2")
    return value


_COLUMN_PARAMETERS = re.compile(r"\b(label_column|key_column|features|ignore|text_column) (?=['\"].*? is not a column)")


def column_options(message: str) -> str:
    """A library refusal of a column named by the option that gave it: "label_column 'lable' is
    not a column" -> "--label-column 'lable' is not a column" (the library names its parameter)."""
    return _COLUMN_PARAMETERS.sub(lambda m: f"--{m[1].replace('_', '-')} ", message)
