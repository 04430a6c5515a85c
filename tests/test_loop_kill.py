"""SIGKILL the loop at many points and check that every resume keeps the database consistent,
loses nothing recorded, and ends with the labelled set of an uninterrupted run.

Children are forked (no re-import), set torch to one thread, and kill themselves either at a
chosen loop stage (`hook`), or in the middle of a transaction (after the n-th SQL statement the
store executes), or are killed by the parent after a random delay.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import signal

import pytest
import torch
from sqlalchemy import event

from activebayes.loop import STAGES, ActiveLearningLoop
from activebayes.oracles import SimulatedOracle
from activebayes.store import PoolStore

from test_loop import check_consistent, make_project, tiny_factory

BATCH, UNTIL = 5, 60  # 1 cold-start round + 11 fitted rounds


def _child(url: str, truth, mode: str, at: int) -> None:
    torch.set_num_threads(1)
    store = PoolStore(url)
    count = [0]

    def die_at(_stage: str = "") -> None:
        count[0] += 1
        if count[0] == at:
            os.kill(os.getpid(), signal.SIGKILL)

    if mode == "statement":
        event.listen(store.engine, "after_cursor_execute", lambda *a: die_at())
    loop = ActiveLearningLoop(tiny_factory, "bald", store, "digits", SimulatedOracle(truth), batch_size=BATCH, seed=11,
                              hook=die_at if mode == "stage" else None)  # fmt: skip
    loop.run(None, until_labels=UNTIL)
    os._exit(0)


def _run_child(url: str, truth, mode: str, at: int, delay: float | None = None) -> int:
    proc = mp.get_context("fork").Process(target=_child, args=(url, truth, mode, at))
    proc.start()
    if delay is not None:
        proc.join(delay)
        if proc.is_alive():
            os.kill(proc.pid, signal.SIGKILL)
    proc.join(60)
    assert not proc.is_alive()
    return proc.exitcode


def _snapshot(store: PoolStore) -> list[tuple]:
    return [(o["id"], o["key"], o["value"], o["round_id"]) for o in store.observations("digits")]


@pytest.mark.slow
def test_sigkill_at_any_point_resumes_to_the_uninterrupted_result(tmp_path):
    folder = tmp_path
    ref_url, url = f"sqlite:///{folder / 'ref.db'}", f"sqlite:///{folder / 'kill.db'}"
    for u in (ref_url, url):
        with PoolStore(u) as store:
            truth = make_project(store, folder, pool=200, test=50)
    assert _run_child(ref_url, truth, "none", 0) == 0
    with PoolStore(ref_url) as ref:
        reference = [ref.queries("digits", r.number) for r in ref.rounds("digits")]
        ref_labels = ref.labels("digits")[1]
    assert len(ref_labels) == UNTIL

    rng = random.Random(0)
    plan = [("statement", rng.randint(1, 30), None) for _ in range(12)]  # inside transactions
    plan += [("stage", n, None) for n in 2 * list(range(1, len(STAGES) + 1))]  # at every stage, twice
    plan += [("none", 0, rng.uniform(0.05, 0.5)) for _ in range(6)]  # from outside, at random times
    killed = 0
    seen_status: set[str] = set()
    previous: list[tuple] = []
    for mode, at, delay in plan:
        code = _run_child(url, truth, mode, at, delay)
        killed += code == -signal.SIGKILL
        with PoolStore(url) as store:
            check_consistent(store, "digits", BATCH)
            now = _snapshot(store)
            assert now[: len(previous)] == previous, "a recorded observation was lost or changed"
            previous = now
            latest = store.latest_round("digits")
            if code == -signal.SIGKILL and latest is not None:
                seen_status.add(latest.status)
            if len(store.labels("digits")[0]) >= UNTIL and store.latest_round("digits").status == "done":
                break
    assert killed >= 20
    assert seen_status >= {"started", "fitted", "scored", "queried", "answered", "done"}  # killed in every state
    assert _run_child(url, truth, "none", 0) == 0  # finish whatever is left
    with PoolStore(url) as store:
        check_consistent(store, "digits", BATCH)
        assert all(r.status == "done" for r in store.rounds("digits"))
        assert sorted(store.labels("digits")[1]) == sorted(ref_labels)
        resumed = [store.queries("digits", r.number) for r in store.rounds("digits")]
    assert [[(q.key, q.rank) for q in r] for r in resumed] == [[(q.key, q.rank) for q in r] for r in reference]
    for got, want in zip(resumed, reference):
        assert [q.score for q in got] == pytest.approx([q.score for q in want], rel=1e-6, abs=1e-9)
