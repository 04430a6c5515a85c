"""Pool scoring throughput: MC dropout (S=20) + BALD on Gal's MNIST CNN, ours against BaaL 2.1.

    .venv/bin/python bench/scoring.py [--pool 20000] [--baal-pool 2000] [--batch-size 512] [--threads 2]

Measures, in one process and on the same weights:
  * plain: one deterministic forward pass over the pool (no sampling), model(x) as trained;
  * plain, fast path: the same deterministic pass through MCDropout's CPU prefix path
    (`dropout_tail.run_prefix` on the network without its dropouts: channels-last convolutions,
    in-place ReLU), the speed of light for ours, whose prefix runs that way;
  * ours: activebayes.scoring.score_pool(MCDropout(...), pool, bald) at S=20;
  * BaaL default: ModelWrapper(MCDropoutModule(model), replicate_in_memory=True)
    .predict_on_dataset(iterations=20) + baal.active.heuristics.BALD;
  * BaaL fastest: MCCachingModule(MCDropoutModule(model)) with replicate_in_memory=False.
Prints items/s, ratios (ours against both plain passes also timed alternating on quarters of
the pool, --rounds times, median of the rounds' ratios in wall and in process CPU time, as other
processes' load drifts), and peak resident memory above the process's baseline (Linux VmHWM,
reset before each run through /proc/self/clear_refs), and ours at a 10x smaller pool to show
that memory does not grow with the pool. BaaL is timed on the first --baal-pool items (its
default path runs S full passes and would take many minutes on 20,000); items/s is a rate,
and BaaL's memory is reported at both sizes it ran. The pool is MNIST's training images when
../shared/data/mnist exists, else random images of the same shape (the output says which).
The weights are a Gal CNN trained for one epoch on 256 images: throughput does not depend on them.
--device cuda scores on the GPU: the pool stays in host memory and each batch is copied over, for
ours, the plain passes (model(x) on the GPU, results back to the host) and BaaL (use_cuda=True)
alike; each timed call ends with its results on the host. Peak memory is then also the GPU's
(torch.cuda.max_memory_allocated above the allocation before the call).
"""

from __future__ import annotations

import copy
import gzip
import logging
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset

from _common import bench_parser, parse_and_set_threads

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from activebayes.nets import gal_cnn  # noqa: E402
from activebayes.posteriors import MCDropout  # noqa: E402
from activebayes.posteriors.dropout_tail import _MASKED, flatten_sequential, run_prefix  # noqa: E402
from activebayes.training import TrainConfig  # noqa: E402
from activebayes.scoring import score_pool  # noqa: E402

MNIST = ROOT.parent / "shared" / "data" / "mnist" / "train-images-idx3-ubyte.gz"
S = 20


def bald(pred) -> torch.Tensor:
    """activebayes.acquisition.bald when present, else the same formula inline."""
    try:
        from activebayes.acquisition import bald as library_bald

        return library_bald(pred)
    except ImportError:
        probs = pred.probs
        mean = probs.mean(0)
        return -(mean * mean.clamp_min(1e-12).log()).sum(-1) + (probs * probs.clamp_min(1e-12).log()).sum(-1).mean(0)


def load_pool(n: int) -> tuple[torch.Tensor, str]:
    if MNIST.is_file():
        with gzip.open(MNIST, "rb") as handle:
            data = handle.read()
        images = np.frombuffer(data, dtype=np.uint8, offset=16).reshape(-1, 1, 28, 28)[:n]
        return torch.from_numpy(images.astype(np.float32) / 255.0), f"MNIST training images ({MNIST.parent})"
    generator = torch.Generator().manual_seed(0)
    return torch.rand(n, 1, 28, 28, generator=generator), "RANDOM images 1x28x28 (MNIST not found at ../shared/data/mnist)"


def rss_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def measure(fn):
    """(seconds, peak MiB above the start: resident memory, or on CUDA the GPU's allocation, result)."""
    if torch.cuda.is_initialized():
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before_gpu = torch.cuda.memory_allocated()
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")  # reset VmHWM to the current resident size
        can_reset = True
    except OSError:
        can_reset = False
    before = rss_kib("VmRSS")
    start = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - start
    if torch.cuda.is_initialized():
        return seconds, (torch.cuda.max_memory_allocated() - before_gpu) / 2**20, result
    peak = (rss_kib("VmHWM") - before) / 1024 if can_reset else float("nan")
    return seconds, peak, result


