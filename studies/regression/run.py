"""Regression study: GP + variance, GP + nipv, MC dropout + BALD and random, RMSE against labels.

    .venv/bin/python studies/regression/run.py [--config studies/regression/config.toml]
        [--out studies/regression/regression-results] [--datasets branin diabetes] [--strategies gp-nipv random]
        [--seeds 5]

Datasets: `branin`, Branin–Hoo on [0, 1]² (x₁ = 15u − 5, x₂ = 15v), y = branin(x)/50 + N(0, 0.05²),
a pool of 1000 and a test set of 500 uniform points; `diabetes`, scikit-learn's diabetes data
(442 patients, 10 standardised features, y the disease progression in its own units), 25% held
out. Each repeat r (seed + r) fixes the split and `initial` random labelled items shared by every
strategy; every strategy then runs `ActiveLearningLoop` (a SimulatedOracle answering from the
truth, `batch_size` per round) until a round is fitted on `max_labels` labels, each in its own
project of one SQLite database `<out>/<dataset>.db`. The loop records the test RMSE and Gaussian
NLL of every round; `<out>/results.json` holds them and `<out>/results.md` (copied to results.md here) the mean ± sd of the RMSE
over repeats at each label count. The database is the state: a rerun continues where it stopped.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import time
import tomllib
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent


def branin(u: np.ndarray) -> np.ndarray:
    x1, x2 = 15 * u[:, 0] - 5, 15 * u[:, 1]
    b, c, t = 5.1 / (4 * np.pi**2), 5 / np.pi, 1 / (8 * np.pi)
    return (x2 - b * x1**2 + c * x1 - 6) ** 2 + 10 * (1 - t) * np.cos(x1) + 10


def make_data(name: str, spec: dict, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x, y, pool rows, test rows) of repeat `seed`."""
    rng = np.random.default_rng(seed)
    if name == "branin":
        n_pool, n_test = int(spec["pool"]), int(spec["test"])
        x = rng.uniform(0.0, 1.0, (n_pool + n_test, 2))
        y = branin(x) / 50 + rng.normal(0.0, 0.05, len(x))
        return x, y, np.arange(n_pool), np.arange(n_pool, n_pool + n_test)
    if name == "diabetes":
        from sklearn.datasets import load_diabetes

        x, y = load_diabetes(return_X_y=True)
        order = rng.permutation(len(x))
        n_test = int(round(float(spec["test_fraction"]) * len(x)))
        return x, y.astype(np.float64), np.sort(order[n_test:]), np.sort(order[:n_test])
    raise SystemExit(f"unknown dataset {name!r}")


def factory(posterior: str, n_features: int, cfg: dict):
    from activebayes.posteriors.gp import GaussianProcess

    if posterior == "gp":
        return functools.partial(GaussianProcess, device="cpu")
    from activebayes.nets import mlp
    from activebayes.posteriors.mc_dropout import MCDropout
    from activebayes.training import TrainConfig

    md = cfg["mc_dropout"]
    net = mlp(n_features, 1, hidden=tuple(md["hidden"]), dropout=float(md["dropout"]))
    train = TrainConfig(epochs=int(md["epochs"]), lr=float(md["lr"]))
    return functools.partial(MCDropout, net, n_samples=int(md["n_samples"]), train=train, likelihood="gaussian", device="cpu")


