"""The regression GP with its hyper-parameters integrated out (`GaussianProcess(hyper_samples=K)`)
against the MAP plug-in (today's default) on the tables of kernels.py.

    OMP_NUM_THREADS=1 .venv/bin/python studies/regression/hyper.py [--seeds 3] [--k 32]
        [--tables diabetes ...] [--labels 10 20 40 60 80 100] [--json out.json]

Per table and repeat r (the CLI's features and split with seed r, as in kernels.py) and per model
("map": `GaussianProcess()`; "K=32": `GaussianProcess(hyper_samples=32)`; seed r), from the same 5
random first labels:
- random: 5 more labels a round drawn uniformly (one permutation per repeat, shared by the models);
- variance: 5 more a round, the largest epistemic variance of the model's own predictive
  (`acquisition.scores.variance(gp.predict(pool), "epistemic")`, the `variance` acquisition).
At each label count of --labels, on the test rows: RMSE of the predictive mean; NLL, the mean of
−log p(y | x) under the predictive mixture Σ_k w_k N(m_k, v_k) (`predict_mixture`; one Gaussian for
the MAP); coverage, the share of test targets inside the central 95 % interval, i.e. with
0.025 <= F(y) <= 0.975, F the mixture's CDF (exact, no Gaussian approximation of the mixture); and
the CPU seconds of a round (fit + the pool's scores; `time.process_time`, so that the load of a
shared machine does not count).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from kernels import TABLES, cli_features  # noqa: E402


def mixture_scores(w: np.ndarray, mean: np.ndarray, var: np.ndarray, target: np.ndarray) -> tuple[float, float, float]:
    """(rmse of Σ_k w_k mean_k, mean NLL, central-95 % coverage) of the mixtures Σ_k w_k N(mean[k, n],
    var[k, n]) at the targets [N]; w [K], mean and var [K, N]."""
    from scipy.special import logsumexp
    from scipy.stats import norm

    sd = np.sqrt(var)
    mu = w @ mean
    log_p = logsumexp(np.log(w)[:, None] + norm.logpdf(target[None], mean, sd), axis=0)
    cdf = w @ norm.cdf((target[None] - mean) / sd)
    inside = (cdf >= 0.025) & (cdf <= 0.975)
    return float(np.sqrt(np.mean((mu - target) ** 2))), float(-np.mean(log_p)), float(np.mean(inside))


def fit_score(k: int, x, y, train, test, pool, seed: int):
    """(scores on the test rows, epistemic variance [pool], seconds) of one fit on rows `train`."""
    from activebayes.acquisition.scores import variance
    from activebayes.posteriors.gp import GaussianProcess

    start = time.process_time()
    gp = GaussianProcess(hyper_samples=k, seed=seed, device="cpu").fit(torch.from_numpy(x[train]), torch.from_numpy(y[train]))
    epistemic = variance(gp.predict(torch.from_numpy(x[pool])), "epistemic").double().numpy()
    seconds = time.process_time() - start  # CPU seconds: the shared machine's load does not count
    w, mean, var = (t.double().numpy() for t in gp.predict_mixture(torch.from_numpy(x[test])))
    return mixture_scores(w / w.sum(), mean, var, y[test]), epistemic, seconds


def run_repeat(folder: Path, table: str, seed: int, models: dict[str, int], counts: list[int], save=None) -> dict:
    """{"model strategy": {labels: [rmse, nll, coverage, seconds]}} of one repeat; `save(out)` is
    called after every recorded fit (so a run stopped early keeps what it measured)."""
    x, y, pool, test = cli_features(folder, table, seed)
    order = np.random.default_rng(seed).permutation(pool)
    out: dict[str, dict[int, list[float]]] = {}
    for name, k in models.items():
        for strategy in ("random", "variance"):
            train, rows = list(order[:5]), out.setdefault(f"{name} {strategy}", {})
            while len(train) <= max(counts):
                if strategy == "random" and len(train) not in counts:  # fitted at the counts only
                    train = list(order[: min(c for c in counts if c > len(train))])
                    continue
                rest = np.setdiff1d(pool, train)
                scores, epistemic, seconds = fit_score(k, x, y, np.asarray(train), test, rest, seed)
                if len(train) in counts:
                    rows[len(train)] = [*scores, seconds]
                    if save is not None:
                        save(out)
                if strategy == "random":
                    train = list(order[: len(train) + 5])
                else:
                    train += list(rest[np.argsort(-epistemic, kind="stable")[:5]])
    return out


def table_text(table: str, runs: list[dict], counts, which: int, title: str, digits: str = ".4g") -> str:
    columns = list(dict.fromkeys(c for r in runs for c in r))
    head = f"**{table}** — {title}, mean ± sd over {len(runs)} repeats\n\n| labels | " + " | ".join(columns) + " |\n|---:|" + "---:|" * len(columns)
    rows = []
    for n in counts:
        cells = []
        for c in columns:
            values = [r[c][n][which] for r in runs if n in r.get(c, {})]
            spread = statistics.stdev(values) if len(values) > 1 else 0.0
            cells.append(f"{statistics.mean(values):{digits}} ± {spread:.2g}" if values else "-")
        rows.append(f"| {n} | " + " | ".join(cells) + " |")
    return "\n".join([head, *rows]) + "\n"


def summary_text(everything: dict[str, list], counts: list[int]) -> str:
    """Per table, means over the repeats and label counts: coverage, NLL and RMSE of each model
    under each strategy, and the acquisition's gain, RMSE(random) / RMSE(variance) − 1."""
    def mean(table: str, column: str, which: int) -> float:
        values = [r[column][n][which] for r in everything[table] for n in counts if n in r.get(column, {})]
        return statistics.mean(values) if values else float("nan")

    models = sorted({c.split()[0] for run in next(iter(everything.values())) for c in run}, key=lambda m: m != "map")
    head = ["table"] + [f"{m} {s} {what}" for s in ("random", "variance") for what in ("cover", "NLL", "RMSE") for m in models]
    head += [f"{m} gain" for m in models]
    rows = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for table in everything:
        cells = [f"{mean(table, f'{m} {s}', w):.3g}" for s in ("random", "variance") for w in (2, 1, 0) for m in models]
        cells += [f"{mean(table, f'{m} random', 0) / mean(table, f'{m} variance', 0) - 1:+.3f}" for m in models]
        rows.append(f"| {table} | " + " | ".join(cells) + " |")
    return f"Means over {', '.join(map(str, counts))} labels and the repeats\n\n" + "\n".join(rows) + "\n"


