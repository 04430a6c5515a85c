"""`activebayes design memory-span` through typer's CliRunner."""

from __future__ import annotations

import json

from rich.console import Console
from typer.testing import CliRunner

from activebayes_cli._memory_span import memory_span_demo
from activebayes_cli.main import app

runner = CliRunner()


def test_simulated_json_session_is_reproducible_and_well_formed():
    args = ["design", "memory-span", "--simulate-span", "6.5", "--trials", "12", "--seed", "3", "--json"]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    out = json.loads(first.stdout)
    assert len(out["trials"]) == 12
    assert set(out["trials"][0]) == {"trial", "design", "outcome", "eig"} and out["trials"][-1]["trial"] == 12
    assert out["db"] is None and out["earlier_trials"] == 0  # a simulation without any --db records nothing
    assert out["trials"][0]["design"] == 7.0 and abs(out["trials"][0]["eig"] - 0.2311) < 1e-3
    assert all(t["outcome"] in (0, 1) and 1 <= t["design"] <= 15 for t in out["trials"])
    post = out["posterior"]
    assert post["interval"][0] < post["mean"] < post["interval"][1] and 0 < post["sd"] < 2
    assert json.loads(runner.invoke(app, args).stdout) == out


def test_target_sd_stops_early_and_text_output():
    result = runner.invoke(app, ["design", "memory-span", "--simulate-span", "8", "--trials", "60", "--target-sd", "0.8"])
    assert result.exit_code == 0, result.output
    assert "span estimate" in result.stdout and "trial  60" not in result.stdout


def test_bad_arguments_print_one_line_and_exit_2(tmp_path):
    for args in (
        ["--trials", "0"],
        ["--trials", "many"],
        ["--max-digits", "1"],
        ["--target-sd", "-1"],
        ["--simulate-span", "nan"],
        ["--plot", str(tmp_path / "missing" / "x.png")],
    ):
        result = runner.invoke(app, ["design", "memory-span", *args])
        assert result.exit_code == 2, (args, result.output)
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("error:"), (args, result.stderr)


def test_interactive_session_records_and_resumes(tmp_path):
    db = f"sqlite:///{tmp_path / 'span.db'}"
    first = runner.invoke(app, ["--db", db, "design", "memory-span", "--participant", "ann", "--trials", "3"], input="y\nmaybe\nn\ny\n")
    assert first.exit_code == 0, first.output
    assert first.stdout.count("digits:") == 3 and "please answer y or n" in first.stdout
    assert "Show 7 digits" in first.stdout  # the first list is the prior mean
    second = runner.invoke(
        app, ["design", "memory-span", "--db", db, "--participant", "ann", "--trials", "2", "--json"], input="n\nn\n"
    )
    assert second.exit_code == 0, second.output
    assert "resumed 'ann': 3 earlier trials" in second.stderr
    from activebayes.design.record import DesignRecord
    from activebayes.store import PoolStore

    import torch

    record = DesignRecord(PoolStore(db), torch.arange(1.0, 16.0), participant="ann")
    trials = record.trials()
    assert [t["trial"] for t in trials] == [0, 1, 2, 3, 4]
    assert [t["outcome"] for t in trials] == [1, 0, 1, 0, 0]


def test_trial_lines_fit_an_80_column_terminal():
    """Each trial's line fits 80 columns (a terminal would break it) up to trial 999, a list of 15
    digits and a span under 10; the estimate's lines too."""
    from types import SimpleNamespace

    from activebayes_cli._memory_span import trial_line

    worst = SimpleNamespace(index=998, design=15.0, outcome=0, eig=0.231, mean=9.99, sd=1.59, interval=(7.09, 9.99))
    assert len(trial_line(worst)) <= 80, trial_line(worst)
    assert trial_line(worst).startswith("trial 999: 15 digits, not recalled EIG 0.231  span 9.99 ± 1.59, 90% [7.09, 9.99]")
    result = runner.invoke(app, ["design", "memory-span", "--simulate-span", "6.5", "--trials", "12"])
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.stdout.splitlines()) <= 80, result.stdout


def test_plot_and_demo(tmp_path):
    from cli_checks import assert_mistake

    path = tmp_path / "span.png"
    result = runner.invoke(app, ["design", "memory-span", "--simulate-span", "5", "--trials", "6", "--plot", str(path)])
    assert result.exit_code == 0, result.output
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    mine = path.read_bytes()
    again = ["design", "memory-span", "--simulate-span", "5", "--trials", "2", "--plot", str(path)]
    assert_mistake(runner.invoke(app, again), "the plot", "already exists", "pass --force to overwrite it")
    assert path.read_bytes() == mine
    assert runner.invoke(app, [*again, "--force"]).exit_code == 0
    assert_mistake(runner.invoke(app, again[:-2] + ["--force"]), "--force: only applies with --plot")
    console = Console(record=True, width=120)
    trace = memory_span_demo(console, seed=1, trials=5)
    assert len(trace.trials) == 5 and "span estimate" in console.export_text()


