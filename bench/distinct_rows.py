"""Distinct rows benchmark: a round's groups of equal inputs, fingerprinted every round against once per loop.

    .venv/bin/python bench/distinct_rows.py [--rows 100000] [--features 256] [--rounds 5] [--k 10]

A round chooses among one row of each group with equal features (`PoolSelection._distinct`,
`activebayes.same_rows`). Before, every round fingerprinted its candidates' features (a pass over
N x D floats); now a loop fingerprints each row once, in the first round that has it among its
candidates (`_fingerprints`), and each round indexes its candidates' fingerprints and groups them
(a lexsort of [N, 2] uint64). Both run here
in one process on one float32 pool whose rows repeat (one row in ten a copy of another), over
`--rounds` rounds whose candidates lose k rows each; both give the same positions and groups.
Reported: seconds a round, best of 3 each (the new path's first round from an empty cache each
time: it fingerprints every candidate, as before).
"""

from __future__ import annotations

import time

import numpy as np
import torch
from _common import bench_parser, parse_and_set_threads

from activebayes._selection import PoolSelection
from activebayes.same_rows import first_and_sizes, row_fingerprints


class Pool(PoolSelection):
    """The selection mixin over an in-memory pool (`_pool_data().x`, `_features` as the loop has them)."""

    score_batch_size = 256

    def __init__(self, x: np.ndarray) -> None:
        self.x = x

    def _pool_data(self):  # noqa: ANN202
        return self

    def _features(self, rows: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(self.x[np.asarray(rows, dtype=np.int64)])).float()


def before(pool: Pool, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The earlier `_distinct`: the candidates' features fingerprinted chunk by chunk, every round."""
    chunk = max(pool.score_batch_size * 16, 1 << 16)
    prints = [row_fingerprints(pool._features(rows[start : start + chunk]).numpy()) for start in range(0, len(rows), chunk)]
    return first_and_sizes(np.concatenate(prints))


def best(f, repeats: int = 3) -> tuple[float, object]:  # noqa: ANN001
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--features", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--k", type=int, default=10)
    args = parse_and_set_threads(parser)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.rows, args.features), dtype=np.float32)
    copies = rng.choice(args.rows, args.rows // 10, replace=False)
    x[copies] = x[rng.integers(0, args.rows, len(copies))]
    candidates = np.arange(args.rows)
    old, new = Pool(x), Pool(x)
    print(f"pool {args.rows:,} x {args.features} float32, {args.rounds} rounds, k = {args.k}, {args.threads} thread(s)")
    totals = [0.0, 0.0]
    for number in range(1, args.rounds + 1):
        t_old, (keep_old, sizes_old) = best(lambda: before(old, candidates))
        reset = (lambda: setattr(new, "_row_prints", None)) if number == 1 else (lambda: None)  # round 1: from an empty cache
        t_new, (keep_new, sizes_new) = best(lambda: (reset(), new._distinct(candidates, args.k))[1])
        assert np.array_equal(keep_old, keep_new) and np.array_equal(sizes_old, sizes_new)
        totals[0], totals[1] = totals[0] + t_old, totals[1] + t_new
        print(f"round {number}: {len(candidates):,} candidates, {len(keep_new):,} distinct; before {t_old:.3f} s, after {t_new:.3f} s")
        candidates = np.delete(candidates, rng.choice(len(candidates), args.k, replace=False))
    print(f"{args.rounds} rounds: before {totals[0]:.3f} s, after {totals[1]:.3f} s")

if __name__ == "__main__":
    main()
