"""Last-layer Laplace benchmark: ours vs laplace-torch, fit + probit predictive over 10,000 inputs.

    .venv/bin/python bench/laplace.py [--hessians kron diag full] [--repeats 3] [--threads 1]

One MLP (D_in=20 → 128 → 128 → C=10, ReLU; "full" uses 64-unit hidden layers, as laplace-torch's
dense path costs N·C·P² per prediction) is trained briefly on 5,000 synthetic points with the shared
`train`. Both libraries then fit a last-layer GGN Laplace with the same structure at prior
precision 1.0 (laplace-torch: `Laplace(net, "classification", subset_of_weights="last_layer",
hessian_structure=h)`, `fit(DataLoader(batch_size=500))`; its predictive `la(x, pred_type="glm",
link_approx="probit")` in batches of 1,000 inputs; ours: `Laplace(model=net, ...)`,
`fit(x, y)`, `predict_proba(x)`), and the script checks that the probabilities agree.

Time: median of `--repeats` runs of (fit + predict), interleaved, in this one process: wall
seconds, and the main thread's CPU seconds (`time.thread_time`; both libraries compute in the
calling thread at 1 thread), which a machine loaded by other work disturbs far less.
Peak memory: the largest resident-set growth above the pre-run baseline (sampled every 1 ms by a
thread, after `gc.collect()` and `malloc_trim`), so it is approximate on CPU.
"""

from __future__ import annotations

import ctypes
import gc
import statistics
import sys
import threading
import time
import warnings
from pathlib import Path

import psutil
import torch
from torch import nn

from _common import bench_parser, parse_and_set_threads
from activebayes.posteriors.laplace import Laplace
from activebayes.training import TrainConfig, build_model, train

# This file is bench/laplace.py: keep its folder off the path so `import laplace` finds laplace-torch.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
import laplace  # noqa: E402  (laplace-torch, the peer)

N_TRAIN, N_TEST, D_IN, C = 5000, 10_000, 20, 10


class PeakRSS:
    """Context manager: `peak` = max RSS growth (bytes) above the entry baseline."""

    def __enter__(self) -> PeakRSS:
        gc.collect()
        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except OSError:
            pass
        self._proc = psutil.Process()
        self._base = self._proc.memory_info().rss
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()
        return self

    def _poll(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._proc.memory_info().rss - self._base)
            time.sleep(0.001)

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._proc.memory_info().rss - self._base)


def make_problem(hidden: int):
    g = torch.Generator().manual_seed(0)
    centres = 2 * torch.randn(C, D_IN, generator=g)
    y = torch.randint(0, C, (N_TRAIN + N_TEST,), generator=g)
    x = centres[y] + 1.5 * torch.randn(N_TRAIN + N_TEST, D_IN, generator=g)

    def factory() -> nn.Module:
        return nn.Sequential(nn.Linear(D_IN, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, C))

    net = train(build_model(factory, 0), x[:N_TRAIN], y[:N_TRAIN], TrainConfig(epochs=3, lr=1e-2, batch_size=128),
                seed=0, device="cpu")
    return net, x[:N_TRAIN], y[:N_TRAIN], x[N_TRAIN:]


def run_ours(net, x, y, x_test, hessian):
    la = Laplace(model=net, hessian=hessian, prior_precision=1.0, seed=0, device="cpu").fit(x, y)
    return la.predict_proba(x_test)


def run_theirs(net, x, y, x_test, hessian):
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=500)
    la = laplace.Laplace(net, "classification", subset_of_weights="last_layer", hessian_structure=hessian,
                         prior_precision=1.0)
    la.fit(loader)
    return torch.cat([la(chunk, pred_type="glm", link_approx="probit") for chunk in x_test.split(1000)])


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--hessians", nargs="+", default=["kron", "diag", "full"])
    parser.add_argument("--repeats", type=int, default=3)
    args = parse_and_set_threads(parser)
    warnings.filterwarnings("ignore")
    print(f"torch {torch.__version__}, {args.threads} thread(s); N_train={N_TRAIN}, N_test={N_TEST}, C={C}")
    print(f"{'hessian':8} {'P':>6} {'ours s':>9} {'theirs s':>9} {'speed-up':>9} {'ours MB':>8} {'theirs MB':>9} {'max |Δp|':>9}"
          f" {'ours CPU s':>10} {'theirs CPU s':>12} {'CPU speed-up':>12}")  # fmt: skip
    for hessian in args.hessians:
        hidden = 64 if hessian == "full" else 128
        net, x, y, x_test = make_problem(hidden)
        p_ours, p_theirs = run_ours(net, x, y, x_test, hessian), run_theirs(net, x, y, x_test, hessian)  # warm-up
        diff = float((p_ours - p_theirs).abs().max())
        times: dict[str, list[float]] = {"ours": [], "theirs": []}
        cpu: dict[str, list[float]] = {"ours": [], "theirs": []}
        peaks: dict[str, int] = {"ours": 0, "theirs": 0}
        for _ in range(args.repeats):
            for name, fn in (("ours", run_ours), ("theirs", run_theirs)):
                with PeakRSS() as mem:
                    start, start_cpu = time.perf_counter(), time.thread_time()
                    fn(net, x, y, x_test, hessian)
                    times[name].append(time.perf_counter() - start)
                    cpu[name].append(time.thread_time() - start_cpu)
                peaks[name] = max(peaks[name], mem.peak)
        ours, theirs = statistics.median(times["ours"]), statistics.median(times["theirs"])
        p = (hidden + 1) * C
        ours_cpu, theirs_cpu = statistics.median(cpu["ours"]), statistics.median(cpu["theirs"])
        print(f"{hessian:8} {p:6d} {ours:9.3f} {theirs:9.3f} {theirs / ours:8.1f}x "
              f"{peaks['ours'] / 2**20:8.1f} {peaks['theirs'] / 2**20:9.1f} {diff:9.1e}"
              f" {ours_cpu:10.3f} {theirs_cpu:12.3f} {theirs_cpu / ours_cpu:11.1f}x")  # fmt: skip


if __name__ == "__main__":
    main()
