"""BatchBALD: activebayes.acquisition.batch_bald against batchbald-redux, in one process.

    .venv/bin/python bench/batch_bald.py                      # 10 of 10,000, S=100, C=10
    .venv/bin/python bench/batch_bald.py --pool 2000 --skip-full

Data: a logistic-normal predictive with structure. G clusters of near-duplicate candidates; the
logits of candidate n in cluster g under posterior sample s are b_g + (A_g + B_n) z_s + δ_n, with a
shared latent z_s ~ N(0, I_d) per sample, so candidates of one cluster carry nearly the same
information and clusters overlap through z. Top-k BALD piles into a few clusters; BatchBALD should
not. Probabilities are float32 [S, N, C]; batchbald-redux gets the same as log_probs [N, S, C].

Both use the same number of sampled configurations (`--num-samples`, batchbald-redux's
num_samples): exact joint entropies while C^t <= num_samples, sampled configurations beyond.

Wall time: time.perf_counter around each call, all in this process, inputs prepared beforehand;
each method first runs once on a tiny pool (warm-up). Peak memory: the resident-set high-water
mark (VmHWM) of this process, reset to the current RSS by writing 5 to /proc/self/clear_refs
before each call (after gc and malloc_trim), minus the RSS before the call: the extra resident
memory the call needed at its peak, torch CPU allocations included. Runs in one process can still
share freed-but-resident heap pages; for an isolated figure run each method in a fresh process
with --only lazy|full|redux.
Quality: the joint mutual information I[y_B; θ] of each selected batch, by one estimator for all
(the Monte-Carlo branch of `joint_mutual_information`: exact p(Y) per configuration, averaged over
--mi-samples ancestral draws with common random numbers), with its standard error.

--device cuda runs ours and batchbald-redux on the GPU (the predictive moved there beforehand; the
clock stops after torch.cuda.synchronize()) and reports the GPU's peak allocated memory instead of
the resident set's.

Measured 2026-11-27, shared 2-core CPU machine (load average ~14), torch 2.13 CPU, command
`.venv/bin/python bench/batch_bald.py --skip-full --threads 1`:
    ours (lazy)         20.2 s wall   8.10 s CPU    +78 MiB   joint MI 4.4602 ± 0.0079 nats
    batchbald-redux   1354.6 s wall 266.8 s CPU  +1241 MiB   4.4673 ± 0.0080
    top-k BALD                                               4.2091 ± 0.0103
i.e. 32.9x in process CPU time (67.1x in wall time: the load slowed batchbald-redux's wall time
5x its CPU time), 16x less peak memory, joint MI equal within its standard error. Process CPU
time with one thread is the ratio other processes' load moves least; see README_EXPERIMENTS.md.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import os
import time

import torch

from _common import bench_parser, parse_and_set_threads
from activebayes.acquisition import bald, batch_bald, top_k
from activebayes.acquisition.batch_bald import _sampled_joint_entropy_terms
from activebayes.acquisition._entropy import expected_entropy


def make_predictive(S: int, N: int, C: int, *, clusters: int, latent: int = 8, seed: int = 0) -> torch.Tensor:
    """probs [S, N, C] of the clustered logistic-normal model in the module docstring."""
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(S, latent, generator=g)
    cluster = torch.arange(N) * clusters // N
    b = 1.5 * torch.randn(clusters, C, generator=g)
    A = torch.randn(clusters, C, latent, generator=g) * (0.2 + torch.rand(clusters, 1, 1, generator=g))
    delta = 0.3 * torch.randn(N, C, generator=g)
    B = 0.1 * torch.randn(N, C, latent, generator=g)
    logits = b[cluster][None] + torch.einsum("ncd,sd->snc", A[cluster] + B, z) + delta[None]
    return torch.softmax(logits, dim=-1).contiguous()


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _release_free_heap() -> None:
    """Give freed heap pages back to the OS, so an earlier run's garbage does not hide this one's."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def measure(fn, device: str = "cpu"):
    """(result, wall seconds, process CPU seconds, peak extra MiB) of fn(); on CUDA the peak is the
    GPU's allocated memory above what was allocated before the call."""
    gc.collect()
    _release_free_heap()
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated() / 1024
    else:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        before = _status_kib("VmRSS")
    start, cpu = time.perf_counter(), time.process_time()
    result = fn()
    if device == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu
    peak = ((torch.cuda.max_memory_allocated() / 1024 if device == "cuda" else _status_kib("VmHWM")) - before) / 1024
    return result, seconds, cpu, peak


def quiet_redux():
    import batchbald_redux.batchbald as bb
    import batchbald_redux.joint_entropy as je
    from tqdm.auto import tqdm

    silent = functools.partial(tqdm, disable=True)
    bb.tqdm = silent
    je.tqdm = silent
    return bb.get_batchbald_batch


def joint_mi(probs: torch.Tensor, indices, num_samples: int, seed: int) -> tuple[float, float]:
    """Joint MI and its Monte-Carlo standard error (common random numbers via seed)."""
    index = torch.as_tensor(indices, dtype=torch.long)
    weights = torch.full((probs.shape[0],), 1.0 / probs.shape[0])
    terms = _sampled_joint_entropy_terms(probs[:, index], weights, num_samples, torch.Generator().manual_seed(seed))
    cond = expected_entropy(probs[:, index].double(), weights.double()).sum()
    return float(terms.mean() - cond), float(terms.std() / terms.numel() ** 0.5)


