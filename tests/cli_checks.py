"""Assertions shared by the CLI tests."""

from __future__ import annotations


def assert_mistake(result, *words: str) -> None:
    """A user mistake: exit code 2, exactly one 'error: ...; fix' line on stderr, no traceback,
    naming every one of `words`."""
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and "; " in lines[0], lines[0]
    assert "Traceback" not in result.output
    for word in words:
        assert word in lines[0], (word, lines[0])