class Images(Dataset):
    """BaaL reads a torch Dataset of (x, y)."""

    def __init__(self, x: torch.Tensor) -> None:
        self.x = x

    def __len__(self) -> int:
        return self.x.shape[0]

    def __getitem__(self, i: int):
        return self.x[i], 0


def main() -> None:
    parser = bench_parser(__doc__, threads=2)
    parser.add_argument("--pool", type=int, default=20_000)
    parser.add_argument("--baal-pool", type=int, default=2_000)
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--skip-baal", action="store_true")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the alternating timing")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    args = parse_and_set_threads(parser)
    device = args.device
    pool, source = load_pool(args.pool)
    print(f"pool: {pool.shape[0]} x {tuple(pool.shape[1:])} {source}")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, batch {args.batch_size}, S={S}, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, "
          f"device {torch.cuda.get_device_name() if device == 'cuda' else 'cpu'}")

    labels = torch.arange(256) % 10
    posterior = MCDropout(gal_cnn(), n_samples=S, train=TrainConfig(epochs=1, batch_size=64), seed=0, device="cpu")
    posterior.fit(pool[:256], labels)
    model = copy.deepcopy(posterior.model_).to(device)  # the plain passes' copy (score_pool moves the posterior's own)
    B = args.batch_size

    def plain(x: torch.Tensor) -> torch.Tensor:
        with torch.inference_mode():
            return torch.cat([model(x[i : i + B].to(device)).softmax(-1).max(-1).values for i in range(0, x.shape[0], B)]).cpu()

    deterministic = [layer for layer in flatten_sequential(model) if not isinstance(layer, _MASKED)]

    def plain_fast(x: torch.Tensor) -> torch.Tensor:
        with torch.inference_mode():
            return torch.cat([run_prefix(deterministic, x[i : i + B].to(device)).softmax(-1).max(-1).values
                              for i in range(0, x.shape[0], B)]).cpu()  # fmt: skip

    def ours(x: torch.Tensor) -> torch.Tensor:
        return score_pool(posterior, x, bald, batch_size=B, device=device).scores

    results: dict[str, tuple[float, float, int]] = {}
    ours(pool[:B])  # warm-up: draws the masks and folds them into the weights once
    ours_small = measure(lambda: ours(pool[: args.pool // 10]))
    t, mem, scores = measure(lambda: ours(pool))
    results["ours"] = (t, mem, pool.shape[0])
    t, mem, _ = measure(lambda: plain(pool))
    results["plain deterministic pass"] = (t, mem, pool.shape[0])
    t, mem, _ = measure(lambda: plain_fast(pool))
    results["plain deterministic pass, fast path"] = (t, mem, pool.shape[0])
    # the machine is shared: time ours and the plain passes again, alternating on quarters of the pool
    # (wall and process CPU seconds: with one thread, CPU time is what other processes' load moves least)
    rounds, cpu_rounds = [], []
    for _ in range(args.rounds):
        alternating = {"ours": 0.0, "plain": 0.0, "fast": 0.0}
        cpu = dict(alternating)
        for part in pool.chunk(4):
            for name, fn in (("ours", ours), ("plain", plain), ("fast", plain_fast)):
                start, start_cpu = time.perf_counter(), time.process_time()
                fn(part)
                alternating[name] += time.perf_counter() - start
                cpu[name] += time.process_time() - start_cpu
        rounds.append((alternating["plain"] / alternating["ours"], alternating["fast"] / alternating["ours"]))
        cpu_rounds.append((cpu["plain"] / cpu["ours"], cpu["fast"] / cpu["ours"]))
    alternating_plain = float(np.median([r[0] for r in rounds]))
    alternating_fast = float(np.median([r[1] for r in rounds]))

    baal_rows = []
    side_by_side: dict[str, float] = {}  # BaaL's time over ours on the same items, timed just before and after
    if args.skip_baal:
        print("BaaL: skipped (--skip-baal)")
    else:
        try:
            import structlog

            structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))  # BaaL's info lines
            from baal.active.heuristics import BALD
            from baal.bayesian.caching_utils import MCCachingModule
            from baal.bayesian.dropout import MCDropoutModule
            from baal.modelwrapper import ModelWrapper, TrainingArgs
        except ImportError as exc:
            print(f"BaaL: not importable ({exc}); install baal==2.1.0 to compare. Skipping BaaL.")
        else:
            n = min(args.baal_pool, pool.shape[0])
            criterion = torch.nn.CrossEntropyLoss()

            def baal_run(wrapped: torch.nn.Module, replicate: bool, x: torch.Tensor) -> np.ndarray:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    wrapper = ModelWrapper(
                        wrapped,
                        TrainingArgs(criterion=criterion, batch_size=B, use_cuda=device == "cuda", replicate_in_memory=replicate,
                                     workers=0),  # fmt: skip
                    )
                    logits = wrapper.predict_on_dataset(Images(x), iterations=S, verbose=False)  # [N, C, S]
                return BALD().compute_score(logits)

            default = MCDropoutModule(copy.deepcopy(model)).to(device)
            fastest = MCCachingModule(MCDropoutModule(copy.deepcopy(model))).to(device)
            for name, wrapped, replicate in (
                ("BaaL default (MCDropoutModule, replicate_in_memory=True)", default, True),
                ("BaaL fastest (MCCachingModule, replicate_in_memory=False)", fastest, False),
            ):
                small = measure(lambda: baal_run(wrapped, replicate, pool[: max(n // 10, B)]))
                ours_before = measure(lambda: ours(pool[:n]))[0]
                t, mem, baal_scores = measure(lambda: baal_run(wrapped, replicate, pool[:n]))
                ours_after = measure(lambda: ours(pool[:n]))[0]
                results[name] = (t, mem, n)
                side_by_side[name] = t / ((ours_before + ours_after) / 2)
                baal_rows.append((name, small[1], mem))
                ours_bald = scores[:n].numpy()
                print(f"  {name}: BALD corr with ours {np.corrcoef(ours_bald, baal_scores)[0, 1]:.3f} "
                      f"(different masks, so not equal; same weights)")

    print(f"\n{'method':<62}{'items':>7}{'seconds':>9}{'items/s':>10}{'peak MiB':>10}")
    rate = {}
    for name, (t, mem, n) in results.items():
        rate[name] = n / t
        print(f"{name:<62}{n:>7}{t:>9.2f}{n / t:>10.0f}{mem:>10.1f}")
    print(f"\nours / plain deterministic pass: {rate['ours'] / rate['plain deterministic pass']:.2f} of its throughput "
          f"(alternating quarters of the pool, median of {args.rounds} rounds: {alternating_plain:.2f}; "
          f"rounds {', '.join(f'{r[0]:.2f}' for r in rounds)})")
    print(f"ours / plain deterministic pass, fast path: {rate['ours'] / rate['plain deterministic pass, fast path']:.2f} "
          f"(alternating: {alternating_fast:.2f}; rounds {', '.join(f'{r[1]:.2f}' for r in rounds)})")
    print(f"in process CPU time, median of the rounds: {np.median([r[0] for r in cpu_rounds]):.2f} of the plain pass, "
          f"{np.median([r[1] for r in cpu_rounds]):.2f} of the fast-path pass (rounds "
          f"{', '.join(f'{a:.2f}/{b:.2f}' for a, b in cpu_rounds)}; with several threads it counts their spinning too)")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    for name in results:
        if name.startswith("BaaL"):
            print(f"ours / {name}: {rate['ours'] / rate[name]:.1f}x "
                  f"(ours on the same {results[name][2]} items just before and after: {side_by_side[name]:.1f}x)")
    print(f"\nours, peak MiB above baseline: {ours_small[1]:.1f} at {args.pool // 10} items, "
          f"{results['ours'][1]:.1f} at {args.pool} items (flat = does not grow with the pool)")
    for name, small_mem, mem in baal_rows:
        print(f"{name}, peak MiB: {small_mem:.1f} at {max(min(args.baal_pool, args.pool) // 10, B)} items, {mem:.1f} at "
              f"{min(args.baal_pool, args.pool)} items")


if __name__ == "__main__":
    main()
