"""MC dropout with a mask per item (Gal et al.'s protocol) on Gal's MNIST CNN: ours against BaaL 2.1.

    .venv/bin/python bench/independent_masks.py [--pool 2000] [--samples 100] [--batch-size 1024] [--threads 1]

`studies/gal2017/mnist-300.toml` scores a 2,000-image pool subset each round with S = 100 dropout
passes and a fresh mask for every image, pass and dropout layer (`masks = "independent"`, as the
paper's Keras code does at test time). Timed in one process, on the same weights and pool:
  * ours: `MCDropout(masks="independent").predict_logits`: the layers before the first dropout
    once per image, then S passes of the tail (`independent_tail`), each mask drawn as
    [b ≥ 256 p] from one random byte per entry (`keep_mask_`) into a buffer kept across passes;
  * ours, float masks: the path before that (619bfad): forward hooks, each mask drawn as
    [u < 1 − p] from a float uniform per entry into a fresh tensor, (h ⊙ m) / (1 − p) in another;
  * ours, Bernoulli masks: the path before that: masks drawn with torch's `bernoulli_`, the
    prefix's channels-last output read in every pass;
  * BaaL: `MCDropoutModule(model)` (dropout kept on at test time) wrapped in `ModelWrapper` with
    replicate_in_memory=False, `predict_on_batch(x, iterations=S)`: S passes of the whole network (BaaL's fastest path for
    this network: its caching module needs consistent masks). Skipped with a note when baal is
    not installed (`./dev.sh bench` installs it);
  * plain: one deterministic pass (dropout off), the speed of light for S = 1.
Prints seconds (best of --repeats), items/s, each path's time against ours, and how many plain
passes take as long as ours' S. The pool is MNIST's test images when ../shared/data/mnist exists, else random
images of that shape; the weights come from one short fit (speed does not depend on them).
"""

from __future__ import annotations

import copy
import sys
import warnings
from pathlib import Path

import torch
from torch import nn

from _common import bench_parser, parse_and_set_threads
from mc_dropout_tail import load_pool, timed

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from activebayes.nets import gal_cnn  # noqa: E402
from activebayes.posteriors import MCDropout  # noqa: E402
from activebayes.posteriors.dropout_tail import _MASKED, flatten_sequential, run_prefix  # noqa: E402
from activebayes.training import TrainConfig  # noqa: E402


def earlier_passes(posterior: MCDropout, x: torch.Tensor, generator: torch.Generator, draw: str) -> torch.Tensor:
    """An earlier path: prefix once, S hooked passes of the tail, each mask in a fresh tensor.
    draw="bernoulli": `bernoulli_` masks, the prefix's channels-last output read in every pass;
    draw="float" (619bfad): [u < 1 − p] from float uniforms, the prefix laid out once."""
    layers = flatten_sequential(posterior.model_)
    tail = nn.Sequential(*layers[posterior.split_ :])

    def apply_mask(module: nn.Module, args: tuple, output: torch.Tensor) -> torch.Tensor:
        keep = 1.0 - float(module.p)
        m = torch.empty(args[0].shape, dtype=args[0].dtype)
        m = m.bernoulli_(keep, generator=generator) if draw == "bernoulli" else m.uniform_(generator=generator).lt_(keep)
        return (args[0] * m).div_(keep)

    with torch.no_grad():
        h = run_prefix(layers[: posterior.split_], x)
        h = h if draw == "bernoulli" else h.contiguous()
        handles = [m.register_forward_hook(apply_mask) for m in tail.modules() if isinstance(m, _MASKED)]
        try:
            return torch.stack([tail(h) for _ in range(posterior.n_samples)])
        finally:
            for handle in handles:
                handle.remove()


def main() -> None:
    parser = bench_parser(__doc__, threads=1)
    parser.add_argument("--pool", type=int, default=2000)
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=3)
    args = parse_and_set_threads(parser)
    device = torch.device("cpu")
    pool, source = load_pool(args.pool)
    S, B = args.samples, args.batch_size
    print(f"pool {pool.shape[0]} x {tuple(pool.shape[1:])} {source}; S={S}, batch {B}; torch {torch.__version__} "
          f"on CPU, {torch.get_num_threads()} threads")
    posterior = MCDropout(gal_cnn(), n_samples=S, masks="independent", train=TrainConfig(epochs=1, batch_size=64), seed=0,
                          device=device)  # fmt: skip
    posterior.fit(pool[:64], torch.arange(64) % 10)
    model = posterior.model_
    generator = torch.Generator().manual_seed(0)

    def plain(x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return model.eval()(x)

    paths = {"ours": posterior.predict_logits, "ours, float masks": lambda x: earlier_passes(posterior, x, generator, "float"),
             "ours, Bernoulli masks": lambda x: earlier_passes(posterior, x, generator, "bernoulli")}  # fmt: skip
    try:
        from baal.bayesian.dropout import MCDropoutModule
        from baal.modelwrapper import ModelWrapper, TrainingArgs

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            baal_args = TrainingArgs(criterion=nn.CrossEntropyLoss(), batch_size=B, use_cuda=False, replicate_in_memory=False,
                                     workers=0)  # fmt: skip
            wrapper = ModelWrapper(MCDropoutModule(copy.deepcopy(model)), baal_args)
        paths["BaaL"] = lambda x: wrapper.predict_on_batch(x, iterations=S).permute(2, 0, 1)  # [B, C, S] -> [S, B, C]
    except ImportError:
        print("BaaL: not installed (./dev.sh bench installs it); skipped")
    paths["plain"] = plain
    for fn in paths.values():  # warm-up
        fn(pool[:B])
    seconds = {label: timed(fn, pool, B, device, args.repeats)[0] for label, fn in paths.items()}
    n = pool.shape[0]
    for label, s in seconds.items():
        samples = 1 if label == "plain" else S
        ratio = "" if label == "plain" else f"  {s / seconds['ours']:6.2f}x ours' time"
        print(f"  {label:<22} {s:8.3f} s  {n / s:10,.0f} items/s  ({n * samples / s:13,.0f} item-samples/s){ratio}")
    print(f"ours: {S} sampled passes in the time of {seconds['ours'] / seconds['plain']:.1f} plain passes")


if __name__ == "__main__":
    main()
