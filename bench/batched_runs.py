"""A study's runs one by one against batched (`[run] batched = true`): CPU time, and whether they agree.

    .venv/bin/python bench/batched_runs.py [--config studies/gal2017/digits.toml] [--repeats R]
        [--max-labels L] [--acquisitions bald,random] [--epochs E] [--device cpu|cuda] [--threads 1]

Runs the same study twice in one process, into two fresh folders: `study.run_study` as the CLI
runs it with --jobs 1 (each (acquisition, repeat) run trains and scores its own network), then
with `batched = True` (`activebayes.batched_runs`: the runs' networks stacked, trained and
scored together). Both with torch limited to --threads intra-op threads (OMP_NUM_THREADS, so the
batched runner keeps it too). A tiny untimed study first loads the libraries. Prints each path's
CPU time (all threads of this process) and wall time, the ratio, and the agreement: per run, the
label counts whose queries are identical, and the largest test-accuracy difference.
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
    parser.add_argument("--times", type=int, default=1, help="run each path this many times, alternating; the least time counts")
    parser.add_argument("--out", help="folder for the studies (default: a temporary one)")
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    import torch

    torch.set_num_threads(args.threads)
    from activebayes.study import StudyConfig, run_study

    config = StudyConfig.from_toml(args.config)
    overrides = {"repeats": args.repeats, "max_labels": args.max_labels, "epochs": args.epochs,
                 "acquisitions": tuple(args.acquisitions.split(",")) if args.acquisitions else None}  # fmt: skip
    config = dataclasses.replace(config, **{k: v for k, v in overrides.items() if v is not None})
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="batched-runs-"))
    warm = dataclasses.replace(config, repeats=1, max_labels=config.initial + config.batch_size, epochs=1)
    run_study(warm, out / "warm-per-run", device=args.device)
    run_study(dataclasses.replace(warm, batched=True), out / "warm-batched", device=args.device)

    times: dict[str, list[tuple[float, float]]] = {"one by one": [], "batched": []}
    for k in range(args.times):  # the results of every repetition are the same; the first pair is compared
        result, cpu, wall = timed(run_study, config, out / f"per-run-{k}", device=args.device)
        one = result if k == 0 else one
        times["one by one"].append((cpu, wall))
        result, cpu, wall = timed(run_study, dataclasses.replace(config, batched=True), out / f"batched-{k}", device=args.device)
        both = result if k == 0 else both
        times["batched"].append((cpu, wall))
    runs = len(config.acquisitions) * config.repeats
    print(f"{config.name}: {runs} runs x {config.rounds_per_run} rounds, {args.device}, {args.threads} thread(s), best of {args.times}")
    for path, pairs in times.items():
        print(f"  {path + ':':11} {min(c for c, _ in pairs):8.1f} s CPU  {min(w for _, w in pairs):8.1f} s wall   (all CPU: {', '.join(f'{c:.1f}' for c, _ in pairs)})")
    cpu_ratio = min(c for c, _ in times["one by one"]) / min(c for c, _ in times["batched"])
    wall_ratio = min(w for _, w in times["one by one"]) / min(w for _, w in times["batched"])
    print(f"  ratio (one by one / batched): CPU {cpu_ratio:.2f}x, wall {wall_ratio:.2f}x")
    a, b = queries_by_round(out / "per-run-0" / "study.db"), queries_by_round(out / "batched-0" / "study.db")
    for name in sorted(a):
        same = sum(x == y for x, y in zip(a[name], b[name]))
        first = next((i + 1 for i, (x, y) in enumerate(zip(a[name], b[name])) if x != y), None)
        print(f"  {name}: identical queries in {same}/{len(a[name])} rounds" + ("" if first is None else f" (first differs at round {first})"))
    worst = max(abs(p[1] - q[1]) for acq in one.runs for ra, rb in zip(one.runs[acq], both.runs[acq]) for p, q in zip(ra, rb))
    print(f"  largest test-accuracy difference: {worst:.2e}")


if __name__ == "__main__":
    main()
