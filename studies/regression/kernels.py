"""The regression GP's kernels on a benchmark of tables: test RMSE, 95 % interval coverage, and
ridge regression on the same labels.

    OMP_NUM_THREADS=1 .venv/bin/python studies/regression/kernels.py [--seeds 3]
        [--tables diabetes friedman1 friedman2 friedman3 linear-gaps houses]
        [--models rbf matern52 rbf+linear matern52+linear rbf@-1,1.5] [--labels 10 20 40 80]
        [--strategies random variance]

A model is a GP kernel, with "@μ,σ" its noise prior LogNormal(μ, σ) in place of the default (−4, 1).

Tables (each written to a csv in a scratch folder and added with the CLI, `activebayes pool add
FILE --label-column y --test-fraction 0.25 --seed <repeat>`, so the features are the CLI's: gaps
imputed with an indicator column, features standardised): scikit-learn's diabetes (442 x 10);
make_friedman1 (500 x 10, noise 1), make_friedman2 (500 x 4, noise 50), make_friedman3 (500 x 4,
noise 0.1); linear-gaps, y = x·(3, −2, 1, 0.5, 0, 0) + N(0, 1) with 20 % of the feature cells
empty (500 x 6); houses, a price linear in floor area, rooms, age and distance plus N(0, 30,000²)
(600 x 4, prices of order 500,000); branin, Branin–Hoo on [0, 1]² as in run.py, y = branin/50 +
N(0, 0.05²) (600 x 2: smooth, nearly noiseless, as in Bayesian optimisation).

Per table and repeat r (the split's seed, and the seed of 5 random first labels):
- random: labels drawn uniformly from the pool; at each label count of --labels every model's GP
  (`GaussianProcess(kernel=..., noise_prior=...)`, the CLI's defaults otherwise) and RidgeCV fit
  the same labels;
- variance: each model's GP picks its own next 5 labels by the largest latent variance σ_n² (the
  `variance` acquisition) from the same 5 first labels.
Printed: the test RMSE (mean ± sd over repeats) and the share of test targets inside the 95 %
predictive interval μ ± 1.96 sqrt(σ_n² + σ_ε²) (BayesianRidge's for the ridge column).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

TABLES = ("diabetes", "friedman1", "friedman2", "friedman3", "linear-gaps", "houses", "branin")
MODELS = ("rbf", "matern52", "rbf+linear", "matern52+linear")
Z95 = 1.959963984540054


def make_table(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(x [N, D], y [N], gaps [N, D] bool or None) of table `name` (fixed seed 0)."""
    from sklearn import datasets

    rng = np.random.default_rng(0)
    if name == "diabetes":
        x, y = datasets.load_diabetes(return_X_y=True)
        return x, y, None
    if name.startswith("friedman"):
        make = {"friedman1": (datasets.make_friedman1, 1.0), "friedman2": (datasets.make_friedman2, 50.0), "friedman3": (datasets.make_friedman3, 0.1)}
        fn, noise = make[name]
        x, y = fn(500, noise=noise, random_state=0)
        return x, y, None
    if name == "linear-gaps":
        x = rng.normal(size=(500, 6))
        y = x @ np.array([3.0, -2.0, 1.0, 0.5, 0.0, 0.0]) + rng.normal(0.0, 1.0, 500)
        return x, y, rng.random(x.shape) < 0.2
    if name == "houses":
        n = 600
        area = rng.uniform(50, 300, n)
        rooms = np.clip(np.round(area / 40 + rng.normal(0, 1, n)), 1, None)
        age, distance = rng.uniform(0, 80, n), rng.uniform(1, 30, n)
        price = 50_000 + 2_500 * area + 8_000 * rooms - 900 * age - 3_000 * distance + rng.normal(0, 30_000, n)
        return np.c_[area, rooms, age, distance], price, None
    if name == "branin":
        from run import branin  # studies/regression/run.py

        x = rng.uniform(0.0, 1.0, (600, 2))
        return x, branin(x) / 50 + rng.normal(0.0, 0.05, 600), None
    raise SystemExit(f"unknown table {name!r}")


def write_csv(path: Path, x: np.ndarray, y: np.ndarray, gaps: np.ndarray | None) -> None:
    lines = ["key," + ",".join(f"f{d}" for d in range(x.shape[1])) + ",y"]
    for i, (row, target) in enumerate(zip(x, y)):
        cells = ["" if gaps is not None and gaps[i, d] else repr(float(v)) for d, v in enumerate(row)]
        lines.append(f"r{i}," + ",".join(cells) + f",{float(target)!r}")
    path.write_text("\n".join(lines) + "\n")


