"""Labelling page benchmark: answers per second and one answer's latency for concurrent labellers
over HTTP, beside the same answers recorded directly through the store (bench/labels.py).

    .venv/bin/python bench/serve.py [--labellers 8] [--answers 100] [--no-pg]

For each database (a temporary SQLite file; PostgreSQL at $ACTIVEBAYES_TEST_PG_URL, or
postgresql+psycopg://postgres@127.0.0.1:5432/test, when it answers, in a fresh schema):

* HTTP: `activebayes serve --labeller w0 ... --labeller w7` (uvicorn, in a child process) serves a
  project whose round waits for labellers x (answers + 1) queries. Each labeller is a process with its
  own httpx client: it asks for its first item (POST /next) and then answers the item shown, as
  the page's script does on a key press (POST /answer: one transaction through
  `PoolStore.record_labels`, then the next item's lease and card in the same response). The
  labellers start together (a barrier); every POST /answer is timed.
* direct: `bench/labels.py`'s measure, the same number of writer processes recording the same
  number of single answers through `PoolStore.record_labels`, no HTTP.

Reported: answers per second over the whole run (all answers / first start to last finish), and
the p50 and p99 latency of one answer. Afterwards no item holds more than one answer.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from labels import DEFAULT_PG, database, measure

CLI = str(Path(sys.executable).parent / "activebayes")


def setup(url: str, folder: Path, n: int) -> str:
    """A project of `n` table items (an .npz file) whose round 1 asks for all of them; its name."""
    from activebayes.store import PoolStore

    project = f"bench-serve-{uuid.uuid4().hex[:8]}"
    data = folder / f"{project}.npz"
    np.savez(data, x=np.random.default_rng(0).normal(size=(n, 4)).astype(np.float32))
    for args in (("init", "--name", project, "--classes", ",".join(map(str, range(10)))), ("--project", project, "pool", "add", str(data))):
        subprocess.run([CLI, "--db", url, "--quiet", *args], check=True, stdout=subprocess.DEVNULL)
    with PoolStore(url) as store:
        store.start_round(project, posterior="p", acquisition="a", seed=0)
        store.advance_round(project, 1, "fitted")
        ids, _ = store.candidates(project)
        store.record_queries(project, 1, ids.tolist(), np.linspace(1, 0, n).tolist(), timings={})
        store.advance_round(project, 1, "queried")
    return project


def start_server(url: str, project: str, labellers: int, folder: Path) -> tuple[subprocess.Popen, dict[str, str]]:
    """`activebayes serve` on a free port; (the process, {labeller: URL})."""
    names = [w for i in range(labellers) for w in ("--labeller", f"w{i}")]
    proc = subprocess.Popen([CLI, "--db", url, "--project", project, "--json", "serve", "--port", "0", *names],
                            cwd=folder, stdout=subprocess.PIPE, text=True)  # fmt: skip
    text = ""
    while True:  # the JSON document with the URLs, then the server runs
        line = proc.stdout.readline()
        if not line:
            raise SystemExit(f"activebayes serve exited with code {proc.wait()}")
        text += line
        try:
            return proc, json.loads(text)["urls"]
        except ValueError:
            continue


def labeller(url: str, answers: int, barrier, results) -> None:
    """Answer the item shown, `answers` times, timing each POST /answer; puts (start, end,
    latencies [answers]) on `results`, or the error's text."""
    try:
        results.put(_answer_all(url, answers, barrier))
    except Exception as exc:  # noqa: BLE001 - reported by the parent
        barrier.abort()
        results.put(f"{type(exc).__name__}: {exc}")


def _answer_all(url: str, answers: int, barrier) -> tuple[float, float, list[float]]:
    import httpx

    base, _, token = url.partition("/label?token=")
    with httpx.Client(timeout=120) as client:
        page = client.get(url).text
        csrf = page.split('data-csrf="', 1)[1].split('"', 1)[0]

        def post(action: str, **body) -> dict:
            response = client.post(f"{base}/{action}", params={"token": token}, json={"csrf": csrf, **body})
            response.raise_for_status()
            return response.json()

        barrier.wait()
        start = time.perf_counter()
        shown = post("next")
        latencies = []
        for i in range(answers):
            t0 = time.perf_counter()
            shown = post("answer", round=shown["round"], key=shown["shown"], value=str(i % 10))
            latencies.append(time.perf_counter() - t0)
            assert shown["status"] == "saved", shown
        end = time.perf_counter()
    return start, end, latencies


def measure_http(url: str, labellers: int, answers: int, folder: Path) -> tuple[float, np.ndarray]:
    project = setup(url, folder, labellers * answers + labellers)  # a free item for each, however the leases fall
    proc, urls = start_server(url, project, labellers, folder)
    try:
        ctx = mp.get_context("fork")
        barrier, results = ctx.Barrier(labellers), ctx.Queue()
        procs = [ctx.Process(target=labeller, args=(u, answers, barrier, results)) for u in urls.values()]
        for p in procs:
            p.start()
        runs = [results.get(timeout=600) for _ in procs]
        for p in procs:
            p.join()
        failed = [r for r in runs if isinstance(r, str)]
        if failed:
            raise SystemExit(f"a labeller failed: {failed[0]}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    from activebayes.store import PoolStore

    with PoolStore(url) as store:  # every answer recorded, each item once
        recorded = store.observations(project)
        assert len(recorded) == len({o["key"] for o in recorded}) == labellers * answers, len(recorded)
    wall = max(r[1] for r in runs) - min(r[0] for r in runs)
    return labellers * answers / wall, np.concatenate([r[2] for r in runs])


def each_database(folder: Path, no_pg: bool) -> Iterator[tuple[str, str]]:
    """(name, URL) of a SQLite file in `folder`, then (unless `no_pg`) of a fresh PostgreSQL schema
    at $ACTIVEBAYES_TEST_PG_URL or DEFAULT_PG when it answers (dropped once the caller moves on)."""
    for url in [f"sqlite:///{folder / 'serve.db'}"] + ([] if no_pg else [os.environ.get("ACTIVEBAYES_TEST_PG_URL", DEFAULT_PG)]):
        with database(url) as found:
            if found is not None:
                yield found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labellers", type=int, default=8, help="concurrent labellers (processes)")
    parser.add_argument("--answers", type=int, default=100, help="answers each labeller gives")
    parser.add_argument("--no-pg", action="store_true", help="SQLite only")
    args = parser.parse_args()
    if args.labellers < 1 or args.answers < 1:
        parser.error("--labellers and --answers must be positive")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, url in each_database(folder, args.no_pg):
            for how, run in (("HTTP", lambda: measure_http(url, args.labellers, args.answers, folder)),
                             ("direct", lambda: measure(url, args.labellers, args.answers))):  # fmt: skip
                rate, latency = run()
                rows.append((name, how, rate, *np.percentile(latency * 1000, [50, 99])))
    print(f"{args.labellers} labellers x {args.answers} answers, one transaction per answer; SQLite {sqlite3.sqlite_version}; {os.cpu_count()} CPUs")
    print(f"{'database':12s} {'path':8s} {'answers/s':>10s} {'p50 ms':>8s} {'p99 ms':>8s}")
    for name, how, rate, p50, p99 in rows:
        print(f"{name:12s} {how:8s} {rate:10.0f} {p50:8.2f} {p99:8.2f}")


if __name__ == "__main__":
    main()
