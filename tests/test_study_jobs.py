"""`activebayes study run --jobs N` (activebayes.study_jobs): the same results as --jobs 1,
resuming a killed parallel study, a failing run reported in one line, progress totals, and the
labels-to-reach table."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from activebayes import study_jobs
from activebayes.errors import DataError
from activebayes.study import StudyConfig, run_study
from activebayes.study import labels_to_reach, run_one
from activebayes.study_jobs import StudyRunsFailed, reach_table, run_study_jobs, worker_threads
from activebayes_cli.main import app

ROOT = Path(__file__).resolve().parents[1]
DIGITS_TOML = ROOT / "studies" / "gal2017" / "digits.toml"


def run(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def digits_variant(path: Path, *changes: tuple[str, str]) -> Path:
    """Writes the digits study at `path` with each (old line, new line) of `changes` replaced;
    each old line must be in the study (a renamed key fails here, not as a silently unchanged test)."""
    text = DIGITS_TOML.read_text()
    for old, new in changes:
        assert f"\n{old}\n" in text, old
        text = text.replace(f"\n{old}\n", f"\n{new}\n")
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    """The digits study with --jobs 1 (run_study), once for the module."""
    out = tmp_path_factory.mktemp("serial")
    run_study(StudyConfig.from_toml(DIGITS_TOML), out)
    return json.loads((out / "results.json").read_text())


@pytest.fixture(scope="module")
def slow(tmp_path_factory):
    """(config, its --jobs 1 results): the digits study training 300 epochs a round instead of
    200, so that a study stopped after its second round is still seconds short of its twelfth
    however slowly the machine polls; same rounds, same seeds."""
    folder = tmp_path_factory.mktemp("slow")
    config = digits_variant(folder / "digits-slow.toml", ("epochs = 200", "epochs = 300"))
    run_study(StudyConfig.from_toml(config), folder / "serial")
    return config, json.loads((folder / "serial" / "results.json").read_text())


def test_jobs_2_equals_jobs_1_and_progress_counts_every_round(tmp_path, serial):
    calls = []
    result = run_study_jobs(StudyConfig.from_toml(DIGITS_TOML), tmp_path, jobs=2, progress=lambda d, t, s: calls.append((d, t)))
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["curves"] == serial["curves"] and doc["runs"] == serial["runs"]
    assert result.rounds_run == 12
    assert {t for _, t in calls} == {12}  # 2 acquisitions x 2 repeats x 3 rounds
    assert calls[0][0] == 0 and calls[-1][0] == 12
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)
    # A finished study adds nothing, with --jobs too.
    assert run_study_jobs(StudyConfig.from_toml(DIGITS_TOML), tmp_path, jobs=2).rounds_run == 0


def test_cli_jobs_2(tmp_path, serial):
    out = tmp_path / "out"
    result = run("--json", "study", "run", str(DIGITS_TOML), "--out", str(out), "--jobs", "2")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["rounds_run"] == 12 and summary["curves"] == serial["curves"]


def _done_rounds(db: Path) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
            return conn.execute("SELECT count(*) FROM rounds WHERE status = 'done'").fetchone()[0]
    except sqlite3.Error:
        return 0


def test_killed_parallel_study_resumes(tmp_path, slow):
    config, serial = slow
    out = tmp_path / "out"
    cli = Path(sys.executable).parent / "activebayes"
    command = [str(cli), "--json", "study", "run", str(config), "--out", str(out), "--jobs", "2"]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while _done_rounds(out / "study.db") < 3 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the parent and its spawned workers, at once
        proc.wait()
    done = _done_rounds(out / "study.db")
    assert 3 <= done < 12, "the study was not killed midway; make it longer"
    assert not (out / "results.json").exists()
    resumed = run("--json", "study", "run", str(config), "--out", str(out), "--jobs", "2")
    assert resumed.exit_code == 0, resumed.output
    summary = json.loads(resumed.stdout)
    assert summary["curves"] == serial["curves"]
    assert json.loads((out / "results.json").read_text())["runs"] == serial["runs"]
    assert _done_rounds(out / "study.db") == 12


def test_ctrl_c_on_a_parallel_study_stops_every_process_in_one_line_and_resumes(tmp_path, slow):
    """Ctrl-C sends SIGINT to the whole process group: the parent stops its workers at once and
    says how to resume, with no worker tracebacks; the next run finishes the study."""
    config, serial = slow
    out = tmp_path / "out"
    cli = Path(sys.executable).parent / "activebayes"
    command = [str(cli), "study", "run", str(config), "--out", str(out), "--jobs", "2"]
    # SIGINT at its default in the child, as in a terminal: a suite started in the background by a
    # non-interactive shell ignores SIGINT, and a child would inherit that and never be interrupted
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while _done_rounds(out / "study.db") < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    assert stderr.strip().splitlines()[-1].startswith("interrupted: the finished rounds are kept in")
    assert "run the same command again to resume" in stderr
    assert _group_ends(proc.pid, within=10), "a worker outlived the interrupted study"
    assert _done_rounds(out / "study.db") < 12, "the study ended before the interrupt; make it longer"
    resumed = run("--json", "study", "run", str(config), "--out", str(out), "--jobs", "2")
    assert resumed.exit_code == 0, resumed.output
    assert json.loads((out / "results.json").read_text())["runs"] == serial["runs"]


def _group_ends(pgid: int, within: float) -> bool:
    """Whether every process of the group has exited within `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


# Per-run functions for the failure tests: module level, so spawned workers import them by name.
def fail_bald_r2_bug(config, out_dir, acquisition, repeat, *, device="auto", progress=None):
    if (acquisition, repeat) == ("bald", 1):
        raise RuntimeError("boom in the network")
    return run_one(config, out_dir, acquisition, repeat, device=device, progress=progress)


def fail_random_r1_mistake(config, out_dir, acquisition, repeat, *, device="auto", progress=None):
    if (acquisition, repeat) == ("random", 0):
        raise DataError("labels: item 7 has no label; fix the data")
    return run_one(config, out_dir, acquisition, repeat, device=device, progress=progress)


def test_a_failing_run_lets_the_others_finish_and_is_named_in_one_line(tmp_path, monkeypatch, serial):
    config = StudyConfig.from_toml(DIGITS_TOML)
    # the CLI's exit codes and lines do not depend on the training: its studies train 2 epochs a round
    short = str(digits_variant(tmp_path / "digits-short.toml", ("epochs = 200", "epochs = 2")))
    with pytest.raises(StudyRunsFailed) as caught:
        run_study_jobs(config, tmp_path / "a", jobs=2, run_one=fail_bald_r2_bug)
    exc = caught.value
    assert [f.run for f in exc.failures] == ["bald-r2"] and not exc.user_mistake
    assert "bald-r2" in str(exc) and "RuntimeError: boom in the network" in str(exc) and "\n" not in str(exc)
    log = tmp_path / "a" / study_jobs.ERROR_LOG
    assert exc.log == log and "Traceback" in log.read_text() and "boom in the network" in log.read_text()
    assert _done_rounds(tmp_path / "a" / "study.db") == 9  # the three other runs finished

    # Through the CLI: a bug is one line naming the run and the log, exit 1; a user's mistake exit 2.
    monkeypatch.setattr(study_jobs, "default_run_one", lambda: fail_bald_r2_bug)
    bug = CliRunner().invoke(app, ["study", "run", short, "--out", str(tmp_path / "b"), "--jobs", "2"])
    assert bug.exit_code == 1
    lines = [line for line in bug.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "bald-r2" in lines[0] and "boom in the network" in lines[0] and study_jobs.ERROR_LOG in lines[0]
    monkeypatch.setattr(study_jobs, "default_run_one", lambda: fail_random_r1_mistake)
    mistake = CliRunner().invoke(app, ["study", "run", short, "--out", str(tmp_path / "c"), "--jobs", "2"])
    assert mistake.exit_code == 2
    lines = [line for line in mistake.stderr.splitlines() if line.strip()]
    assert lines[-1].startswith("error: study run random-r1 failed: labels: item 7 has no label")
    assert not (tmp_path / "c" / study_jobs.ERROR_LOG).exists()

    # Rerunning without the fault resumes only the failed run and gives the serial results.
    monkeypatch.undo()
    again = run("--json", "study", "run", str(DIGITS_TOML), "--out", str(tmp_path / "a"), "--jobs", "2")
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["rounds_run"] == 3
    assert json.loads(again.stdout)["curves"] == serial["curves"]


def test_worker_threads_share_the_cores():
    assert worker_threads(2, cores=16) == 8 and worker_threads(15, cores=16) == 1 and worker_threads(4, cores=2) == 1


def test_reach_table_against_the_paper():
    curve = [(20, 0.5), (150, 0.91), (300, 0.95)]
    assert labels_to_reach(curve, 0.90) == 150 and labels_to_reach(curve, 0.95) == 300 and labels_to_reach(curve, 0.99) is None
    reach = {"bald": {"0.90": {"mean": 150, "per_seed": [140, 150, 170]}, "0.95": {"mean": 300, "per_seed": [300, None, 290]}},
             "random": {"0.90": {"mean": 150}, "0.95": {"mean": None}}}
    paper = {"labels_to_reach": {"bald": {"0.90": 145, "0.95": 335}, "random": {"0.90": 255, "0.95": 835}}}
    text = reach_table({"curves": {"bald": [], "random": []}, "labels_to_reach": reach, "paper": paper})
    # ours / paper: 150 / 145 = 1.03x, 300 / 335 = 0.90x, 150 / 255 = 0.59x
    assert "| bald | 150 (140, 150, 170) | 145 | 1.03x | 300 (300, —, 290) | 335 | 0.90x |" in text
    assert "| random | 150 | 255 | 0.59x | not reached | 835 |  |" in text
    assert text.rstrip().endswith("ours / paper from 0.59x to 1.03x; not reached: random at 95%.")
    # a study that quotes no paper (e.g. BatchBALD's) gets no paper columns
    alone = reach_table({"curves": {"bald": [], "random": []}, "labels_to_reach": reach})
    assert "paper" not in alone and "| bald | 150 (140, 150, 170) | 300 (300, —, 290) |" in alone
    assert "| random | 150 | not reached |" in alone


def test_run_gpu_script_end_to_end_on_the_cpu(tmp_path):
    """studies/gal2017/run-gpu.sh, the one command of the GPU check, run as written with DEVICE=cpu
    on a two-run digits study: its job count from the config's runs and the cores (no GPU
    memory cap on the CPU), the study, then table1.md."""
    script = ROOT / "studies" / "gal2017" / "run-gpu.sh"
    default = script.read_text().split('config="${CONFIG:-$here/', 1)[1].split("}", 1)[0]
    assert (script.parent / default).is_file(), default  # the full table's config
    # two runs (20 and 30 labels) trained 2 epochs a round: the script's steps, not the accuracy, are checked
    config = digits_variant(tmp_path / "two-runs.toml", ("repeats = 2", "repeats = 1"), ("max_labels = 40", "max_labels = 30"),
                            ("epochs = 200", "epochs = 2"))  # fmt: skip
    out = tmp_path / "out"
    env = {**os.environ, "DEVICE": "cpu", "CONFIG": str(config), "PYTHON": sys.executable}
    done = subprocess.run(["bash", str(script), str(out)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    jobs = min(2, len(os.sched_getaffinity(0)))  # bald and random, one repeat each
    assert f"two-runs.toml: --device cpu --jobs {jobs} --out {out}" in done.stderr
    runs = json.loads((out / "results.json").read_text())["runs"]
    assert {name: [labels for labels, _ in curves[0]] for name, curves in runs.items()} == {"bald": [20, 30], "random": [20, 30]}
    table = (out / "table1.md").read_text()
    assert table.startswith("| acquisition | 10% error | 5% error |\n") and "| bald | " in table and "| random | " in table


def test_reach_table_of_the_committed_gal_run():
    """The H200 run's results.json gives the table README_EXPERIMENTS quotes (BALD 300 / 480)."""
    document = json.loads((ROOT / "studies" / "gal2017" / "mnist-h200" / "results.json").read_text())
    text = reach_table(document)
    assert "| bald | 300 (290, 320, 320) | 145 | 2.07x | 480 (440, 500, 440) | 335 | 1.43x |" in text
    assert "ours / paper from 0.66x to 2.08x." in text


@pytest.mark.parametrize(
    ("options", "words"),
    [
        (["--engine", "ray", "--address", "auto"], ["SQLite", "cannot share", "postgresql://"]),
        (["--engine", "mpi"], ["--engine", "'mpi' is not one of 'local', 'ray'"]),
        (["--address", "auto"], ["address", "needs engine='ray'"]),
    ],
)
def test_cli_engine_mistakes_exit_2_before_anything_is_written(tmp_path, options, words):
    """A study's database is a SQLite file in --out: a Ray cluster cannot share it."""
    from cli_checks import assert_mistake

    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["study", "run", str(DIGITS_TOML), "--out", str(out), *options])
    assert_mistake(result, *words)
    assert not out.exists()
