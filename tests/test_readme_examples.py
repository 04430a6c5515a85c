"""The README's Python examples run as written, in a fresh folder, and the simulated study can
be run a second time (it goes on from its last round instead of refusing an existing project)."""

from __future__ import annotations

import os
import re
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
