"""The digit lists shown to a person in a memory-span session (`activebayes.design.digit_lists`):
no digit twice before all ten are shown, none after itself, one list per (seed, participant,
trial), so a resumed session shows what one straight run would, and each participant their own."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from activebayes.design.digit_lists import digit_list
from activebayes_cli.main import app


@pytest.mark.parametrize("length", [1, 3, 7, 10, 11, 15, 23, 40])
def test_no_repeat_before_all_ten_and_none_after_itself(length):
    for trial in range(50):
        digits = digit_list(0, "p1", trial, length)
        assert len(digits) == length and all(0 <= d <= 9 for d in digits)
        for start in range(0, length, 10):  # each block of ten: ten different digits (the last one cut)
            block = digits[start:start + 10]
            assert len(set(block)) == len(block)
        assert all(a != b for a, b in zip(digits, digits[1:]))


def test_one_list_per_seed_participant_and_trial():
    assert digit_list(3, "ann", 4, 9) == digit_list(3, "ann", 4, 9)
    lists = {tuple(digit_list(seed, who, trial, 9)) for seed in (0, 1) for who in ("ann", "bob") for trial in range(5)}
    assert len(lists) == 20  # 10!/1! orderings: a collision among 20 would be a broken seed
    assert digit_list(0, "ann", 0, 0) == []
    with pytest.raises(ValueError, match="length"):
        digit_list(0, "ann", 0, -1)


def _shown(stdout: str) -> list[str]:
    return re.findall(r"digits: ([\d ]+)", stdout)


def test_a_resumed_session_shows_the_lists_of_one_straight_run(tmp_path):
    runner = CliRunner()

    def session(db: str, who: str, trials: int, answers: str) -> list[str]:
        result = runner.invoke(app, ["--db", db, "design", "memory-span", "--participant", who, "--trials", str(trials)], input=answers)
        assert result.exit_code == 0, result.output
        return _shown(result.stdout)

    straight = session(f"sqlite:///{tmp_path / 'a.db'}", "ann", 5, "y\nn\ny\nn\nn\n")
    split_db = f"sqlite:///{tmp_path / 'b.db'}"
    resumed = session(split_db, "ann", 3, "y\nn\ny\n") + session(split_db, "ann", 2, "n\nn\n")
    assert len(straight) == 5 and resumed == straight
    other = session(split_db, "bob", 1, "y\n")
    assert other[0] != straight[0]  # both start at the prior mean's length, with lists of their own
    assert len(other[0].split()) == len(straight[0].split())
