"""The README's Python examples run as written, in a fresh folder, and the simulated study can
be run a second time (it goes on from its last round instead of refusing an existing project).
The command-line quick start names commands and options that exist, and its iris.csv is written
and added as it says."""

from __future__ import annotations

import functools
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    """The Python blocks of "Quick start in Python" (later blocks are fragments, e.g. for a Ray cluster)."""
    text = README.read_text(encoding="utf-8")
    start = text.index("## Quick start in Python")
    section = text[start : text.index("\n## ", start + 1)]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def run_block(code: str, folder: Path) -> str:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", code], cwd=folder, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_readme_has_its_three_examples():
    blocks = python_blocks()
    assert len(blocks) == 3 and "bald(Predictive(probs))" in blocks[0] and "ActiveLearningLoop" in blocks[1]
    assert "run_design_session" in blocks[2]


@pytest.mark.parametrize("index", [0, 2])
def test_a_readme_example_runs_as_written(tmp_path, index):
    assert run_block(python_blocks()[index], tmp_path).strip()


def test_the_readme_study_runs_and_runs_again(tmp_path):
    """Rounds 1-4, then 5-8 from the same study.db; the printed numbers are round numbers and
    label counts (accuracy is a training outcome, only checked to be a probability)."""
    code = python_blocks()[1]
    first = [line.split() for line in run_block(code, tmp_path).splitlines()]
    again = [line.split() for line in run_block(code, tmp_path).splitlines()]
    assert [row[0] for row in first] == ["1", "2", "3", "4"] and [row[0] for row in again] == ["5", "6", "7", "8"]
    assert [int(row[1]) for row in first + again] == [0, 20, 40, 60, 80, 100, 120, 140]
    assert all(row[2] == "None" or 0 <= float(row[2]) <= 1 for row in first + again)


def cli_quick_start() -> list[str]:
    """The indented lines of "Quick start on the command line", up to its "Global options"."""
    text = README.read_text(encoding="utf-8")
    start = text.index("## Quick start on the command line")
    section = text[start : text.index("Global options:", start)]
    return [line.strip() for line in section.splitlines() if line.startswith("    ")]


@functools.cache
def root_command() -> object:
    """The CLI's click command tree, built once (building it takes about 0.1 s)."""
    import typer

    from activebayes_cli.main import app

    return typer.main.get_command(app)


def resolve(words: list[str]) -> tuple[object, list[str]]:
    """The command that `words` (after `activebayes`) call, and the options given to it that
    neither it nor the root takes (an option's `=value` aside)."""
    root = root_command()
    root_options = {opt for p in root.params for opt in p.opts}
    command, unknown = root, []
    for word in words:
        sub = getattr(command, "commands", {}).get(word)
        if sub is not None:
            command = sub
        elif word.startswith("--"):
            taken = {opt for p in command.params for opt in (*p.opts, *p.secondary_opts)} | {"--help"} | root_options
            unknown += [] if word.split("=")[0] in taken else [word]
    return (None if command is root else command), unknown


def test_the_cli_quick_start_names_commands_and_options_that_exist():
    """Every `activebayes ...` line of the quick start calls a command that exists, with options
    that command (or the root, before it) takes."""
    lines = [line.split(" # ")[0] for line in cli_quick_start() if line.startswith("activebayes ")]
    assert len(lines) >= 10
    for line in lines:
        command, unknown = resolve(shlex.split(line)[1:])
        assert command is not None and not unknown, (line, unknown)


def test_every_command_the_readme_names_takes_the_options_it_gives():
    """Every command in backquotes or on an indented line of the README (`round --oracle truth`,
    `activebayes pool add FILE --append`) gives only options that command takes."""
    text = README.read_text(encoding="utf-8")
    spans = re.findall(r"`([^`\n]+)`", text) + re.findall(r"^    (activebayes .*)$", text, flags=re.M)
    checked, wrong = 0, []
    for span in spans:
        try:
            words = shlex.split(span.split(" # ")[0])
        except ValueError:  # a fragment with a lone quote
            continue
        words = words[1:] if words[:1] == ["activebayes"] else words
        while words[:1] and words[0] in ("--db", "--project", "--json", "-q", "--quiet"):
            words = words[2 if words[0] in ("--db", "--project") else 1 :]
        command, unknown = resolve(words[:1]) if words else (None, [])
        if command is None:  # no command named first: prose, a Python call
            continue
        checked += 1
        wrong += [(span, word) for word in resolve(words)[1]]
    assert checked >= 100 and not wrong, wrong


def test_the_cli_quick_start_writes_its_table_and_adds_it(tmp_path, monkeypatch):
    """The line that writes iris.csv runs as written, and `init` and `pool add` take it."""
    from cli_checks import ok

    writer = shlex.split(next(line for line in cli_quick_start() if line.startswith("python -c ")))
    assert writer[:2] == ["python", "-c"] and len(writer) == 3, writer
    done = subprocess.run([sys.executable, "-c", writer[2]], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    monkeypatch.chdir(tmp_path)
    for name in ("ACTIVEBAYES_DB", "ACTIVEBAYES_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    init, add = (line.split(" # ")[0] for line in cli_quick_start() if line.startswith(("activebayes init", "activebayes pool add")))
    ok(*shlex.split(init)[1:])
    added = " ".join(ok(*shlex.split(add)[1:]).stdout.split())
    assert "classes read from the labels: setosa, versicolor, virginica" in added and "Added 120 pool items and 30 test items" in added

