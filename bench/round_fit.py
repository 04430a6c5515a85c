"""A round's fit: the default network trained with torch's intra-op threads (the earlier path) against one thread (now).

    .venv/bin/python bench/round_fit.py [--threads N] [--labels 20,200,2000] [--features 326] [--repeats 3]

What `activebayes round` fits on a table: mc-dropout over the default MLP (D -> 128 -> 128 -> C,
dropout 0.5), its training sized to the labels as the CLI sizes it (`SizedFit`: at least 50
epochs and 500 steps of 64), on L labelled rows of D standard-normal features and C = 5 classes.
Before, the fit ran on torch's intra-op threads (--threads, default: torch's own, one a core);
now `SizedFit` trains on one (`training_threads`). The networks are small, so the threads
share little work and wait on each other at every step: on 2 cores shared with other work the
earlier fit of 20 labels took 50 s of a 116 s round (1.7 s on one thread). Both paths run here,
alternating, best of --repeats each (wall and CPU seconds), with the largest difference of
their predicted probabilities on 1,000 rows (the same seed, the same masks and batches: the
threads change only the float rounding of the steps). Ratio: before / now.
"""

from __future__ import annotations

import time

import numpy as np
import torch
from _common import bench_parser, parse_and_set_threads

import activebayes_cli._threads as threads_module
from activebayes.nets import mlp
from activebayes.posteriors import resolve_posterior
from activebayes_cli._model import SizedFit

CLASSES = 5


def fit(x: torch.Tensor, y: torch.Tensor, *, one_thread: bool) -> tuple[float, float, torch.Tensor]:
    """(wall s, CPU s, mean predicted probabilities [1000, C]) of one SizedFit, on one thread or torch's."""
    original = threads_module.is_small_mlp
    if not one_thread:
        threads_module.is_small_mlp = lambda model: False  # the earlier path: no thread change
    try:
        sized = SizedFit(resolve_posterior("mc-dropout"), mlp(x.shape[1], CLASSES), {"device": "cpu"}, seed=0)
        wall, cpu = time.perf_counter(), time.process_time()
        posterior = sized.fit(x, y)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finally:
        threads_module.is_small_mlp = original
    torch.manual_seed(0)
    with torch.inference_mode():
        probs = posterior.predict_proba(x[:1000])
    return wall, cpu, probs


def main() -> None:
    parser = bench_parser(__doc__, threads=torch.get_num_threads())
    parser.add_argument("--labels", default="20,200,2000", help="labelled set sizes, comma-separated")
    parser.add_argument("--features", type=int, default=326)
    parser.add_argument("--repeats", type=int, default=3)
    args = parse_and_set_threads(parser)
    rng = np.random.default_rng(0)
    print(f"mc-dropout, MLP {args.features}-128-128-{CLASSES}; before: {torch.get_num_threads()} intra-op threads, now: 1")
    print(f"{'labels':>7} {'before s':>9} {'cpu s':>7} {'now s':>7} {'cpu s':>7} {'ratio':>6}  max |dp|")
    for n in (int(v) for v in args.labels.split(",")):
        x = torch.from_numpy(rng.normal(size=(max(n, 1000), args.features)).astype(np.float32))
        y = torch.from_numpy(rng.integers(0, CLASSES, size=n))
        before, now, gap = [], [], 0.0
        for _ in range(args.repeats):
            b, n_ = fit(x[:n], y, one_thread=False), fit(x[:n], y, one_thread=True)
            before.append(b[:2])
            now.append(n_[:2])
            gap = max(gap, float((b[2] - n_[2]).abs().max()))
        (bw, bc), (nw, nc) = min(before), min(now)
        print(f"{n:>7} {bw:>9.2f} {bc:>7.2f} {nw:>7.2f} {nc:>7.2f} {bw / nw:>6.1f}  {gap:.1e}")


if __name__ == "__main__":
    main()
