"""What a model variant changes in the fitted posterior: one fit per variant on the same random
labelled set of a benchmark table, and the pool's accuracy, predictive entropy, mutual information
(BALD, the epistemic part the acquisitions score), mean top probability and the squared norm of
each parameter tensor.

    .venv/bin/python studies/benchmark/variant_spread.py --tables swiss_labor,cars_origin,chile --labels 40

The table is imported as run.py imports it (`register_pool`, test fraction 0.3, seed 0); the
labelled set is `--labels` items of the pool drawn with `--seed`; the posterior is the CLI's
default (`posterior_factory("mc-dropout", mlp)`) with each variant of variants.py.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
CONFIG = HERE / "config.json"  # the benchmark's config: `max_rows` caps each imported table
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import tables as benchmark_tables  # noqa: E402
import variants as benchmark_variants  # noqa: E402


def table_tensors(name: str, cache: Path) -> tuple[torch.Tensor, torch.Tensor, int]:
    """(x [N, D], y [N] class indices, classes) of a classification table, imported as run.py does."""
    from activebayes.data import load_project_data
    from activebayes.store import PoolStore
    from activebayes_cli._pool_import import register_pool

    max_rows = json.loads(CONFIG.read_text())["max_rows"]
    rec = benchmark_tables.write_tables(cache, [name], max_rows)[name]
    with tempfile.TemporaryDirectory(prefix="ab-spread-") as tmp, PoolStore(f"sqlite:///{tmp}/p.db") as store:
        store.create_project("p", task="classification", classes_from_data=True)
        register_pool(store, "p", cache / rec["file"], label_column=rec["label"], key_column=rec["key"],
                      test_fraction=0.3, seed=0, text_folder=Path(tmp) / "cache")  # fmt: skip
        classes = [str(c) for c in store.project("p").classes]
        data = load_project_data(store, "p")
        x = torch.tensor(data.x, dtype=torch.float32)
        y = torch.tensor([classes.index(str(label)) for label in data.y])
    return x, y, len(classes)


def spread(name: str, labels: int, seed: int, cache: Path) -> list[str]:
    from activebayes.acquisition import bald, entropy
    from activebayes_cli._model import model_factory, posterior_factory

    x, y, n_classes = table_tensors(name, cache)
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed))
    labelled, pool = order[:labels], order[labels:]
    rows = []
    for variant in benchmark_variants.VARIANTS:
        factory, settings = posterior_factory("mc-dropout", model_factory("mlp", x.shape[1:], n_classes), samples=None, epochs=None, device="cpu")
        factory, _ = benchmark_variants.apply_variant(variant, factory, settings)
        post = factory(seed=seed).fit(x[labelled], y[labelled])
        pred = post.predict(x[pool])  # probs [S, N, C]
        mean = pred.probs.mean(0)  # [N, C]
        accuracy = float((mean.argmax(1) == y[pool]).float().mean())
        norms = ", ".join(f"{float(p.detach().square().sum()):.1f}" for p in post.model_.parameters())
        rows.append(f"| {name} | {variant} | {accuracy:.3f} | {float(entropy(pred).mean()):.3f} | {float(bald(pred).mean()):.4f} "
                    f"| {float(mean.max(1).values.mean()):.3f} | {norms} |")  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", default="swiss_labor,cars_origin,chile")
    parser.add_argument("--labels", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", type=Path, default=benchmark_tables.CACHE)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    print("| table | variant | pool accuracy | entropy | BALD | mean top probability | ‖θ_l‖² per tensor |")
    print("|---|---|---:|---:|---:|---:|---|")
    for name in [t.strip() for t in args.tables.split(",") if t.strip()]:
        for row in spread(name, args.labels, args.seed, args.cache):
            print(row, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
