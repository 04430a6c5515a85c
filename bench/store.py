"""Store benchmark: import N items and run one round's query bookkeeping, against plain sqlite3.

    .venv/bin/python bench/store.py [--n 1000000] [--repeat 2] [--pg postgresql+psycopg://...] [--skip-sqlite]

Ours: `PoolStore.add_items` (one transaction, Core insert compiled once with the shared values
as literals, executemany in chunks), then `candidates` (the pool read as whole columns, less its
labelled items), `record_queries` for a batch of 100 and `record_answers` for them. Peer: plain
`sqlite3.executemany` of the same rows into a table with the same DDL (copied from our database:
same indexes, foreign key and pragmas), then the candidates' select (fetchall) and the inserts
written by hand. Both run in this process, alternating, best of `--repeat`. Goal: ours at most
1.1x the peer.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path

import numpy as np

from activebayes.store import PoolStore

K = 100


def ours(folder: Path, n: int) -> tuple[float, float]:
    db = folder / f"ours-{time.monotonic_ns()}.db"
    store = PoolStore(f"sqlite:///{db}")
    store.create_project("bench", classes=range(10))
    t0 = time.perf_counter()
    store.add_items("bench", rows=np.arange(n))
    t_import = time.perf_counter() - t0
    store.start_round("bench", posterior="p", acquisition="a", seed=0)
    store.advance_round("bench", 1, "fitted")
    t0 = time.perf_counter()
    ids, rows = store.candidates("bench")
    chosen = ids[:K]
    store.record_queries("bench", 1, chosen, np.linspace(1, 0, K), timings={})
    store.advance_round("bench", 1, "queried")
    keys = [q.key for q in store.queries("bench", 1)]
    store.record_answers("bench", 1, [(k, 1) for k in keys], who="bench", source="bench", complete=True)
    t_round = time.perf_counter() - t0
    store.close()
    return t_import, t_round


def peer(folder: Path, n: int, ddl: list[str]) -> tuple[float, float]:
    db = folder / f"peer-{time.monotonic_ns()}.db"
    con = sqlite3.connect(db, isolation_level=None)
    for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=ON"):
        con.execute(f"PRAGMA {pragma}")
    for statement in ddl:
        con.execute(statement)
    con.execute("INSERT INTO projects (id, name, task, settings, created_at) VALUES (1, 'bench', 'classification', '{}', '')")
    con.execute(
        "INSERT INTO rounds (id, project_id, number, posterior, posterior_settings, acquisition, acquisition_settings,"
        " status, labelled_count, metrics, seed, timings, created_at, updated_at)"
        " VALUES (1, 1, 1, 'p', '{}', 'a', '{}', 'fitted', 0, '{}', 0, '{}', '', '')"
    )
    t0 = time.perf_counter()
    con.execute("BEGIN")
    con.executemany(
        'INSERT INTO items (project_id, "key", "row", consumable, split) VALUES (?, ?, ?, ?, ?)',
        [(1, str(i), i, True, "pool") for i in range(n)],
    )
    con.execute("COMMIT")
    t_import = time.perf_counter() - t0
    t0 = time.perf_counter()
    ids = [r[0] for r in con.execute(
        "SELECT id, \"row\" FROM items WHERE project_id = 1 AND split = 'pool' AND (consumable = 0 OR NOT EXISTS"
        " (SELECT 1 FROM observations WHERE observations.item_id = items.id)) ORDER BY id"
    )]  # fmt: skip
    con.execute("BEGIN")
    con.executemany("INSERT INTO queries (round_id, item_id, score, rank) VALUES (1, ?, ?, ?)",
                    [(i, 1.0 - r / K, r) for r, i in enumerate(ids[:K])])  # fmt: skip
    con.execute("UPDATE rounds SET status = 'scored' WHERE id = 1")
    con.execute("COMMIT")
    con.execute("BEGIN")
    con.execute("UPDATE rounds SET status = 'queried' WHERE id = 1")
    con.execute("COMMIT")
    con.execute("BEGIN")
    con.executemany("INSERT INTO observations (item_id, value, who, source, round_id, created_at) VALUES (?, '1', 'bench', 'bench', 1, '')",
                    [(i,) for i in ids[:K]])  # fmt: skip
    con.execute("UPDATE rounds SET status = 'answered' WHERE id = 1")
    con.execute("COMMIT")
    t_round = time.perf_counter() - t0
    con.close()
    return t_import, t_round


def postgres(base_url: str, n: int) -> tuple[float, float]:
    """(ours, plain psycopg executemany) seconds to import n items, each into a fresh schema."""
    import uuid

    import psycopg
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    admin = create_engine(base_url)
    times = []
    for who in ("ours", "peer"):
        schema = f"ab_bench_{uuid.uuid4().hex[:10]}"
        with admin.begin() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        url = make_url(base_url).update_query_dict({"options": f"-csearch_path={schema}"})
        try:
            store = PoolStore(url.render_as_string(False))
            store.create_project("bench", classes=range(10))
            pid = store.project("bench").id
            t0 = time.perf_counter()
            if who == "ours":
                store.add_items("bench", rows=np.arange(n))
            else:
                dsn = url.set(drivername="postgresql").render_as_string(False)
                with psycopg.connect(dsn) as con, con.cursor() as cur:
                    cur.executemany('INSERT INTO items (project_id, "key", "row", consumable, split) VALUES (%s, %s, %s, %s, %s)',
                                    [(pid, str(i), i, True, "pool") for i in range(n)])  # fmt: skip
            times.append(time.perf_counter() - t0)
            store.close()
        finally:
            with admin.begin() as conn:
                conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    admin.dispose()
    return times[0], times[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--pg", metavar="URL", help="also import into PostgreSQL (ours: COPY; peer: psycopg executemany)")
    parser.add_argument("--skip-sqlite", action="store_true")
    args = parser.parse_args()
    if args.pg:
        o, p = postgres(args.pg, args.n)
        print(f"{'postgresql import':40s} ours {o:8.3f} s   psycopg executemany {p:8.3f} s   ratio {o / p:5.2f}x")
    if args.skip_sqlite:
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        schema_db = folder / "schema.db"
        PoolStore(f"sqlite:///{schema_db}").close()
        with sqlite3.connect(schema_db) as con:
            ddl = [sql for (sql,) in con.execute(
                "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name != 'alembic_version'"
                " ORDER BY CASE type WHEN 'table' THEN 0 ELSE 1 END, rowid"
            )]  # fmt: skip
        best_ours = [float("inf")] * 2
        best_peer = [float("inf")] * 2
        for _ in range(args.repeat):
            best_peer = [min(a, b) for a, b in zip(best_peer, peer(folder, args.n, ddl))]
            best_ours = [min(a, b) for a, b in zip(best_ours, ours(folder, args.n))]
    print(f"items: {args.n:,}; best of {args.repeat}; SQLite {sqlite3.sqlite_version}")
    for label, o, p in (("import", best_ours[0], best_peer[0]), (f"round (select + {K} queries + answers)", best_ours[1], best_peer[1])):
        print(f"{label:40s} ours {o:8.3f} s   plain sqlite3 {p:8.3f} s   ratio {o / p:5.2f}x")


if __name__ == "__main__":
    main()
