"""Labels benchmark: sustained answers per second from concurrent writers, and one answer's latency.

    .venv/bin/python bench/labels.py [--writers 8] [--answers 200] [--db URL ...] [--no-pg] [--prompt 200]

Each writer is a process with its own `PoolStore` that records single answers the way the
terminal prompt (`activebayes label`) does: one `PoolStore.record_labels` call, one transaction,
per answer, checked against the label it read (`expected`), to the queries of a waiting round.
The writers answer disjoint items of one project, start together (a barrier) and time every
call. Reported per database: answers per second over the whole run (all answers / the time from
the first start to the last finish), and the p50, p99 and max latency of one answer.

`--prompt N` adds the terminal prompt's own cost per answer, in this one process on a waiting
round of N items: the prompt as `activebayes label` runs it for answers piped in
(`PromptTurns.take`: the round checked and the item leased in one transaction; `round_for_answer`;
then the same `record_labels`), against the plain `record_labels` of the same answers (the peer:
the prompt before it took turns), alternating on fresh projects, best of 3 each; the ratio is the
prompt's time over the plain writes'.
Measured 2026-11-28, shared 2-core machine, `bench/labels.py --writers 2 --answers 20 --prompt
300`: plain writes 925/s (SQLite) and 418/s (PostgreSQL); the prompt 403/s and 192/s, 1.40 and
2.81 ms more an answer (a lease of the item shown, one read of the round before the answer).

Databases: each `--db URL` (a SQLite file, or PostgreSQL, where a fresh schema is created and
dropped); by default a temporary SQLite file and PostgreSQL at $ACTIVEBAYES_TEST_PG_URL (or
postgresql+psycopg://postgres@127.0.0.1:5432/test) when it answers.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing as mp
import os
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from activebayes.store import PoolStore

DEFAULT_PG = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def setup(url: str, project: str, n: int) -> list[str]:
    """A project of `n` items whose round 1 waits for answers to all of them; their keys."""
    store = PoolStore(url)
    try:
        store.create_project(project, classes=range(10))
        store.add_items(project, rows=np.arange(n))
        store.start_round(project, posterior="p", acquisition="a", seed=0)
        store.advance_round(project, 1, "fitted")
        ids, _ = store.candidates(project)
        store.record_queries(project, 1, ids.tolist(), np.linspace(1, 0, n).tolist(), timings={})
        store.advance_round(project, 1, "queried")
        return [q.key for q in store.queries(project, 1)]
    finally:
        store.close()


def writer(url: str, project: str, keys: list[str], barrier, results) -> None:
    """Record one answer per key, each in its own transaction, timing every call."""
    store = PoolStore(url)
    states = store.label_states(project, keys)  # as the prompt reads them before asking
    latencies = []
    barrier.wait()
    start = time.perf_counter()
    for i, key in enumerate(keys):
        t0 = time.perf_counter()
        ids, conflicts = store.record_labels(
            project, [(key, str(i % 10), 1)], who=f"w{os.getpid()}", source="prompt", expected={key: states[key]["label"]}
        )
        latencies.append(time.perf_counter() - t0)
        assert ids and not conflicts, conflicts
    end = time.perf_counter()
    store.close()
    results.put((start, end, latencies))


def measure(url: str, writers: int, answers: int) -> tuple[float, np.ndarray]:
    """(answers per second, latencies [writers * answers] in seconds) of one run at `url`."""
    project = f"bench-labels-{uuid.uuid4().hex[:8]}"  # a new project, also in a database given with --db
    keys = setup(url, project, writers * answers)
    ctx = mp.get_context("fork")
    barrier, results = ctx.Barrier(writers), ctx.Queue()
    procs = [ctx.Process(target=writer, args=(url, project, keys[w * answers : (w + 1) * answers], barrier, results)) for w in range(writers)]
    for p in procs:
        p.start()
    runs = [results.get(timeout=600) for _ in procs]
    for p in procs:
        p.join()
        if p.exitcode != 0:
            raise SystemExit(f"a writer failed (exit {p.exitcode})")
    with PoolStore(url) as store:  # every answer recorded once
        recorded = store.observations(project)
        assert len(recorded) == len({o["key"] for o in recorded}) == writers * answers, len(recorded)
    wall = max(r[1] for r in runs) - min(r[0] for r in runs)
    return writers * answers / wall, np.concatenate([r[2] for r in runs])


def answer_all(url: str, n: int, prompt: bool) -> float:
    """Seconds to answer the `n` queries of a fresh project's waiting round, one transaction per
    answer as the prompt writes it; with `prompt`, each item first taken as the prompt takes it."""
    from activebayes_cli._prompt_turns import PromptTurns, holder_name

    project = f"bench-prompt-{uuid.uuid4().hex[:8]}"
    keys = setup(url, project, n)
    with PoolStore(url) as store:
        states = store.label_states(project, keys)
        turns = PromptTurns(store, project, 1, holder_name("w"), {k: states[k]["item_id"] for k in keys}, pass_over=False)
        start = time.perf_counter()
        with turns if prompt else contextlib.nullcontext():
            for i, key in enumerate(keys):
                number = 1
                if prompt:
                    turns.take(key)
                    number = turns.round_for_answer(key)
                ids, conflicts = store.record_labels(project, [(key, str(i % 10), number)], who="w", source="prompt",
                                                     expected={key: states[key]["label"]})  # fmt: skip
                assert ids and not conflicts, conflicts
        return time.perf_counter() - start


def measure_prompt(url: str, n: int, repeats: int = 3) -> tuple[float, float]:
    """(plain, prompt) seconds for `n` answers: the least of `repeats` alternating runs each."""
    plain, prompt = [], []
    for _ in range(repeats):
        plain.append(answer_all(url, n, prompt=False))
        prompt.append(answer_all(url, n, prompt=True))
    return min(plain), min(prompt)


def pg_schema_url(base_url: str) -> tuple[str, object] | None:
    """A fresh schema on the PostgreSQL at `base_url`: (its URL, a function dropping it), or None
    when the server does not answer."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    admin = create_engine(base_url, connect_args={"connect_timeout": 5})
    schema = f"ab_bench_{uuid.uuid4().hex[:10]}"
    try:
        with admin.begin() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    except Exception as exc:  # noqa: BLE001 - any failure means "no server here"
        admin.dispose()
        print(f"postgresql at {make_url(base_url).render_as_string(hide_password=True)}: unreachable ({type(exc).__name__}); skipped")
        return None

    def drop() -> None:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()

    return make_url(base_url).update_query_dict({"options": f"-csearch_path={schema}"}).render_as_string(False), drop


