"""Pool scoring on Ray against the local engine: MC-dropout BALD on an MLP over a tabular pool.

    .venv/bin/python bench/distributed.py [--pool 200000] [--batch-size 4096] [--samples 20] [--threads 1]

Measures, on the same fitted posterior and pool (random features [N, 32], an MLP 32-256-256-10,
MC dropout with shared masks, S=20):
  * local: activebayes.scoring.score_pool(..., engine="local") in this process;
  * ray, 1 and 2 workers: score_pool(..., engine="ray", workers=w) on a local Ray started here
    with 2 CPUs (one actor per worker, 1 torch thread each, the pool shipped once);
  * overhead, 1 worker, compute negligible: per score_pool call (one batch of one item: Ray Data
    planning, the actor pool's start and the posterior's shipping), and per map_batches call
    (1,024 one-item batches in 64 calls, minus the one-call cost, over the 63 extra calls), each
    with the local engine's time for the same batches subtracted.
Prints items/s, ratios against local, and checks that every engine chose the same top 100.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import torch

from _common import bench_parser, parse_and_set_threads

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from activebayes import distributed  # noqa: E402
from activebayes.acquisition import bald  # noqa: E402
from activebayes.nets import mlp  # noqa: E402
from activebayes.posteriors import MCDropout  # noqa: E402
from activebayes.scoring import score_pool  # noqa: E402
from activebayes.training import TrainConfig  # noqa: E402

FEATURES, CLASSES, TOP = 32, 10, 100


def fitted_posterior(samples: int) -> MCDropout:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(512, FEATURES, generator=g)
    y = x[:, :CLASSES].argmax(1)
    net = mlp(FEATURES, CLASSES, hidden=(256, 256), dropout=0.5)
    return MCDropout(net, n_samples=samples, train=TrainConfig(epochs=1), seed=0, device="cpu").fit(x, y)


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def overheads(posterior: MCDropout) -> tuple[float, float, int]:
    """(seconds per score_pool call, seconds per map_batches call, calls) beyond the local compute."""
    tiny = torch.randn(1024, FEATURES, generator=torch.Generator().manual_seed(2))

    def beyond_local(items: int) -> float:
        args = dict(batch_size=1, device="cpu", top_k=1)
        local_s, _ = timed(lambda: score_pool(posterior, tiny[:items], bald, **args))
        ray_s, _ = timed(lambda: score_pool(posterior, tiny[:items], bald, **args, engine="ray", workers=1))
        return ray_s - local_s

    calls = math.ceil(len(tiny) / distributed.ranges_per_call(len(tiny), 1))
    fixed = beyond_local(1)
    return fixed, (beyond_local(len(tiny)) - fixed) / (calls - 1), calls


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--pool", type=int, default=200_000, help="pool items")
    parser.add_argument("--batch-size", type=int, default=4096, help="items per predict call")
    parser.add_argument("--samples", type=int, default=20, help="S, dropout mask sets")
    args = parse_and_set_threads(parser)
    ray = distributed.import_ray()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    posterior = fitted_posterior(args.samples)
    pool = torch.randn(args.pool, FEATURES, generator=torch.Generator().manual_seed(1))
    common = dict(batch_size=args.batch_size, device="cpu", top_k=TOP)
    batches = math.ceil(args.pool / args.batch_size)

    local_s, local = timed(lambda: score_pool(posterior, pool, bald, **common))
    rows = [("local", local_s, local)]
    for workers in (1, 2):
        score_pool(posterior, pool[: args.batch_size * workers], bald, **common, engine="ray", workers=workers)  # warm-up
        seconds, result = timed(lambda: score_pool(posterior, pool, bald, **common, engine="ray", workers=workers))
        rows.append((f"ray, {workers} worker{'s' if workers > 1 else ''}", seconds, result))
    fixed, per_call, calls = overheads(posterior)

    print(f"pool {args.pool} x {FEATURES} features, MLP {FEATURES}-256-256-{CLASSES}, MC dropout S={args.samples}, "
          f"batch {args.batch_size}, torch threads {args.threads} (driver and each actor); local Ray, 2 CPUs")  # fmt: skip
    for name, seconds, result in rows:
        same = torch.equal(result.indices, local.indices)
        print(f"  {name:<16} {seconds:7.2f} s  {args.pool / seconds:10.0f} items/s  x{local_s / seconds:5.2f} of local  "
              f"top-{TOP} equal to local: {same}")  # fmt: skip
    print(f"  overhead (1 worker): per score_pool call {fixed * 1000:.0f} ms, per map_batches call {per_call * 1000:.1f} ms "
          f"(of {calls}; here {math.ceil(batches / distributed.ranges_per_call(batches, 1))} calls for the pool, "
          f"{local_s / batches * 1000:.0f} ms of compute per batch)")  # fmt: skip
    print(f"  ratios: ray-2/ray-1 {rows[1][1] / rows[2][1]:.2f}, ray-2/local {local_s / rows[2][1]:.2f}")
    ray.shutdown()


if __name__ == "__main__":
    main()
