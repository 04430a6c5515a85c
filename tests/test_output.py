"""The CLI's output helpers (cli/_output.py): --json writes strict JSON, and text is printed as
written (no rich markup read in it)."""

from __future__ import annotations

import json
import math

from activebayes_cli._output import Output, strict_json


def test_json_results_are_strict_json(capsys):
    """An interval's open end (inf) or a NaN figure is null: `json.loads` of Python reads
    `Infinity`, but a strict parser (JavaScript's JSON.parse, jq) refuses it."""
    data = {"nll": [1.5, 0.2, math.inf], "rmse": (math.nan, -math.inf), "n": 3, "rows": [{"x": 1.0}], "name": "inf"}
    assert strict_json(data) == {"nll": [1.5, 0.2, None], "rmse": [None, None], "n": 3, "rows": [{"x": 1.0}], "name": "inf"}
    Output(json=True).result(data)
    written = capsys.readouterr().out
    assert "Infinity" not in written and "NaN" not in written
    assert json.loads(written, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))["nll"] == [1.5, 0.2, None]


def test_text_is_printed_as_written(capsys):
    out = Output()
    out.note("class B[/x] and [bold]not bold[/bold]")
    out.result({}, lambda c: c.print("cell [urgent]"))
    assert capsys.readouterr().out.splitlines() == ["class B[/x] and [bold]not bold[/bold]", "cell [urgent]"]


def test_progress_leaves_nothing_on_a_piped_stderr(capsys):
    """Piped or redirected, a bar would show nothing and leave a blank line on stderr."""
    out = Output()
    with out.progress("fitting", total=3) as advance:
        advance(3)
    assert out.bar() is None
    assert capsys.readouterr().err == ""


def test_progress_is_drawn_on_a_terminal():
    import io

    from rich.console import Console

    drawn = io.StringIO()
    out = Output(_stderr=Console(file=drawn, force_terminal=True, width=80))
    with out.progress("fitting", total=3) as advance:
        advance(3)
    assert "fitting" in drawn.getvalue()


def test_a_note_under_json_is_one_line_on_stderr(capsys):
    note = ("a note of many words " * 10).strip()  # 209 characters
    Output(json=True).note(note)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == note + "\n"


def test_a_titled_table_keeps_its_title_on_one_line():
    """rich wraps a title to its table's width; a narrow table under a long title keeps it whole
    (up to the console's width)."""
    import io

    from rich.console import Console

    from activebayes_cli._output import curves_table

    title = "digits-tiny: test accuracy against labels (mc-dropout, 2 repeats)"
    console = Console(file=io.StringIO(), width=80, record=True)
    console.print(curves_table(title, {"bald": [{"labels": 20, "mean": 0.5, "sd": 0.0, "n": 1}]}, 1))
    lines = console.export_text().splitlines()
    assert lines[0].strip() == title and max(len(line) for line in lines) <= 80


def test_wrapped_lines_carry_no_trailing_blanks(capsys, monkeypatch):
    """rich keeps the blank where it wraps a line; piped into a file or a diff it is junk."""
    monkeypatch.setenv("COLUMNS", "40")
    out = Output()
    out.note("Next: activebayes round (you label what it asks), or activebayes round --oracle truth")
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 1 and all(line == line.rstrip() for line in lines), lines
    assert " ".join(lines) == "Next: activebayes round (you label what it asks), or activebayes round --oracle truth"