@contextmanager
def database(url: str) -> Iterator[tuple[str, str] | None]:
    """("sqlite" or "postgresql", the URL to measure on) for `url`: PostgreSQL in a fresh schema,
    dropped afterwards; None when the server does not answer."""
    if url.startswith("sqlite"):
        yield "sqlite", url
        return
    fresh = pg_schema_url(url)
    if fresh is None:
        yield None
        return
    try:
        yield "postgresql", fresh[0]
    finally:
        fresh[1]()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=8, help="concurrent writer processes")
    parser.add_argument("--answers", type=int, default=200, help="answers each writer records")
    parser.add_argument("--db", action="append", metavar="URL", help="database URL (repeatable); default: a temporary SQLite file and PostgreSQL")
    parser.add_argument("--no-pg", action="store_true", help="with the default databases: SQLite only")
    parser.add_argument("--prompt", type=int, default=0, metavar="N", help="also time the prompt's answers to a round of N items")
    args = parser.parse_args()
    if args.writers < 1 or args.answers < 1:
        parser.error("--writers and --answers must be positive")

    rows, prompts = [], []
    with tempfile.TemporaryDirectory() as tmp:
        urls = args.db or [f"sqlite:///{Path(tmp) / 'labels.db'}"] + ([] if args.no_pg else [os.environ.get("ACTIVEBAYES_TEST_PG_URL", DEFAULT_PG)])
        for url in urls:
            with database(url) as found:
                if found is None:
                    continue
                name, url = found
                rate, lat = measure(url, args.writers, args.answers)
                if args.prompt:
                    prompts.append((name, *measure_prompt(url, args.prompt)))
            ms = lat * 1000
            rows.append((name, rate, *np.percentile(ms, [50, 99]), ms.max()))

    print(f"{args.writers} writers x {args.answers} answers, one transaction per answer; SQLite {sqlite3.sqlite_version}; {os.cpu_count()} CPUs")
    print(f"{'database':12s} {'answers/s':>10s} {'p50 ms':>8s} {'p99 ms':>8s} {'max ms':>8s}")
    for name, rate, p50, p99, worst in rows:
        print(f"{name:12s} {rate:10.0f} {p50:8.2f} {p99:8.2f} {worst:8.2f}")
    if prompts:
        print(f"\nthe prompt, {args.prompt} answers piped in, one process (best of 3)")
        print(f"{'database':12s} {'plain/s':>10s} {'prompt/s':>10s} {'ms/answer +':>12s} {'ratio':>6s}")
        for name, plain, prompt in prompts:
            extra = (prompt - plain) / args.prompt * 1000
            print(f"{name:12s} {args.prompt / plain:10.0f} {args.prompt / prompt:10.0f} {extra:12.2f} {prompt / plain:6.2f}")


if __name__ == "__main__":
    main()
