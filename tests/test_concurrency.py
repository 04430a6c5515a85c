"""Concurrency on SQLite and PostgreSQL: one `round` at a time per project (the store's round lock),
a lock left by a SIGKILLed `round` taken over by the next one, and 8 `label --from` processes
writing one project at once: they end as if run one by one (an agreeing label is a repeat, a
different one falls under --relabel), every label recorded exactly once.

The `round` processes fit a network from a test-written model file (`net.py:make`) whose forward
pass waits while a `hold` file exists (on batches of more than two items, i.e. the round's own fit,
not the checks before it) and writes `entered` when it starts waiting: so the first process
holds the lock, inside its round, for as long as the test needs, with nothing slowed in the
library itself.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest

from cli_checks import ok, run
from test_cli import write_pool_csv

CLI = str(Path(sys.executable).parent / "activebayes")
TINY = ("--epochs", "2", "--samples", "2", "--device", "cpu")
K = 4
HELD_NET = '''\
import os, time
from pathlib import Path
from torch import nn

HOLD = Path(__file__).with_name("hold")


class Held(nn.Module):
    """The identity; on a batch of more than two items it waits while `hold` exists."""

    def forward(self, x):
        if x.shape[0] > 2 and HOLD.exists():
            HOLD.with_name("entered").write_text(str(os.getpid()))
            deadline = time.monotonic() + 120
            while HOLD.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        return x


def make():
    return nn.Sequential(Held(), nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.5), nn.Linear(8, 3))
'''


@pytest.fixture
def blobs(cli_db, tmp_path):
    """Project 'blobs' (45 pool items, truth held back; 15 labelled test items) whose round 1, a
    random first batch of 5, is answered; net.py holds a round while tmp_path/hold exists."""
    write_pool_csv(Path("pool.csv"))
    ok("init", "--name", "blobs", "--classes", "a,b,c")
    ok("pool", "add", "pool.csv", "--key-column", "id", "--label-column", "label", "--test-fraction", "0.25")
    ok("round", *TINY, "--k", "5", "--oracle", "truth")
    (tmp_path / "net.py").write_text(HELD_NET)
    return cli_db


def _round_process(tmp_path: Path) -> subprocess.Popen:
    # bald: its trial fit scores two items (epig's would predict them with two targets, a batch
    # of four that the held network would hold before the round starts)
    command = [CLI, "round", "--model", "net.py:make", "--acquisition", "bald", *TINY, "--k", str(K), "--oracle", "truth"]
    return subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@contextmanager
def _held_rounds(tmp_path: Path, count: int):
    """`count` `round` processes started at once while tmp_path/hold exists (their fit waits);
    on leaving, the hold is lifted and any process still running after 120 s is killed."""
    hold = tmp_path / "hold"
    hold.write_text("")
    procs = [_round_process(tmp_path) for _ in range(count)]
    try:
        yield procs
    finally:
        hold.unlink(missing_ok=True)
        for p in procs:
            try:
                p.wait(120)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def _wait_for(condition, procs, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        for p in procs:
            if p.poll() is not None and p.returncode != 0:
                raise AssertionError(f"{what}: a process exited {p.returncode}: {p.stderr.read()}")
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.05)


def _round_started(url: str, number: int) -> bool:
    from activebayes.store import PoolStore

    with PoolStore(url, create=False) as store:
        latest = store.latest_round("blobs")
        return latest is not None and latest.number == number


def _check_one_round(url: str, number: int) -> None:
    """Rounds 1..number exist once each, the last done with K queries, every key labelled once."""
    from activebayes.store import PoolStore

    with PoolStore(url, create=False) as store:
        rounds = store.rounds("blobs")
        assert [r.number for r in rounds] == list(range(1, number + 1))
        assert rounds[-1].status == "done"
        assert len(store.queries("blobs", number)) == K
        keys = [o["key"] for o in store.observations("blobs") if o["round_id"] is not None]
        assert len(keys) == len(set(keys)) == 5 + K
        assert store.round_lock_holder("blobs") is None  # released


def _busy_line(stderr: str, pid: int | None = None) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    line = lines[0]
    assert line.startswith("error: round 2 of project 'blobs' is running (started by pid "), line
    assert "wait for it to finish" in line and "Traceback" not in stderr
    if pid is not None:
        assert f"pid {pid} on host " in line, line
    return line


def _inside_round_2(tmp_path: Path, url: str, proc: subprocess.Popen) -> None:
    _wait_for(lambda: (tmp_path / "entered").exists() and _round_started(url, 2), [proc], "round 2 runs")


def test_a_second_round_exits_2_naming_the_running_one(blobs, tmp_path):
    with _held_rounds(tmp_path, 1) as (first,):
        _inside_round_2(tmp_path, blobs, first)
        second = _round_process(tmp_path)
        _, err = second.communicate(timeout=120)
        assert second.returncode == 2, err
        _busy_line(err, first.pid)
        assert first.poll() is None  # still inside its round
    _, err = first.communicate()
    assert first.returncode == 0, err
    _check_one_round(blobs, 2)


def test_two_rounds_started_together_run_one(blobs, tmp_path):
    with _held_rounds(tmp_path, 2) as procs:
        _wait_for(lambda: any(p.poll() is not None for p in procs), [], "one of them exits")
        loser = next(p for p in procs if p.poll() is not None)
        winner = next(p for p in procs if p is not loser)
        _, err = loser.communicate()
        assert loser.returncode == 2, err
        _busy_line(err, winner.pid)
    _, err = winner.communicate()
    assert winner.returncode == 0, err
    _check_one_round(blobs, 2)


def test_a_lock_left_by_a_killed_round_does_not_block_the_next(blobs, tmp_path):
    from activebayes.store import PoolStore

    with _held_rounds(tmp_path, 1) as (first,):
        _inside_round_2(tmp_path, blobs, first)
        first.send_signal(signal.SIGKILL)
        first.wait(30)
    with PoolStore(blobs, create=False) as store:
        assert store.round_lock_holder("blobs").pid == first.pid  # left behind
    result = ok("round", "--oracle", "truth", "--device", "cpu")  # resumes round 2 with its recorded options
    assert f"took over the round lock of project 'blobs' left by pid {first.pid} on host " in result.output
    assert "resuming round 2" in result.output
    _check_one_round(blobs, 2)


# ---- the store's lock itself -------------------------------------------------------------------
@pytest.fixture
def project_store(db_url, tmp_path):
    from activebayes.store import PoolStore

    store = PoolStore(db_url)
    store.create_project("p", classes=["a", "b"])
    yield store
    store.close()


def test_round_lock_is_reentrant_and_excludes_another_store(project_store, db_url):
    from activebayes.errors import RoundBusyError, StoreError
    from activebayes.store import PoolStore

    other = PoolStore(db_url)
    try:
        with project_store.round_lock("p") as lock:
            with project_store.round_lock("p") as again:
                assert again is lock and lock.taken_over is None
            with pytest.raises(RoundBusyError, match=rf"round 1 of project 'p' is running \(started by pid {os.getpid()} on host ") as caught:
                with other.round_lock("p"):
                    pass
            assert isinstance(caught.value, StoreError) and caught.value.number == 1 and caught.value.pid == os.getpid()
            assert project_store.round_lock_holder("p").pid == os.getpid()
        assert project_store.round_lock_holder("p") is None
        with other.round_lock("p") as lock:  # free again
            assert lock.taken_over is None
    finally:
        other.close()


def test_a_loop_step_refuses_while_another_process_holds_the_lock(project_store, db_url):
    from activebayes.errors import RoundBusyError
    from activebayes.loop import ActiveLearningLoop
    from activebayes.store import PoolStore

    other = PoolStore(db_url)
    try:
        loop = ActiveLearningLoop(lambda seed: None, "bald", other, "p", batch_size=2)
        with project_store.round_lock("p"):
            with pytest.raises(RoundBusyError):
                loop.step()
            with pytest.raises(RoundBusyError):
                loop.run(1)
        assert other.rounds("p") == []  # nothing started
    finally:
        other.close()


def test_a_lock_of_another_host_is_stale_only_after_its_heartbeat_timeout(project_store, db_url):
    """SQLite: another host's lock row holds while its heartbeat is fresh, and is taken over once
    it is older than LOCK_STALE_S. PostgreSQL: the advisory lock decides; a row alone is stale."""
    from activebayes.errors import RoundBusyError
    from activebayes.store import store as store_module
    from activebayes.store.models import RoundLock, utcnow

    def leave_row(age_s: float) -> None:
        beat = utcnow() - timedelta(seconds=age_s)
        with project_store.transaction() as s:
            s.merge(RoundLock(project_id=project_store.project("p").id, token="x" * 32, pid=1, host="elsewhere.example",
                              started_at=beat, heartbeat=beat))  # fmt: skip

    leave_row(1.0)
    if project_store.engine.dialect.name == "sqlite":
        with pytest.raises(RoundBusyError, match="pid 1 on host elsewhere.example"):
            with project_store.round_lock("p"):
                pass
        leave_row(store_module.LOCK_STALE_S + 5)
    with project_store.round_lock("p") as lock:
        assert lock.taken_over is not None and lock.taken_over.host == "elsewhere.example" and lock.stale_reason
    assert project_store.round_lock_holder("p") is None


# ---- 8 processes labelling one project ---------------------------------------------------------
def _label_files(tmp_path: Path, url: str, writers: int) -> dict[str, str]:
    """`writers` answer files over the unlabelled pool items: each has 3 keys of its own and up to
    4 shared with its neighbours (each key's true label everywhere). Returns {key: label}."""
    from activebayes.store import PoolStore

    with Path("pool.csv").open(newline="") as fh:
        truth = {row["id"]: row["label"] for row in csv.DictReader(fh)}
    with PoolStore(url, create=False) as store:
        states = store.label_states("blobs", list(truth))
    free = [k for k in truth if states[k]["split"] == "pool" and states[k]["label"] is None]
    own, shared = free[: 3 * writers], free[3 * writers : 4 * writers]
    assert len(shared) == writers
    wanted: dict[str, str] = {}
    for w in range(writers):
        keys = own[3 * w : 3 * w + 3] + [shared[(w + j) % writers] for j in range(min(4, writers))]
        with (tmp_path / f"answers-{w}.csv").open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(["key", "label"])
            writer.writerows([k, truth[k]] for k in keys)
        wanted.update((k, truth[k]) for k in keys)
    return wanted


def _start(tmp_path: Path, files: list[str], *args: str) -> list[subprocess.Popen]:
    return [subprocess.Popen([CLI, "--json", "label", "--from", name, *args], cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for name in files]  # fmt: skip


@pytest.mark.parametrize("writers", [pytest.param(8, marks=pytest.mark.slow), 3])
def test_concurrent_label_processes_record_each_label_once(cli_db, tmp_path, writers):
    """8 (slow lane; 3 in the fast one) `label --from` processes started together, with files that
    overlap and agree: every one succeeds (as run one by one, the overlaps being repeats), and
    every key is recorded once."""
    write_pool_csv(Path("pool.csv"))
    ok("init", "--name", "blobs", "--classes", "a,b,c")
    ok("pool", "add", "pool.csv", "--key-column", "id", "--label-column", "label", "--test-fraction", "0.25")
    wanted = _label_files(tmp_path, cli_db, writers)
    from activebayes.store import PoolStore

    with PoolStore(cli_db, create=False) as store:
        before = len(store.observations("blobs"))
    summaries = []
    for proc in _start(tmp_path, [f"answers-{w}.csv" for w in range(writers)]):
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        summaries.append(json.loads(out))

    with PoolStore(cli_db, create=False) as store:
        observations = store.observations("blobs")[before:]
        keys = [o["key"] for o in observations]
        assert len(keys) == len(set(keys)), "a label was recorded twice"
        assert {o["key"]: o["value"] for o in observations} == wanted  # every one, with its answer
        assert all(o["source"] == "file" and o["round_id"] is None for o in observations)
    # each writer reports what it wrote and what it found written (by itself or another): its whole file
    assert sum(s["recorded"] for s in summaries) == len(wanted)
    assert all(s["recorded"] + s["unchanged"] == 3 + min(4, writers) for s in summaries)
    # repeating any file now records nothing: every row is an item's current label
    assert json.loads(ok("--json", "label", "--from", str(tmp_path / "answers-0.csv")).stdout)["recorded"] == 0


def test_concurrent_different_labels_fall_under_the_relabel_rule(cli_db, tmp_path):
    """Two files started together giving one item different labels end as some order of the two:
    without --relabel the second is refused whole (naming the item and both labels); with it, both
    are recorded and the label is the one written last."""
    write_pool_csv(Path("pool.csv"))
    ok("init", "--name", "blobs", "--classes", "a,b,c")
    ok("pool", "add", "pool.csv", "--key-column", "id", "--label-column", "label")
    (tmp_path / "one.csv").write_text("key,label\nitem-000,a\nitem-001,a\n")
    (tmp_path / "two.csv").write_text("key,label\nitem-000,b\nitem-002,b\n")
    from activebayes.store import PoolStore

    results = [(p.wait(timeout=120), p.stdout.read(), p.stderr.read()) for p in _start(tmp_path, ["one.csv", "two.csv"])]
    assert sorted(code for code, _, _ in results) == [0, 2]
    refused = next(err for code, _, err in results if code == 2)  # checked before or inside the other's write
    assert "would replace the current labels of 1 item" in refused and "item-000" in refused and "--relabel" in refused
    with PoolStore(cli_db, create=False) as store:
        labels = {o["key"]: o["value"] for o in store.observations("blobs")}
    winner = "a" if "item-001" in labels else "b"
    assert labels == ({"item-000": "a", "item-001": "a"} if winner == "a" else {"item-000": "b", "item-002": "b"})

    for name, text in (("three.csv", "key,label\nitem-010,a\n"), ("four.csv", "key,label\nitem-010,c\n")):
        (tmp_path / name).write_text(text)
    procs = _start(tmp_path, ["three.csv", "four.csv"], "--relabel")
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    with PoolStore(cli_db, create=False) as store:
        given = [o["value"] for o in store.observations("blobs") if o["key"] == "item-010"]
        assert sorted(given) == ["a", "c"] and store.label_states("blobs", ["item-010"])["item-010"]["label"] == given[-1]


def test_cli_round_busy_error_is_one_line_in_process(blobs, tmp_path):
    """The in-process CLI (another PoolStore in this process holds the lock): exit 2, one line."""
    from cli_checks import assert_mistake, db_dump

    from activebayes.store import PoolStore

    holder = PoolStore(blobs, create=False)
    try:
        with holder.round_lock("blobs"):
            before = db_dump(blobs)
            assert_mistake(run("round", *TINY), "round 2 of project 'blobs' is running", f"pid {os.getpid()}", "wait for it")
            assert db_dump(blobs) == before
    finally:
        holder.close()


def test_record_labels_ends_as_some_order_of_the_writers(db_url, tmp_path):
    """`PoolStore.record_labels` checked against what the caller read (`expected`): a label given
    meanwhile that equals this row's is a repeat (None in place of its id, nothing written); a
    different one refuses the call unless `relabel`; with `per_labeller` only the same labeller's
    own equal answer is a repeat."""
    import numpy as np

    from activebayes.store import PoolStore
    from cli_checks import db_dump

    with PoolStore(db_url) as store:
        store.create_project("p", classes=["a", "b"])
        store.add_items("p", rows=np.arange(4))
        store.record_labels("p", [("0", "a", None), ("1", "a", None)], who="bob", source="web", expected={})
        before = db_dump(db_url)
        assert store.record_labels("p", [("0", "a", None), ("1", "b", None)], who="ann", source="file",
                                   expected={"0": None, "1": None}) == ([], {"1": (None, "a")})  # fmt: skip
        assert db_dump(db_url) == before
        ids, conflicts = store.record_labels("p", [("0", "a", None), ("2", "b", None)], who="ann", source="file",
                                             expected={"0": None, "2": None})  # fmt: skip
        assert conflicts == {} and ids[0] is None and isinstance(ids[1], int)
        ids, _ = store.record_labels("p", [("1", "b", None)], who="ann", source="file", expected={"1": None}, relabel=True)
        assert ids[0] is not None and store.label_states("p", ["1"])["1"]["label"] == "b"
        ids, _ = store.record_labels("p", [("0", "a", None)], who="cy", source="web", expected={"0": "a"}, per_labeller=True)
        assert ids[0] is not None  # cy's own answer, equal to bob's
        ids, _ = store.record_labels("p", [("0", "a", None)], who="cy", source="web", expected={"0": "a"}, per_labeller=True)
        assert ids == [None]  # cy again: a repeat
        assert [(o["key"], o["value"], o["who"]) for o in store.observations("p")] == [
            ("0", "a", "bob"), ("1", "a", "bob"), ("2", "b", "ann"), ("1", "b", "ann"), ("0", "a", "cy")]
