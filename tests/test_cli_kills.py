"""SIGKILL real `activebayes` processes at seeded random instants, on SQLite and PostgreSQL, and
check after every kill that the next command carries on from what the killed one left.

One labelling campaign per database (project 'blobs': a csv pool whose labels are held back as
the truth, rounds of K queries answered from it) is driven by three kinds of victim, in turn:

* `activebayes round` (human oracle: fit, score, record the queries, write the round file);
* `activebayes label --from FILE` (the truth for the waiting round's open queries);
* the terminal prompt `activebayes label` in a pseudo-terminal, answers typed one by one.

`round` and `label --from` run in processes that did Python's heavy imports before they are given
their command (a spare is started while the previous victim runs), so the kill instant, drawn
uniformly over the command's own run time, falls in its start-up (database, schema, project,
round lock), its fit, its writes and its output rather than in `import torch`. The prompt is the
console script itself, killed during its start-up or after its n-th typed answer.
ACTIVEBAYES_TEST_KILLS (default 10) processes are killed per database, the victims taking turns;
the instants come from a random.Random seeded by ACTIVEBAYES_TEST_SEED (default 0).

After each kill:
(a) the next command exits 0: `round` again (or, when the killed round got as far as writing its
    round file, `label --from` that file), `label --from` the same file again, the prompt again;
(b) the database is sound: SQLite's integrity and foreign-key checks pass; every query and every
    answer belongs to an existing round; rounds are numbered 1..n and only the latest may be
    unfinished; an unfinished round is resumed, under its number, by the next `round`, which
    releases the round lock; a waiting round's file lists every open query;
(c) the labels are the answers acknowledged before the kill, none lost and none doubled: a file is
    recorded whole or not at all and, after the rerun, each of its rows exactly once; each answer
    the prompt acknowledged (it went on to the next item, or to its summary) is recorded exactly
    once with the typed value, the one typed but not acknowledged at most once; `round` records
    no answer at all.
"""

from __future__ import annotations

import csv
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from activebayes.store import PoolStore, RoundStatus, RoundStep
from cli_checks import ok, run
from test_cli import write_pool_csv
from test_cli_interactive import PROMPT, pexpect, spawn

KILLS = int(os.environ.get("ACTIVEBAYES_TEST_KILLS", "10"))  # per database


def attempts(kills: int) -> int:
    """Victims run to reach `kills` kills: one that finishes before its kill instant counts none."""
    return 3 * kills + 10


K = 5  # queries per round
ROUND = ("round", "--epochs", "2", "--samples", "2", "--device", "cpu", "--k", str(K))
WORK_S = {"round": 1.2, "label --from": 0.5}  # about how long each command runs once imported (2 busy cores)
PROMPT_START_S = 4.0  # the console script's start-up, up to its first item and a little beyond
ANSWER_S = 0.1  # from an answer typed to the next item shown, and a little beyond

# A process that imports what a command needs, says "ready", then reads [cwd, argv] and runs it;
# it leaves without the interpreter's teardown (seconds once torch._dynamo is loaded), which
# comes after the command has closed its database.
WARM = """\
import json, os, sys
import sqlalchemy, torch, torch._dynamo  # torch.optim imports torch._dynamo on first use
import activebayes.data, activebayes.loop, activebayes.oracles, activebayes.posteriors, activebayes.store
import activebayes_cli._model
from activebayes_cli.main import app
print("ready", flush=True)
cwd, argv = json.loads(sys.stdin.readline())
os.chdir(cwd)
try:
    app(args=argv, prog_name="activebayes")
except SystemExit as exc:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(exc.code or 0)
"""


