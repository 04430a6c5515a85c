"""Round memory: the peak resident memory of `activebayes round` on a 200,000-row table, the earlier reads of the features against today's, with the same queries.

    .venv/bin/python bench/round_memory.py [--rows 200000] [--folder DIR] [--keep]

The table (seeded, about 36 MB): an `id` key, 20 numeric columns with 2 % gaps, a categorical
column of 300 levels and two of 4 and 6, a date, a 5-class `label`; `pool add` makes features
[200,000, 355] float32 (284 MB), cached in a .npy that a round memory-maps. Two rounds, each run
the old way and the new from the same copy of the database, each in a child process (peak from
`os.wait4`, ru_maxrss), one thread:

    round 1: the first batch, TypiClust's typical items (`--first auto` on 5 classes, k = 10)
    round 2: a fit on 10 labels, then the pool fingerprinted and scored (mc-dropout, power-margin)

Old (the child restores the earlier code paths): each read of rows indexes the memory map, whose
pages stay mapped, a read-around of the file each (`ActiveLearningLoop._features`); the pool is
fingerprinted and scored max(16 B, 65,536) rows at a time (93 MB of features); TypiClust's PCA
works on a float32 copy of the candidates and centres a copy of that. New: rows are read from the
file (`data.mapped_rows.take_rows`), chunks are 16 MB of features, and the PCA centres the
round's own copy. The queries of each pair must be the same items, in the same order. The table is
written by a child too: a parent's resident memory counts in a forked child's ru_maxrss until it
execs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from big_table import EXE, copy_db, run_child

ROUNDS = ("round 1: typical first batch", "round 2: fit + score")  # each `round --oracle truth`


def write_table(path: Path, rows: int, seed: int = 0) -> None:
    """The benchmark's csv (module docstring)."""
    rng = np.random.default_rng(seed)
    numbers = rng.normal(size=(rows, 20)) * rng.uniform(0.5, 20, 20) + rng.uniform(-50, 50, 20)
    levels = [rng.integers(0, n, rows) for n in (300, 4, 6)]
    first = (numbers[:, :5] - numbers[:, :5].mean(0)) / numbers[:, :5].std(0)
    label = np.argmax(first @ rng.normal(size=(5, 5)) + rng.gumbel(size=(rows, 5)), axis=1)
    dates = (np.datetime64("2015-01-01") + rng.integers(0, 3000, rows)).astype(str)
    columns = [np.char.mod("k%07d", np.arange(rows))]
    for j in range(20):
        cells = np.char.mod("%.5g", numbers[:, j]).astype(object)
        cells[rng.random(rows) < 0.02] = ""
        columns.append(cells)
    columns += [np.char.mod(prefix, codes) for prefix, codes in zip(("L%03d", "q%d", "z%d"), levels)]
    columns += [dates, label.astype(str)]
    header = ["id", *(f"n{j}" for j in range(20)), "cat300", "cat4", "cat6", "when", "label"]
    path.write_text(",".join(header) + "\n" + "\n".join(",".join(row) for row in zip(*columns)) + "\n", encoding="utf-8")


def restore_old_paths() -> None:
    """The earlier reads of the features, in this process (module docstring)."""
    import torch

    import activebayes.acquisition.typical as typical
    from activebayes.loop import ActiveLearningLoop

    def old_features(self, rows):  # type: ignore[no-untyped-def]
        x = np.ascontiguousarray(self._pool_data().x[np.asarray(rows, dtype=np.int64)])
        return torch.from_numpy(x).float()

    def old_embed(x, *, seed=0, overwrite=False):  # type: ignore[no-untyped-def]
        from sklearn.decomposition import PCA

        arr = x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)
        flat = arr.reshape(arr.shape[0], -1).astype(np.float32)
        if flat.shape[1] > 64 and flat.shape[0] > typical.PCA_DIMS:
            flat = PCA(n_components=typical.PCA_DIMS, svd_solver="randomized", random_state=seed).fit_transform(flat).astype(np.float32)
        return flat

    ActiveLearningLoop._features = old_features
    ActiveLearningLoop._chunk_rows = lambda self: max(self.score_batch_size * 16, 1 << 16)
    typical.embed = old_embed


def child(way: str, argv: list[str]) -> None:
    """One CLI command in this process, the old way or the new."""
    if way == "old":
        restore_old_paths()
    from activebayes_cli.main import app

    app(argv, prog_name="activebayes")


def last_queries(db: Path) -> list[int]:
    """The item ids of the last round's queries, by rank."""
    with sqlite3.connect(db) as con:
        return [r[0] for r in con.execute(
            "SELECT q.item_id FROM queries q JOIN rounds r ON q.round_id = r.id WHERE r.number = (SELECT MAX(number) FROM rounds) ORDER BY q.rank"
        )]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--folder", type=Path, default=None, help="work here (default: a new temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the folder")
    parser.add_argument("--child", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child and args.child[0] == "table":
        return write_table(Path(args.child[1]), args.rows)
    if args.child:
        return child(args.child[0], args.child[1:])
    folder = args.folder or Path(tempfile.mkdtemp(prefix="round-memory-"))
    folder.mkdir(parents=True, exist_ok=True)
    table, db, start = folder / "table.csv", folder / "table.db", folder / "start.db"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "ACTIVEBAYES_DB": f"sqlite:///{db}"}
    me = [sys.executable, str(Path(__file__).resolve())]
    # the table is written by a child: a parent's resident memory counts in a child's ru_maxrss until it execs
    run_child([*me, "--rows", str(args.rows), "--child", "table", str(table)], folder, env)
    copy_db(None, db)
    shutil.rmtree(folder / "activebayes-cache", ignore_errors=True)
    for argv in (["init", "--name", "table", "--classes", "0,1,2,3,4"], ["pool", "add", str(table), "--label-column", "label"]):
        wall, peak, _, _ = run_child([str(EXE), *argv], folder, env)
        print(f"{' '.join(argv[:2]):28s} {wall:7.1f} s {peak:7.0f} MiB")
    copy_db(db, start)
    print(f"table: {table.stat().st_size / 1e6:.0f} MB, {args.rows:,} rows; peak MiB of each round (wall s)")
    print(f"{'':28s} {'old':>16s} {'new':>16s} {'old/new':>8s}  same queries")
    for what in ROUNDS:
        found = {}
        for way in ("old", "new"):
            copy_db(start, db)
            t0 = time.perf_counter()
            _, peak, _, _ = run_child([*me, "--child", way, "round", "--oracle", "truth"], folder, env)
            found[way] = (peak, time.perf_counter() - t0, last_queries(db))
        (old, old_s, old_q), (new, new_s, new_q) = found["old"], found["new"]
        print(f"{what:28s} {old:8.0f} ({old_s:5.1f}) {new:8.0f} ({new_s:5.1f}) {old / new:8.2f}  {'yes' if old_q == new_q else 'NO'}", flush=True)
        copy_db(db, start)  # the next round starts where this one left the database (the new way's)
    if not args.keep and args.folder is None:
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