def cli_features(folder: Path, table: str, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x [N, D'] the CLI's features, y [N], pool rows, test rows) of `table` added with split seed `seed`."""
    from activebayes.data.project import load_project_data
    from activebayes.store import PoolStore

    csv = folder / f"{table}.csv"
    if not csv.exists():
        write_csv(csv, *make_table(table))
    db, name = folder / f"{table}-{seed}.db", "t"
    cli = [str(Path(sys.executable).with_name("activebayes")), "--db", str(db)]
    if not db.exists():
        subprocess.run([*cli, "init", "--name", name, "--task", "regression", "-q"], check=True, cwd=folder, stdout=subprocess.DEVNULL)
        subprocess.run([*cli, "pool", "add", str(csv), "--label-column", "y", "--test-fraction", "0.25", "--seed", str(seed), "-q"],
                       check=True, cwd=folder, stdout=subprocess.DEVNULL)  # fmt: skip
    store = PoolStore(f"sqlite:///{db}")
    try:
        data = load_project_data(store, name)
        pool = np.sort(store.items(name, split="pool")[1])
        test = np.sort(store.items(name, split="test")[1])
    finally:
        store.close()
    return np.asarray(data.x, dtype=np.float64), data.y.astype(np.float64), pool, test


def gp_options(model: str) -> dict:
    """"rbf" -> {"kernel": "rbf"}; "rbf@-1,1.5" -> {"kernel": "rbf", "noise_prior": (-1.0, 1.5)}."""
    kernel, _, prior = model.partition("@")
    return {"kernel": kernel} | ({"noise_prior": tuple(float(v) for v in prior.split(","))} if prior else {})


def gp_scores(model: str, x: np.ndarray, y: np.ndarray, train: np.ndarray, test: np.ndarray, seed: int):
    """(the fitted GP, rmse, coverage) of a GP `model` fitted on rows `train`, on rows `test`."""
    from activebayes.posteriors.gp import GaussianProcess

    gp = GaussianProcess(**gp_options(model), seed=seed, device="cpu").fit(torch.from_numpy(x[train]), torch.from_numpy(y[train]))
    mean, var = (t.double().numpy() for t in gp.predict_mean_var(torch.from_numpy(x[test]), observation_noise=True))
    return gp, *scores(mean, var, y[test])


def scores(mean: np.ndarray, var: np.ndarray, target: np.ndarray) -> tuple[float, float]:
    """(rmse, share of targets within mean ± 1.96 sqrt(var))."""
    return float(np.sqrt(np.mean((mean - target) ** 2))), float(np.mean(np.abs(target - mean) <= Z95 * np.sqrt(var)))


def ridge_scores(x: np.ndarray, y: np.ndarray, train: np.ndarray, test: np.ndarray) -> tuple[float, float]:
    """(RidgeCV's rmse, BayesianRidge's 95 % coverage) on the same labels."""
    from sklearn.linear_model import BayesianRidge, RidgeCV

    ridge = RidgeCV(alphas=np.logspace(-3, 3, 13)).fit(x[train], y[train])
    rmse = float(np.sqrt(np.mean((ridge.predict(x[test]) - y[test]) ** 2)))
    mean, sd = BayesianRidge().fit(x[train], y[train]).predict(x[test], return_std=True)
    return rmse, scores(mean, sd**2, y[test])[1]


def run_repeat(folder: Path, table: str, seed: int, models, counts, strategies) -> dict[tuple[str, int], tuple[float, float]]:
    """{(column, labels): (rmse, coverage)} of one repeat."""
    x, y, pool, test = cli_features(folder, table, seed)
    rng = np.random.default_rng(seed)
    order = rng.permutation(pool)
    out: dict[tuple[str, int], tuple[float, float]] = {}
    for n in counts:  # random: the first n of one permutation, for every model
        train = order[:n]
        out[("ridge", n)] = ridge_scores(x, y, train, test)
        for k in models if "random" in strategies else ():
            out[(f"{k} random", n)] = gp_scores(k, x, y, train, test, seed)[1:]
    for k in models if "variance" in strategies else ():  # variance: each GP picks its own labels
        train = list(order[:5])
        while len(train) <= max(counts):
            gp, rmse, cover = gp_scores(k, x, y, np.asarray(train), test, seed)
            if len(train) in counts:
                out[(f"{k} variance", len(train))] = (rmse, cover)
            rest = np.setdiff1d(pool, train)
            var = gp.predict_mean_var(torch.from_numpy(x[rest]))[1].double().numpy()
            train += list(rest[np.argsort(-var, kind="stable")[:5]])
    return out


def table_text(table: str, runs: list[dict], columns: list[str], counts, which: int, title: str) -> str:
    head = f"**{table}** — {title}, mean ± sd over {len(runs)} repeats\n\n| labels | " + " | ".join(columns) + " |\n|---:|" + "---:|" * len(columns)
    rows = []
    for n in counts:
        cells = []
        for c in columns:
            values = [r[(c, n)][which] for r in runs if (c, n) in r]
            spread = statistics.stdev(values) if len(values) > 1 else 0.0
            cells.append(f"{statistics.mean(values):.4g} ± {spread:.2g}" if values else "-")
        rows.append(f"| {n} | " + " | ".join(cells) + " |")
    return "\n".join([head, *rows]) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--tables", nargs="+", default=list(TABLES), choices=TABLES)
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--labels", nargs="+", type=int, default=[10, 20, 40, 80])
    parser.add_argument("--strategies", nargs="+", default=["random", "variance"], choices=["random", "variance"])
    parser.add_argument("--folder", type=Path, default=None, help="scratch folder for the csv files and databases (default: a temporary one)")
    args = parser.parse_args(argv)
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    import warnings

    warnings.simplefilter("ignore")  # gpytorch's jitter notes
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.folder or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for table in args.tables:
            runs = [run_repeat(folder, table, seed, args.models, args.labels, args.strategies) for seed in range(args.seeds)]
            columns = ["ridge"] + [f"{k} {s}" for s in args.strategies for k in args.models]
            print(table_text(table, runs, columns, args.labels, 0, "test RMSE"))
            print(table_text(table, runs, columns, args.labels, 1, "95 % interval coverage (ridge: BayesianRidge)"), flush=True)


if __name__ == "__main__":
    main()