def print_tables(everything: dict[str, list], counts: list[int]) -> None:
    print(summary_text(everything, counts))
    for table, runs in everything.items():
        for which, title in enumerate(("test RMSE", "test NLL (nats)", "95 % interval coverage", "seconds per round")):
            print(table_text(table, runs, counts, which, title, ".3g" if which == 3 else ".4g"), flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=None, help="run only repeat r (< --seeds), e.g. one process per repeat")
    parser.add_argument("--k", type=int, default=32, help="hyper_samples of the integrated model")
    parser.add_argument("--tables", nargs="+", default=list(TABLES), choices=TABLES)
    parser.add_argument("--labels", nargs="+", type=int, default=[10, 20, 40, 60, 80, 100])
    parser.add_argument("--json", type=Path, default=None, help="write every repeat's figures here as each ends")
    parser.add_argument("--read", type=Path, nargs="+", default=None, help="print the tables of these --json files instead")
    parser.add_argument("--folder", type=Path, default=None, help="scratch folder (default: a temporary one)")
    args = parser.parse_args(argv)
    if args.read:
        everything = {}
        for path in args.read:
            for table, runs in json.loads(path.read_text()).items():
                everything.setdefault(table, []).extend({c: {int(n): v for n, v in rows.items()} for c, rows in run.items()} for run in runs)
        print_tables(everything, args.labels)
        return
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    import warnings

    warnings.simplefilter("ignore")  # gpytorch's jitter notes
    models = {"map": 0, f"K={args.k}": args.k}
    everything: dict[str, list] = {table: [] for table in args.tables}
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.folder or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        repeats = range(args.seeds) if args.repeat is None else [args.repeat]
        for seed in repeats:  # every table's repeat r before any table's r + 1
            for table in args.tables:
                def save(out: dict, table: str = table) -> None:
                    if args.json:
                        args.json.write_text(json.dumps({**everything, table: everything[table] + [out]}))

                everything[table].append(run_repeat(folder, table, seed, models, args.labels, save))
    print_tables(everything, args.labels)


if __name__ == "__main__":
    main()
