"""EPIG against BALD on one pool: time and peak memory of activebayes.acquisition.epig.

    .venv/bin/python bench/epig.py                        # N = 10,000 and 50,000; M = 1,000, S = 20, C = 10
    .venv/bin/python bench/epig.py --pools 2000 --targets 200 --threads 2

Data: probabilities p(y | x_n, θ_s) drawn i.i.d. from a Dirichlet(0.5, ..., 0.5) per sample and
item, float32: candidates [S, N, C] and targets [S, M, C] (the targets' own draws, as if M pool
items had been predicted with the same S samples), wrapped in validated Predictives beforehand so
that the timed calls are the scores alone. EPIG's work is O(N · M · S · C²) multiply-adds for the
joint predictive distributions (one matmul per block) and O(N · M · C²) logarithms for their
entropies, against O(N · S · C) logarithms for BALD: the time ratio grows with M.

Wall time: time.perf_counter around each call, in this process, after a warm-up on a tiny pool.
Peak memory: the extra resident memory at the call's peak, as in bench/batch_bald.py (the
resident-set high-water mark VmHWM, reset to the current RSS through /proc/self/clear_refs before
the call, minus the RSS before it; torch's CPU allocations are included, which tracemalloc does
not see), or torch.cuda.max_memory_allocated above what was allocated before (--device cuda).
EPIG holds one candidate chunk in float64 and one joint block [a·C, b·C] (2^22 float64 elements,
32 MiB, allocated once per call) at a time, so its peak does not grow with N; BALD's [S, N, C]
temporaries do.

Measured 2026-11-27, shared 2-core CPU machine, torch 2.13 CPU, `.venv/bin/python bench/epig.py`
(M = 1,000, S = 20, C = 10; load ~1.6):
         N    EPIG s    BALD s    ratio  EPIG +MiB  BALD +MiB  inputs MiB
     10000      5.19    0.0159      326       39.7       16.5         8.4
     50000     25.27    0.0938      269       39.5       82.0        38.9
and with --threads 2: 3.99 s / 12.68 s for EPIG (ratios 237 and 257), the same memory figures.
EPIG's time is linear in N (5 x the pool, 4.9 x the time) and its peak flat (+39.6 MiB at both
sizes). Timings on that machine move with other users' load.
"""

from __future__ import annotations

import gc
import time

import torch

from _common import bench_parser, parse_and_set_threads
from activebayes.acquisition import bald, epig
from activebayes.predictive import Predictive
from batch_bald import measure  # the VmHWM-based peak of one call (this folder is on sys.path)


def dirichlet(S: int, N: int, C: int, seed: int, device: str) -> torch.Tensor:
    """probs [S, N, C] float32, each row ~ Dirichlet(0.5 · 1_C)."""
    g = torch.Generator().manual_seed(seed)
    return torch._sample_dirichlet(torch.full((S, N, C), 0.5), generator=g).to(device)


def run(fn, device: str):
    """(result, seconds, extra peak MiB) of fn(), on the CPU or a CUDA device."""
    if device == "cpu":
        return measure(fn)
    gc.collect()
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    result = fn()
    torch.cuda.synchronize()
    return result, time.perf_counter() - start, (torch.cuda.max_memory_allocated() - base) / 2**20


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--pools", type=int, nargs="+", default=[10_000, 50_000], help="pool sizes N")
    parser.add_argument("--targets", type=int, default=1_000, help="target inputs M")
    parser.add_argument("--samples", type=int, default=20, help="posterior samples S")
    parser.add_argument("--classes", type=int, default=10, help="classes C")
    parser.add_argument("--device", default="cpu")
    args = parse_and_set_threads(parser)
    S, M, C = args.samples, args.targets, args.classes
    target = dirichlet(S, M, C, 1, args.device)
    epig(dirichlet(S, 64, C, 2, args.device), target[:, :64])  # warm-up
    bald(dirichlet(S, 64, C, 2, args.device))
    print(f"M={M}, S={S}, C={C}, device={args.device}, torch threads={torch.get_num_threads()}")
    print(f"{'N':>8} {'EPIG s':>9} {'BALD s':>9} {'ratio':>8} {'EPIG +MiB':>10} {'BALD +MiB':>10} {'inputs MiB':>11}")
    target = Predictive(target)  # validated here: the calls below time the scores alone
    for N in args.pools:
        probs = Predictive(dirichlet(S, N, C, 0, args.device))
        scores, t_epig, m_epig = run(lambda: epig(probs, target), args.device)
        check, t_bald, m_bald = run(lambda: bald(probs), args.device)
        assert scores.shape == (N,) and bool((scores <= check + 1e-5).all())  # EPIG <= BALD
        inputs = (probs.probs.numel() + target.probs.numel()) * 4 / 2**20
        print(f"{N:>8} {t_epig:>9.2f} {t_bald:>9.4f} {t_epig / t_bald:>8.0f} {m_epig:>10.1f} {m_bald:>10.1f} {inputs:>11.1f}", flush=True)
        del probs, scores, check


if __name__ == "__main__":
    main()