def main() -> None:
    # --threads defaults to torch's own thread count (one thread gives CPU-time ratios that other
    # processes on a loaded machine barely move).
    parser = bench_parser(__doc__, threads=torch.get_num_threads())
    parser.add_argument("--pool", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--num-samples", type=int, default=10_000)
    parser.add_argument("--cluster-size", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mi-samples", type=int, default=200_000)
    parser.add_argument("--skip-full", action="store_true", help="do not run ours with lazy=False")
    parser.add_argument("--skip-redux", action="store_true")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--only", choices=["lazy", "full", "redux"],
                        help="run one method alone (a fresh process per method isolates its memory figure)")
    args = parse_and_set_threads(parser)
    run_lazy = args.only in (None, "lazy")
    args.skip_full = args.skip_full or args.only not in (None, "full")
    args.skip_redux = args.skip_redux or args.only not in (None, "redux")

    probs = make_predictive(
        args.samples, args.pool, args.classes, clusters=max(1, args.pool // args.cluster_size), seed=args.seed
    )
    log_probs = probs.log().permute(1, 0, 2).contiguous()  # [N, S, C] for batchbald-redux
    device = args.device
    on_device = probs.to(device)
    print(f"pool N={args.pool}, S={args.samples}, C={args.classes}, k={args.k}, num_samples={args.num_samples}, "
          f"torch threads={torch.get_num_threads()}, device {torch.cuda.get_device_name() if device == 'cuda' else 'cpu'}",
          flush=True)  # fmt: skip

    # Warm-up on a tiny pool, so that first-call costs (code pages, thread pools) count for neither.
    tiny = make_predictive(args.samples, 64, args.classes, clusters=4, seed=args.seed + 7).to(device)
    batch_bald(tiny, 3, num_samples=100, max_joint_configs=100, generator=torch.Generator(device).manual_seed(0))
    if not args.skip_redux:
        quiet_redux()(tiny.log().permute(1, 0, 2).contiguous(), 3, 100)  # on the device, as the timed call

    runs = {}  # name: (indices, wall s, process CPU s, peak MiB)
    ours = functools.partial(
        batch_bald, on_device, args.k, num_samples=args.num_samples, max_joint_configs=args.num_samples
    )
    if run_lazy:
        sel, sec, cpu, mib = measure(lambda: ours(generator=torch.Generator(device).manual_seed(args.seed)), device)
        runs["ours (lazy)"] = (sel.indices.tolist(), sec, cpu, mib)
        print(f"ours (lazy)      {sec:8.2f} s  peak +{mib:7.1f} MiB  {sel.indices.tolist()}", flush=True)
    if not args.skip_full:
        sel, sec, cpu, mib = measure(lambda: ours(lazy=False, generator=torch.Generator(device).manual_seed(args.seed)), device)
        runs["ours (lazy=False)"] = (sel.indices.tolist(), sec, cpu, mib)
        print(f"ours (lazy=False){sec:8.2f} s  peak +{mib:7.1f} MiB  {sel.indices.tolist()}", flush=True)
    if not args.skip_redux:
        get_batchbald_batch = quiet_redux()
        torch.manual_seed(args.seed)  # batchbald-redux samples with the global generator
        redux_input = log_probs.to(device)
        res, sec, cpu, mib = measure(lambda: get_batchbald_batch(redux_input, args.k, args.num_samples), device)
        runs["batchbald-redux"] = (list(res.indices), sec, cpu, mib)
        print(f"batchbald-redux  {sec:8.2f} s  peak +{mib:7.1f} MiB  {list(res.indices)}", flush=True)

    runs["top-k BALD"] = (top_k(bald(probs), args.k).indices.tolist(), float("nan"), float("nan"), float("nan"))
    print("\nmethod             wall s   peak MiB   joint MI (nats) ± s.e.   clusters hit")
    for name, (indices, sec, _, mib) in runs.items():
        mi, se = joint_mi(probs, indices, args.mi_samples, seed=args.seed + 1)
        hit = len({i * max(1, args.pool // args.cluster_size) // args.pool for i in indices})
        print(f"{name:18s} {sec:7.2f}  {mib:9.1f}   {mi:.4f} ± {se:.4f}          {hit}")
    if "batchbald-redux" in runs:
        _, redux_s, redux_cpu, redux_mib = runs["batchbald-redux"]
        for name in ("ours (lazy)", "ours (lazy=False)"):
            if name in runs:
                _, sec, cpu, mib = runs[name]
                print(f"{name}: {redux_s / sec:.1f}x faster than batchbald-redux ({redux_cpu / cpu:.1f}x in process CPU time: "
                      f"{cpu:.2f} vs {redux_cpu:.2f} s), peak memory {mib:.0f} vs {redux_mib:.0f} MiB")
    print(f"load average after: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

if __name__ == "__main__":
    main()