class WarmProcesses:
    """`activebayes` processes with their imports done, one spare always starting."""

    def __init__(self) -> None:
        self._spare = self._start()
        self.window = dict(WORK_S)  # seconds over which a kill instant is drawn, per command

    @staticmethod
    def _start() -> subprocess.Popen:
        pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
        return subprocess.Popen([sys.executable, "-c", WARM], text=True, **pipes)

    def kill_during(self, cwd: Path, argv: list[str], rng: random.Random, name: str) -> bool:
        """Run `activebayes ARGV` in `cwd` and SIGKILL it at an instant drawn uniformly over the
        command's run time (`self.window[name]`: WORK_S at first, then the run time measured the
        last time it finished before its instant, so a fast machine still kills it mid-run);
        True when it was killed, False when it had exited 0 by then."""
        proc, self._spare = self._spare, self._start()
        assert proc.stdout.readline() == "ready\n", proc.communicate()
        started = time.monotonic()
        proc.stdin.write(json.dumps([str(cwd), argv]) + "\n")
        proc.stdin.flush()
        try:
            proc.wait(rng.uniform(0, self.window[name]))
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
        _, err = proc.communicate()
        assert proc.returncode in (0, -signal.SIGKILL), err
        if proc.returncode == 0:
            self.window[name] = time.monotonic() - started
        return proc.returncode == -signal.SIGKILL

    def close(self) -> None:
        self._spare.kill()
        self._spare.communicate()


