"""Labelling page benchmark on a large pool: the time to the first item on a freshly started
server, and one answer's latency, for one labeller over HTTP, as the page's script asks.

    .venv/bin/python bench/page.py [--rows 100000] [--queries 300] [--no-pg]

For each database (a temporary SQLite file; PostgreSQL at $ACTIVEBAYES_TEST_PG_URL, or
postgresql+psycopg://postgres@127.0.0.1:5432/test, when it answers, in a fresh schema): a csv of
`--rows` rows (a key, six numeric columns, a short text column, 10 classes) is added with `pool
add`, and round 1 asks for the first `--queries` pool items. Then `activebayes serve` (uvicorn, a
child process) starts, and one labeller:

* first item: GET /label (the page; the server reads and checks the data file once here) then
  POST /next (the first card), timed from the GET to the card; then the same on the warm server;
* per answer: POST /answer on the item shown (one transaction, then the next item's lease and
  card in the same response), `--queries` - 1 times; p50 and p99.

Measured 2026-11-28, shared 2-core machine, `bench/page.py` (100,000 rows, 300 queries): first
item 0.48 s on a cold server and 172 ms warm (SQLite), 0.58 s and 188 ms (PostgreSQL); one answer
p50 82.8 ms, p99 138.6 ms (SQLite), p50 152.0 ms, p99 224.3 ms (PostgreSQL). With 2,000 rows and
50 queries: 87.9 ms and 156.0 ms p50: an answer's cost does not grow with the pool.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

from serve import CLI, each_database, start_server


def write_csv(path: Path, rows: int) -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(rows, 6))
    words = np.array(["quiet", "bright", "river", "engine", "paper", "garden", "Zürich", "São"])
    notes = [" ".join(w) for w in words[rng.integers(0, len(words), size=(rows, 4))]]
    with path.open("w") as fh:
        fh.write("id,a,b,c,d,e,f,note,label\n")
        for i in range(rows):
            fh.write(f"k{i:07d},{','.join(f'{v:.4f}' for v in x[i])},{notes[i]},{i % 10}\n")


def setup(url: str, folder: Path, rows: int, queries: int) -> str:
    from activebayes.store import PoolStore

    project = f"bench-page-{uuid.uuid4().hex[:8]}"
    data = folder / f"{project}.csv"
    write_csv(data, rows)
    for args in (("init", "--name", project, "--classes", ",".join(map(str, range(10)))),
                 ("--project", project, "pool", "add", str(data), "--key-column", "id", "--text-column", "note")):  # fmt: skip
        subprocess.run([CLI, "--db", url, "--quiet", *args], check=True, stdout=subprocess.DEVNULL)
    with PoolStore(url) as store:
        store.start_round(project, posterior="p", acquisition="a", seed=0)
        store.advance_round(project, 1, "fitted")
        ids, _ = store.candidates(project)
        store.record_queries(project, 1, ids[:queries].tolist(), np.linspace(1, 0, queries).tolist(), timings={})
        store.advance_round(project, 1, "queried")
    return project


def measure(url: str, folder: Path, rows: int, queries: int) -> tuple[float, float, np.ndarray]:
    """(cold first item s, warm first item s, answer latencies s)."""
    import httpx

    project = setup(url, folder, rows, queries)
    proc, urls = start_server(url, project, 1, folder)
    try:
        page_url = next(iter(urls.values()))
        base, _, token = page_url.partition("/label?token=")
        with httpx.Client(timeout=300) as client:

            def first_item() -> tuple[float, dict, str]:
                t0 = time.perf_counter()
                page = client.get(page_url).text
                csrf = page.split('data-csrf="', 1)[1].split('"', 1)[0]
                shown = client.post(f"{base}/next", params={"token": token}, json={"csrf": csrf}).json()
                return time.perf_counter() - t0, shown, csrf

            cold, _, _ = first_item()
            warm, shown, csrf = first_item()
            latencies = []
            for i in range(queries - 1):
                t0 = time.perf_counter()
                response = client.post(f"{base}/answer", params={"token": token},
                                       json={"csrf": csrf, "round": shown["round"], "key": shown["shown"], "value": str(i % 10)})  # fmt: skip
                latencies.append(time.perf_counter() - t0)
                shown = response.json()
                assert shown["status"] == "saved", shown
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return cold, warm, np.array(latencies)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000, help="pool rows")
    parser.add_argument("--queries", type=int, default=300, help="queries of the round (answers timed: one fewer)")
    parser.add_argument("--no-pg", action="store_true", help="SQLite only")
    args = parser.parse_args()
    if args.rows < 2 or not 2 <= args.queries <= args.rows:
        parser.error("expected --rows >= --queries >= 2")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, url in each_database(Path(tmp), args.no_pg):
            cold, warm, latency = measure(url, Path(tmp), args.rows, args.queries)
            rows.append((name, cold, warm, *np.percentile(latency * 1000, [50, 99])))
    print(f"one labeller, a pool of {args.rows} csv rows, a round of {args.queries} queries; {os.cpu_count()} CPUs")
    print(f"{'database':12s} {'first item, cold s':>19s} {'warm ms':>8s} {'answer p50 ms':>14s} {'p99 ms':>8s}")
    for name, cold, warm, p50, p99 in rows:
        print(f"{name:12s} {cold:19.2f} {warm * 1000:8.1f} {p50:14.2f} {p99:8.2f}")


if __name__ == "__main__":
    main()