def test_a_person_needs_a_participant_id_and_a_lookalike_id_is_refused(tmp_path):
    from cli_checks import assert_mistake, db_dump

    db = f"sqlite:///{tmp_path / 'span.db'}"
    person = ["--db", db, "design", "memory-span", "--trials", "1"]
    assert_mistake(runner.invoke(app, person, input="y\n"), "--participant", "resume the last one's trials")
    for empty in ("", "   "):
        assert_mistake(runner.invoke(app, [*person, "--participant", empty], input="y\n"), "--participant", "empty")
    assert db_dump(db) is None  # nothing written: no database made

    first = runner.invoke(app, [*person, "--participant", "ann"], input="y\n")
    assert first.exit_code == 0 and "new participant 'ann'" in first.stdout, first.output
    before = db_dump(db)
    for lookalike in ("Ann", "a nn"):
        assert_mistake(runner.invoke(app, [*person, "--participant", lookalike], input="y\n"), repr(lookalike), "'ann' has 1", "--participant 'ann'")
    assert db_dump(db) == before
    again = runner.invoke(app, [*person, "--participant", " ann "], input="n\n")  # spaces around an id are no part of it
    assert again.exit_code == 0 and "resumed 'ann': 1 earlier trials" in again.stdout, again.output
    other = runner.invoke(app, [*person, "--participant", "bob"], input="n\n")
    assert "new participant 'bob' (1 participant recorded before)" in other.stdout, other.output


def test_a_second_session_of_one_participant_stops_the_first_without_recording_its_trial(tmp_path, interleaved_input):
    import torch

    from activebayes.design import Trial
    from activebayes.design.record import DesignRecord
    from activebayes.store import PoolStore
    from cli_checks import InterleavedInput, assert_mistake

    db = f"sqlite:///{tmp_path / 'span.db'}"
    ann = ["--db", db, "design", "memory-span", "--participant", "ann", "--trials", "3"]
    assert runner.invoke(app, ann, input="y\n").exit_code == 0  # ann's trial 1

    def other_session() -> None:  # a second terminal resumed 'ann' too and recorded her trial 2 first
        with PoolStore(db) as store:
            DesignRecord(store, torch.arange(1.0, 16.0), participant="ann").add(Trial(0, 8.0, 0, 0.17, 7.4, 1.4, (5.1, 9.6)), offset=1)

    result = runner.invoke(app, ann, input=InterleavedInput("y\ny\n", other_session))
    assert_mistake(result, "'ann' has 2 recorded trials where this session expected 1", "(digits=", "is not recorded", "--participant ann")
    with PoolStore(db) as store:
        trials = DesignRecord(store, torch.arange(1.0, 16.0), participant="ann").trials()
    assert [(t["trial"], t["outcome"]) for t in trials] == [(0, 1), (1, 0)]  # the other session's trial 2, not this one's


def test_q_stops_a_person_s_session_with_the_answered_trials_recorded(tmp_path):
    db = f"sqlite:///{tmp_path / 'span.db'}"
    result = runner.invoke(app, ["--db", db, "design", "memory-span", "--participant", "ann", "--trials", "5"], input="n\nq\n")
    assert result.exit_code == 0, result.output
    assert "stopped before this list was answered" in result.stdout and "span estimate after 1 trial:" in result.stdout


def test_learn_slope_must_match_the_project_s_model(tmp_path):
    from cli_checks import assert_mistake, db_dump

    db = f"sqlite:///{tmp_path / 'span.db'}"
    ann = ["--db", db, "design", "memory-span", "--participant", "ann", "--trials", "1"]
    assert runner.invoke(app, ann, input="y\n").exit_code == 0
    before = db_dump(db)
    assert_mistake(runner.invoke(app, [*ann, "--learn-slope"], input="y\n"), "--learn-slope", "set up without it", "leave out --learn-slope")
    assert_mistake(runner.invoke(app, [*ann, "--participant", "bob", "--learn-slope"], input="y\n"), "set up without it")
    assert db_dump(db) == before
    slope = ["--db", db, "--project", "span-slope", "design", "memory-span", "--participant", "ann", "--trials", "1", "--learn-slope"]
    assert runner.invoke(app, slope, input="y\n").exit_code == 0  # a project of its own
    assert_mistake(runner.invoke(app, slope[:-1], input="y\n"), "set up with it", "pass --learn-slope")


def test_ctrl_c_exits_130_in_one_line_with_the_answered_trials_recorded(tmp_path):
    """Ctrl-C at the prompt: one line saying what is kept and how to resume, exit 130 (as
    `label`), the trial answered before it recorded and no summary or plot written."""
    from activebayes.store import PoolStore
    from test_cli_interactive import pexpect, spawn

    db = f"sqlite:///{tmp_path / 'span.db'}"
    plot = tmp_path / "span.png"
    child = spawn(tmp_path, db, "--participant", "ann", "--trials", "5", "--plot", str(plot), command=("design", "memory-span"))
    try:
        child.expect(r"recalled\? \[y/n, q stops\]: ")
        child.sendline("y")
        child.expect(r"recalled\? \[y/n, q stops\]: ")
        child.sendcontrol("c")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 130, (child.exitstatus, child.signalstatus, child.before)
    assert "interrupted: 1 trial of 'ann' recorded; `activebayes design memory-span --participant ann` resumes" in child.before
    assert "Traceback" not in child.before and "span estimate" not in child.before and not plot.exists()
    with PoolStore(db) as store:
        assert [o["who"] for o in store.observations("memory-span")] == ["ann"]