class Campaign:
    """Project 'blobs' in database `db`, its files in `folder`, its answers from `truth`."""

    def __init__(self, db: str, folder: Path, kills: int) -> None:
        self.db, self.folder = db, folder
        # a round at most before and after each attempt, and a margin: on a fast machine many
        # victims finish before their kill instant, and their rounds use up items too
        pool = K * (2 * attempts(kills) + 6)
        write_pool_csv(folder / "pool.csv", n=pool * 10 // 9 + 1)
        with (folder / "pool.csv").open() as fh:
            self.truth = {row["id"]: row["label"] for row in csv.DictReader(fh)}
        ok("init", "--name", "blobs", "--classes", "a,b,c")
        ok("pool", "add", "pool.csv", "--key-column", "id", "--label-column", "label", "--test-fraction", "0.1")

    def store(self) -> PoolStore:
        return PoolStore(self.db, create=False)

    def answers(self) -> list[tuple]:
        """Every answer recorded (not imported): (id, key, value, source, round id), in order."""
        with self.store() as store:
            return [(o["id"], o["key"], o["value"], o["source"], o["round_id"]) for o in store.observations("blobs")
                    if o["source"] != "import"]  # fmt: skip

    def waiting(self) -> tuple[int, int, list[str]] | None:
        """(number, id, open query keys in the prompt's order) of the round waiting for answers."""
        with self.store() as store:
            latest = store.latest_round("blobs")
            if latest is None or not latest.status.waiting:
                return None
            return latest.number, latest.id, [q.key for q in store.queries("blobs", latest.number) if q.value is None]

    def write_answers(self, path: Path, keys: list[str]) -> Path:
        path.write_text("key,label\n" + "".join(f"{key},{self.truth[key]}\n" for key in keys))
        return path

    def answer_waiting_round(self) -> None:
        """Answer the waiting round's open queries, if any, so that the next `round` starts anew."""
        waiting = self.waiting()
        if waiting is not None and waiting[2]:
            ok("label", "--who", "setup", "--from", str(self.write_answers(self.folder / "setup.csv", waiting[2])))

    def open_round(self) -> tuple[int, int, list[str]]:
        """The waiting round with open queries, run now when there is none."""
        waiting = self.waiting()
        if waiting is None or not waiting[2]:
            ok(*ROUND)
            waiting = self.waiting()
        assert waiting is not None and waiting[2], waiting
        return waiting


# ---- (b) the database is sound --------------------------------------------------------------------
ORPHANS = {
    "queries": "SELECT count(*) FROM queries q LEFT JOIN rounds r ON r.id = q.round_id WHERE r.id IS NULL",
    "answers": "SELECT count(*) FROM observations o LEFT JOIN rounds r ON r.id = o.round_id "
    "WHERE o.round_id IS NOT NULL AND r.id IS NULL",
}


def check_sound(c: Campaign) -> None:
    """SQLite's own checks; no query or answer of a missing round; rounds 1..n, only the latest
    unfinished; a round's queries distinct items, at most K; no item answered twice."""
    url = make_url(c.db)
    if url.get_backend_name() == "sqlite":
        conn = sqlite3.connect(url.database)
        try:
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
            assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        finally:
            conn.close()
    engine = create_engine(c.db)
    try:
        with engine.connect() as conn:
            assert {what: conn.execute(text(sql)).scalar() for what, sql in ORPHANS.items()} == {"queries": 0, "answers": 0}
    finally:
        engine.dispose()
    with c.store() as store:
        rounds = store.rounds("blobs")
        assert [r.number for r in rounds] == list(range(1, len(rounds) + 1))
        assert all(r.status.finished for r in rounds[:-1]), [(r.number, r.status.value) for r in rounds]
        for r in rounds:
            keys = [q.key for q in store.queries("blobs", r.number)]
            assert len(keys) == len(set(keys)) and len(keys) <= K, (r.number, keys)
    doubled = [key for key, n in Counter(a[1] for a in c.answers()).items() if n > 1]
    assert doubled == [], f"answered more than once: {doubled}"


def check_round_file(c: Campaign, number: int) -> None:
    """The waiting round `number`'s file lists its open queries, every one, with an empty label."""
    with (c.folder / f"blobs-round-{number}.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["key"], r["label"]) for r in rows] == [(key, "") for key in c.waiting()[2]]


# ---- the victims -----------------------------------------------------------------------------------
def kill_round(c: Campaign, rng: random.Random, warm: WarmProcesses) -> bool:
    """`activebayes round` killed; then `label --from` its round file when it got that far, else
    `round` again, which resumes an unfinished round under its number. No answer is recorded."""
    c.answer_waiting_round()
    before = c.answers()
    killed = warm.kill_during(c.folder, ["--db", c.db, *ROUND], rng, "round")
    check_sound(c)
    assert c.answers() == before
    with c.store() as store:
        latest = store.latest_round("blobs")
    waiting = c.waiting()
    if waiting and waiting[2] and (c.folder / f"blobs-round-{latest.number}.csv").exists():
        check_round_file(c, latest.number)  # written whole: the next command answers it
        answered = c.write_answers(c.folder / f"answers-{latest.number}.csv", waiting[2])
        ok("label", "--who", "ann", "--from", str(answered))
        assert sorted(a[1:] for a in c.answers()[len(before) :]) == sorted((k, c.truth[k], "file", waiting[1]) for k in waiting[2])
    else:
        step = RoundStatus.next_step(latest.status, len(waiting[2]) if waiting else 0) if latest else RoundStep.new
        resumed = step is RoundStep.resume
        data = json.loads(ok("--json", *ROUND).stdout)
        assert (data["round"], data["resumed"]) == (latest.number if resumed else (latest.number if latest else 0) + 1, resumed)
        assert data["status"] == RoundStatus.queried
        check_round_file(c, data["round"])
        assert c.answers() == before
    check_sound(c)
    with c.store() as store:
        holder = store.round_lock_holder("blobs")
    # A round killed after writing its file keeps its lock row until the next `round` takes it
    # over (`label --from` needs no lock): the row may stay, but no live process may hold it.
    assert holder is None or not process_alive(holder.pid), f"a live process holds the round lock: {holder}"
    return killed


def process_alive(pid: int) -> bool:
    """Whether `pid` is a running process of this machine (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1] != "Z"
    except OSError:
        return False


def kill_label_from(c: Campaign, rng: random.Random, warm: WarmProcesses) -> bool:
    """`activebayes label --from FILE` killed: the file is recorded whole or not at all; after the
    same command again, each of its rows exactly once, for the waiting round."""
    number, round_id, keys = c.open_round()
    path = c.write_answers(c.folder / f"answers-{number}.csv", keys)
    want = sorted((key, c.truth[key], "file", round_id) for key in keys)
    before = c.answers()
    argv = ["--db", c.db, "label", "--who", "ann", "--from", str(path)]
    killed = warm.kill_during(c.folder, argv, rng, "label --from")
    check_sound(c)
    now = c.answers()
    assert now[: len(before)] == before
    assert sorted(a[1:] for a in now[len(before) :]) in ([], want)  # one transaction
    ok("label", "--who", "ann", "--from", str(path))
    check_sound(c)
    now = c.answers()
    assert now[: len(before)] == before and sorted(a[1:] for a in now[len(before) :]) == want
    return killed


def kill_prompt(c: Campaign, rng: random.Random, _warm: WarmProcesses) -> bool:
    """The prompt killed during start-up or after its n-th typed answer: every answer it
    acknowledged is recorded once, with the value typed; the prompt again asks only the rest."""
    _, round_id, keys = c.open_round()
    typed = rng.randint(0, len(keys))
    delay = rng.uniform(0, PROMPT_START_S if typed == 0 else ANSWER_S)
    before = c.answers()
    child = spawn(c.folder, c.db)
    try:
        for i in range(typed):
            child.expect_exact(f"item {i + 1}/{len(keys)}: {keys[i]}")
            child.expect(PROMPT)
            child.sendline(c.truth[keys[i]])
        time.sleep(delay)
        killed = child.isalive()
        child.kill(signal.SIGKILL)
        child.expect(pexpect.EOF)
        after = child.before  # all it printed after the last item we waited for
    finally:
        child.close(force=True)
    acked = typed if typed and (f"item {typed + 1}/" in after or "Recorded" in after) else max(typed - 1, 0)
    check_sound(c)
    now = c.answers()
    assert now[: len(before)] == before
    new = Counter((a[1], a[2], a[3], a[4]) for a in now[len(before) :])
    must = Counter((key, c.truth[key], "prompt", round_id) for key in keys[:acked])
    may = Counter((key, c.truth[key], "prompt", round_id) for key in keys[acked:typed])  # typed, not acknowledged
    assert must <= new <= must + may, (new, must, may)

    pending = c.waiting()[2]
    assert pending == [key for key in keys if (key, c.truth[key], "prompt", round_id) not in new]
    again = run("label", "--who", "tester", input="".join(f"{c.truth[key]}\n" for key in pending))
    assert again.exit_code == 0, again.output
    check_sound(c)
    now = c.answers()
    assert sorted(a[1:] for a in now[len(before) :]) == sorted((key, c.truth[key], "prompt", round_id) for key in keys)
    return killed


VICTIMS = {"round": kill_round, "label --from": kill_label_from, "prompt": kill_prompt}


@pytest.mark.slow
@pytest.mark.timeout(120 + 30 * KILLS)  # the suite's 300 s per test would stop a run of 50 kills
def test_sigkilled_commands_leave_a_sound_database_and_every_acknowledged_answer(cli_db, tmp_path, test_seed):
    """ACTIVEBAYES_TEST_KILLS kills, the victims in turn; a victim that finished before its kill
    instant is run again at the next instant drawn."""
    rng = random.Random(test_seed)
    campaign = Campaign(cli_db, tmp_path, KILLS)
    warm = WarmProcesses()
    kills: Counter[str] = Counter()
    try:
        for _ in range(attempts(KILLS)):
            if kills.total() == KILLS:
                break
            name = list(VICTIMS)[kills.total() % len(VICTIMS)]
            kills[name] += VICTIMS[name](campaign, rng, warm)
    finally:
        warm.close()
    print(f"kills on {make_url(cli_db).get_backend_name()}: {dict(kills)}")
    assert kills.total() == KILLS, kills


# `activebayes round` that SIGKILLs itself where its round file would be written.
DIE_BEFORE_FILE = """\
import os, signal, sys
import activebayes_cli.round_ as round_
round_.write_round_csv = lambda *args: os.kill(os.getpid(), signal.SIGKILL)
from activebayes_cli.main import app
app(args=sys.argv[1:], prog_name="activebayes")
"""


@pytest.mark.slow
def test_round_killed_before_writing_its_file_gets_it_from_the_next_round(cli_db, tmp_path):
    """A window the random kills above can hit, hit on purpose: the round's queries recorded, its
    file not yet written.
    The next `round` writes the file, every open query in it, and exits 0 (it used to exit 2,
    sending the user to label from the file that was never written)."""
    c = Campaign(cli_db, tmp_path, kills=0)
    died = subprocess.run([sys.executable, "-c", DIE_BEFORE_FILE, "--db", cli_db, *ROUND], cwd=tmp_path, capture_output=True, text=True)
    assert died.returncode == -signal.SIGKILL, died.stderr
    assert len(c.waiting()[2]) == K and not (tmp_path / "blobs-round-1.csv").exists()
    data = json.loads(ok("--json", *ROUND).stdout)
    assert (data["round"], data["resumed"], data["status"], data["csv"]) == (1, True, "queried", "blobs-round-1.csv")
    check_round_file(c, 1)
    check_sound(c)
