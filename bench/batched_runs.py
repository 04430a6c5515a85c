"""A study's runs one by one against batched (`[run] batched = true`): CPU time, and whether they agree.

    .venv/bin/python bench/batched_runs.py [--config studies/gal2017/digits.toml] [--repeats R]
        [--max-labels L] [--acquisitions bald,random] [--epochs E] [--device cpu|cuda] [--threads 1]
        [--cpu-batch-mib 32,4096] [--times K]

Runs the same study twice in one process, into two fresh folders: `study.run_study` as the CLI
runs it with --jobs 1 (each (acquisition, repeat) run trains and scores its own network), then
with `batched = True` (`activebayes.batched_runs`: the runs' networks stacked, trained and
scored together), once per CPU budget in --cpu-batch-mib (how many runs' activations one
batched CPU call may hold; past it a run is left to its own loop). All with torch limited to
--threads intra-op threads (OMP_NUM_THREADS, so the batched runner keeps it too). A tiny untimed
study first loads the libraries. Prints each path's CPU time (all threads of this process) and
wall time, the ratios, and the agreement with the per-run study: the rounds whose queries are
identical, where a run parted, and the largest test-accuracy difference.
The options override the config's keys of the same name (e.g. a reduced mnist-300.toml).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import tempfile
import time
from pathlib import Path

from _common import bench_parser

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def timed(run, *args, **kwargs):  # noqa: ANN001, ANN201 - any callable, its result
    cpu, wall = time.process_time(), time.perf_counter()
    result = run(*args, **kwargs)
    return result, time.process_time() - cpu, time.perf_counter() - wall


def queries_by_round(database: Path) -> dict[str, list[list[str]]]:
    from activebayes.store import PoolStore

    with PoolStore(f"sqlite:///{database}") as store:
        return {name: [[q.key for q in store.queries(name, r.number)] for r in store.rounds(name)] for name in store.projects()}


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--config", default=str(ROOT / "studies" / "gal2017" / "digits.toml"))
    parser.add_argument("--repeats", type=int)
    parser.add_argument("--max-labels", type=int)
    parser.add_argument("--acquisitions", help="comma-separated subset of the config's acquisitions")
    parser.add_argument("--epochs", type=int)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--cpu-batch-mib", default="32", help="comma-separated CPU budgets (MiB) for the batched path, one timed run each "
                        "(lockstep.CPU_BATCH_BYTES; the default 32, a large one stacks every run)")  # fmt: skip
    parser.add_argument("--times", type=int, default=1, help="run each path this many times, alternating; the least time counts")
    parser.add_argument("--out", help="folder for the studies (default: a temporary one)")
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    import torch

    torch.set_num_threads(args.threads)
    from activebayes.batched_runs import lockstep
    from activebayes.study import StudyConfig, run_study

    config = StudyConfig.from_toml(args.config)
    overrides = {"repeats": args.repeats, "max_labels": args.max_labels, "epochs": args.epochs,
                 "acquisitions": tuple(args.acquisitions.split(",")) if args.acquisitions else None}  # fmt: skip
    config = dataclasses.replace(config, **{k: v for k, v in overrides.items() if v is not None})
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="batched-runs-"))
    warm = dataclasses.replace(config, repeats=1, max_labels=config.initial + config.batch_size, epochs=1)
    run_study(warm, out / "warm-per-run", device=args.device)
    run_study(dataclasses.replace(warm, batched=True), out / "warm-batched", device=args.device)

    budgets = [int(v) for v in args.cpu_batch_mib.split(",")]
    paths = ["one by one", *(f"batched, {mib} MiB" for mib in budgets)]
    times: dict[str, list[tuple[float, float]]] = {path: [] for path in paths}
    results = {}
    for k in range(args.times):  # every repetition gives the same results; the first of each is compared
        result, cpu, wall = timed(run_study, config, out / f"per-run-{k}", device=args.device)
        results.setdefault(paths[0], (result, out / f"per-run-{k}"))
        times[paths[0]].append((cpu, wall))
        for mib, path in zip(budgets, paths[1:]):
            lockstep.CPU_BATCH_BYTES = mib << 20
            folder = out / f"batched-{mib}-{k}"
            result, cpu, wall = timed(run_study, dataclasses.replace(config, batched=True), folder, device=args.device)
            results.setdefault(path, (result, folder))
            times[path].append((cpu, wall))
    runs = len(config.acquisitions) * config.repeats
    print(f"{config.name}: {runs} runs x {config.rounds_per_run} rounds, {args.device}, {args.threads} thread(s), best of {args.times}")
    best = {path: (min(c for c, _ in pairs), min(w for _, w in pairs)) for path, pairs in times.items()}
    for path, pairs in times.items():
        ratio = "" if path == paths[0] else f"   one by one / this: CPU {best[paths[0]][0] / best[path][0]:.2f}x, wall {best[paths[0]][1] / best[path][1]:.2f}x"
        print(f"  {path + ':':22} {best[path][0]:8.1f} s CPU {best[path][1]:8.1f} s wall{ratio}   (all CPU: {', '.join(f'{c:.1f}' for c, _ in pairs)})")
    one, one_folder = results[paths[0]]
    a = queries_by_round(one_folder / "study.db")
    for path in paths[1:]:
        both, folder = results[path]
        b = queries_by_round(folder / "study.db")
        same = sum(x == y for name in a for x, y in zip(a[name], b[name]))
        parted = sorted(f"{name} at round {next(i + 1 for i, (x, y) in enumerate(zip(a[name], b[name])) if x != y)}"
                        for name in a if a[name] != b[name])  # fmt: skip
        worst = max(abs(p[1] - q[1]) for acq in one.runs for ra, rb in zip(one.runs[acq], both.runs[acq]) for p, q in zip(ra, rb))
        print(f"  {path}: identical queries in {same}/{sum(len(v) for v in a.values())} rounds"
              + (f" (parted: {', '.join(parted)})" if parted else "") + f"; largest test-accuracy difference {worst:.2e}")


if __name__ == "__main__":
    main()
