"""MC dropout on Kirsch et al.'s CNN (channel dropout right after the first conv): our tail against S full passes.

    .venv/bin/python bench/mc_dropout_tail.py [--pool 2048] [--samples 100] [--batch-size 1024] [--device cpu|cuda]

Kirsch, van Amersfoort & Gal's MNIST CNN (`activebayes.nets.batchbald_cnn`) puts Dropout2d right
after the first conv, so nothing but that conv is deterministic and every later layer runs once
per mask set. Timed in one process, on the same weights, masks and pool:
  * ours: `MCDropout.predict_logits` (prefix cached; the channel mask passes max-pool and ReLU
    and folds into the second conv's weights, one conv with S·64 output channels);
  * full passes: the same posterior with `prefix_cache=False`, S forward passes of the whole
    network with the masks applied by hooks (what a dropout wrapper such as BaaL's does);
  * plain: one deterministic forward pass (no sampling), the speed of light.
Prints items/s and the ratios, and the largest difference between the two predictives (the
same function, so float rounding only). The pool is MNIST's test images when ../shared/data/mnist
exists, else random images of that shape; the weights are untrained (speed does not depend on them).
"""

from __future__ import annotations

import gzip
import sys
import time
from pathlib import Path

import numpy as np
import torch

from _common import bench_parser, parse_and_set_threads

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from activebayes.nets import batchbald_cnn  # noqa: E402
from activebayes.posteriors import MCDropout  # noqa: E402
from activebayes.training import TrainConfig  # noqa: E402

MNIST = ROOT.parent / "shared" / "data" / "mnist" / "t10k-images-idx3-ubyte.gz"


def load_pool(n: int) -> tuple[torch.Tensor, str]:
    """[n, 1, 28, 28] float images in [0, 1]: MNIST's test images when present, else uniform noise."""
    if MNIST.exists():
        with gzip.open(MNIST, "rb") as f:
            images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
        images = np.resize(images, (n, 1, 28, 28))  # repeats the 10,000 images past n = 10,000
        return torch.from_numpy(images.astype(np.float32) / 255.0), "(MNIST test images)"
    return torch.rand(n, 1, 28, 28, generator=torch.Generator().manual_seed(0)), "(random images: MNIST not found)"


def timed(fn, x: torch.Tensor, batch: int, device: torch.device, repeats: int) -> tuple[float, torch.Tensor]:
    """Best-of-`repeats` seconds to run fn over x in batches, and the last output (on the CPU)."""
    best, out = float("inf"), None
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        parts = [fn(x[i : i + batch]) for i in range(0, x.shape[0], batch)]
        if device.type == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
        out = torch.cat(parts, dim=-2 if parts[0].dim() == 3 else 0).cpu()
    return best, out


def main() -> None:
    parser = bench_parser(__doc__, threads=2)
    parser.add_argument("--pool", type=int, default=2048)
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    args = parse_and_set_threads(parser)
    device = torch.device(args.device)
    pool, source = load_pool(args.pool)
    pool = pool.to(device)
    S, B = args.samples, args.batch_size
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU, {torch.get_num_threads()} threads"
    print(f"pool {pool.shape[0]} x {tuple(pool.shape[1:])} {source}; S={S}, batch {B}; torch {torch.__version__} on {name}")

    # Fit for one step only to set the posterior up; the timings do not depend on the weights.
    posterior = MCDropout(batchbald_cnn(), n_samples=S, train=TrainConfig(epochs=1, batch_size=64), seed=0, device=device)
    posterior.fit(pool[:64].cpu(), torch.arange(64) % 10)
    model = posterior.model_

    def logits(prefix_cache: bool):
        def run(x: torch.Tensor) -> torch.Tensor:
            posterior.prefix_cache = prefix_cache  # the same weights and masks; only the path differs
            return posterior.predict_logits(x)

        return run

    ours, full_passes = logits(True), logits(False)

    def plain(x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return model(x)

    for fn in (plain, ours, full_passes):  # warm-up: kernels, masks, folded weights
        fn(pool[:B])
    seconds = {}
    seconds["plain"], _ = timed(plain, pool, B, device, args.repeats)
    seconds["ours"], fast = timed(ours, pool, B, device, args.repeats)
    seconds["full passes"], slow = timed(full_passes, pool, B, device, args.repeats)
    n = pool.shape[0]
    for label, s in seconds.items():
        samples = 1 if label == "plain" else S
        print(f"  {label:<12} {s:8.3f} s  {n / s:12,.0f} items/s  ({n * samples / s:14,.0f} item-samples/s)")
    print(f"ours / full passes: {seconds['full passes'] / seconds['ours']:.1f}x faster; "
          f"ours against plain x S: {seconds['ours'] / (seconds['plain'] * S):.2f}")
    print(f"max |Δ logit| ours against full passes: {float((fast - slow).abs().max()):.2e}")


if __name__ == "__main__":
    main()