def run_dataset(name: str, cfg: dict, strategies: dict, seeds: int, out: Path) -> dict:
    from activebayes.data import load_project_data
    from activebayes.loop import ActiveLearningLoop
    from activebayes.oracles import SimulatedOracle
    from activebayes.store import PoolStore

    spec = cfg["datasets"][name]
    curves: dict[str, list[list[tuple[int, float, float]]]] = {s: [] for s in strategies}
    with PoolStore(f"sqlite:///{out / f'{name}.db'}") as store:
        for r in range(seeds):
            seed = int(cfg["seed"]) + r
            x, y, pool, test = make_data(name, spec, seed)
            path = out / f"{name}-r{r + 1}.npz"
            if not path.exists():
                np.savez(path, x=x.astype(np.float32), y=y)
            keys = [f"i{i}" for i in range(len(x))]
            truth = {k: repr(float(v)) for k, v in zip(keys, y)}
            initial = np.random.default_rng(seed + 10_000).choice(pool, int(cfg["initial"]), replace=False)
            for strategy, (posterior, acquisition) in strategies.items():
                project = f"{strategy}-r{r + 1}"
                if project not in store.projects():
                    store.create_project(project, task="regression", settings={"truth": "held-back"})
                if store.count_items(project) == 0:
                    known = np.concatenate([test, initial])
                    store.import_pool(project, path, data_format="npz", pool_rows=pool, pool_keys=[keys[i] for i in pool],
                                      test_rows=test, test_keys=[keys[i] for i in test],
                                      observations=[(keys[i], truth[keys[i]]) for i in known], who="simulated")  # fmt: skip
                loop = ActiveLearningLoop(
                    factory(posterior, x.shape[1], cfg), acquisition, store, project, SimulatedOracle(truth),
                    batch_size=int(cfg["batch_size"]), seed=seed, device="cpu", who="simulated",
                    posterior_name=posterior, nipv_reference=int(cfg["nipv_reference"]), prefilter_size=int(cfg["prefilter"]),
                    data=load_project_data(store, project),
                )  # fmt: skip
                t0 = time.perf_counter()
                while not any(q.status == "done" and q.labelled_count >= int(cfg["max_labels"]) for q in store.rounds(project)):
                    loop.step()
                points = [(q.labelled_count, q.metrics["rmse"], q.metrics["nll"]) for q in store.rounds(project)
                          if q.status == "done" and "rmse" in q.metrics and q.labelled_count <= int(cfg["max_labels"])]  # fmt: skip
                curves[strategy].append(points)
                print(f"{name} {project}: {len(points)} rounds, RMSE {points[0][1]:.3g} -> {points[-1][1]:.3g} "
                      f"({time.perf_counter() - t0:.0f} s)", flush=True)  # fmt: skip
    return curves


def summarise(runs: list[list[tuple[int, float, float]]], column: int = 1) -> dict[int, tuple[float, float, int]]:
    by: dict[int, list[float]] = {}
    for run in runs:
        for point in run:
            by.setdefault(point[0], []).append(point[column])
    return {n: (statistics.mean(v), statistics.stdev(v) if len(v) > 1 else 0.0, len(v)) for n, v in sorted(by.items())}


def table(name: str, curves: dict, budgets: list[int]) -> str:
    strategies = list(curves)
    lines = [f"**{name}** — test RMSE, mean ± sd over repeats", "",
             "| labels | " + " | ".join(strategies) + " |", "|---:|" + "---:|" * len(strategies)]  # fmt: skip
    summary = {s: summarise(runs) for s, runs in curves.items()}
    for n in budgets:
        cells = [f"{summary[s][n][0]:.3f} ± {summary[s][n][1]:.3f}" if n in summary[s] else "–" for s in strategies]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, default=HERE / "config.toml")
    parser.add_argument("--out", type=Path, default=HERE / "regression-results")
    parser.add_argument("--datasets", nargs="*")
    parser.add_argument("--strategies", nargs="*")
    parser.add_argument("--seeds", type=int)
    args = parser.parse_args()
    torch.set_num_threads(1)
    cfg = tomllib.loads(args.config.read_text())
    strategies = {s: tuple(v) for s, v in cfg["strategies"].items() if not args.strategies or s in args.strategies}
    seeds = args.seeds or int(cfg["seeds"])
    args.out.mkdir(parents=True, exist_ok=True)
    results, parts = {}, []
    for name in args.datasets or list(cfg["datasets"]):
        curves = run_dataset(name, cfg, strategies, seeds, args.out)
        results[name] = curves
        budgets = sorted({p[0] for runs in curves.values() for run in runs for p in run})
        parts.append(table(name, curves, [b for b in budgets if b in (5, 10, 20, 30, 40, 50, 60, 80, 100) or b == budgets[-1]]))
    (args.out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    (args.out / "results.md").write_text("\n\n".join(parts) + "\n")
    print("\n\n".join(parts))


if __name__ == "__main__":
    main()
