"""Tabular study: do the CLI defaults work out of the box on small tables?

    .venv/bin/python studies/tabular/run.py [--config studies/tabular/config.json] [--out studies/tabular/results.md]

scikit-learn's iris (150 × 4, 3 classes), wine (178 × 13, 3 classes) and breast cancer (569 × 30,
2 classes) are written as csv files (feature columns, a `label` column of class names) and run
exactly as the CLI runs them: a project created without --classes, `pool add FILE --test-fraction
0.3 --seed SEED` (activebayes_cli._pool_import.register_pool: classes read from the labels, features
standardised over the pool rows), then rounds of `round --oracle truth --k 10 --seed SEED` with
the CLI defaults (--model mlp, --posterior mc-dropout, no --epochs: the sized training of
activebayes_cli._model.posterior_factory) until the posterior has been fitted on 60 labels. The
first round picks 10 items at random (cold start); each later round fits on 10, 20, ..., 60 labels
and records test accuracy. At each budget a LogisticRegression (sklearn defaults, C = 1) is fitted
on the same labelled items and the same standardised features. "old defaults" is what the CLI did
before: raw features (--no-standardize) and MC dropout for 50 epochs with no weight decay.
Mean ± sd over seeds (a seed sets the test split, the cold start, the rounds' seeds).
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent


def write_csv(name: str, path: Path) -> Path:
    from sklearn import datasets

    bunch = getattr(datasets, f"load_{name}")()
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow([f"f{j}" for j in range(bunch.data.shape[1])] + ["label"])
        for x, y in zip(bunch.data, bunch.target):
            writer.writerow([repr(float(v)) for v in x] + [str(bunch.target_names[y])])
    return path


def logistic_accuracy(x_tr: np.ndarray, y_tr: list[str], x_te: np.ndarray, y_te: list[str]) -> float:
    from sklearn.linear_model import LogisticRegression

    if len(set(y_tr)) < 2:  # one class seen: it is the prediction
        return float(np.mean([y == y_tr[0] for y in y_te]))
    model = LogisticRegression(max_iter=5000).fit(x_tr, y_tr)
    return float(np.mean(model.predict(x_te) == np.asarray(y_te)))


def run_one(csv_path: Path, arm: str, acquisition: str, seed: int, cfg: dict, workdir: Path) -> list[dict]:
    """One active-learning run; a row per fitted round: labels, accuracy, LR accuracy, training."""
    from activebayes.data import load_project_data
    from activebayes.loop import ActiveLearningLoop
    from activebayes.oracles import truth_oracle
    from activebayes.posteriors import resolve_posterior
    from activebayes.store import PoolStore
    from activebayes.training import TrainConfig
    from activebayes_cli._model import model_factory, posterior_factory
    from activebayes_cli._pool_import import register_pool

    old = arm == "old defaults"
    db = workdir / f"{csv_path.stem}-{arm.replace(' ', '_')}-{acquisition}-{seed}.db"
    rows = []
    with PoolStore(f"sqlite:///{db}") as store:
        store.create_project("p", task="classification", classes_from_data=True)
        register_pool(store, "p", csv_path, test_fraction=cfg["test_fraction"], seed=seed, standardize=not old)
        info = store.project("p")
        data = load_project_data(store, "p")
        model_fn = model_factory("mlp", data.x.shape[1:], len(info.classes))
        if old:
            factory, settings = functools.partial(resolve_posterior("mc-dropout"), model_fn, train=TrainConfig(epochs=50), device="cpu"), {}
        else:
            factory, settings = posterior_factory("mc-dropout", model_fn, samples=None, epochs=None, device="cpu")
        loop = ActiveLearningLoop(
            factory, acquisition, store, "p", truth_oracle(store, "p", data), batch_size=cfg["k"], seed=seed,
            device="cpu", posterior_name="mc-dropout", posterior_settings=settings, data=data,
        )  # fmt: skip
        test_rows, _, test_values = store.labels("p", split="test")
        while store.count_labelled("p") <= cfg["max_labels"]:
            lab_rows, _, lab_values = store.labels("p")
            t0 = time.perf_counter()
            result = loop.step()
            if not len(lab_rows):
                continue
            rows.append({
                "labels": len(lab_rows),
                "accuracy": result.metrics["accuracy"],
                "logistic": logistic_accuracy(data.x[lab_rows], lab_values, data.x[test_rows], test_values),
                "seconds": time.perf_counter() - t0,
            })  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, default=HERE / "config.json")
    parser.add_argument("--out", type=Path, default=HERE / "results.md")
    parser.add_argument("--seeds", type=int, nargs="*", help="override the config's seeds")
    parser.add_argument("--datasets", nargs="*", help="override the config's datasets")
    args = parser.parse_args()
    cfg = json.loads(args.config.read_text())
    seeds = args.seeds if args.seeds is not None else cfg["seeds"]
    names = args.datasets or cfg["datasets"]
    torch.set_num_threads(1)
    arms = [("defaults", a) for a in cfg["acquisitions"]] + [("old defaults", cfg["old_defaults_acquisition"])]
    budgets = list(range(cfg["k"], cfg["max_labels"] + 1, cfg["k"]))
    lines = [
        "| data | arm | " + " | ".join(f"{b} labels" for b in budgets) + " |",
        "|---|---|" + "---|" * len(budgets),
    ]
    ratios: dict[tuple, list[float]] = {}
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name in names:
            csv_path = write_csv(name, work / f"{name}.csv")
            lr: dict[str, dict[int, list[float]]] = {a: {b: [] for b in budgets} for a in cfg["acquisitions"]}
            for arm, acq in arms:
                acc: dict[int, list[float]] = {b: [] for b in budgets}
                for seed in seeds:
                    for row in run_one(csv_path, arm, acq, seed, cfg, work):
                        acc[row["labels"]].append(row["accuracy"])
                        if arm == "defaults":
                            lr[acq][row["labels"]].append(row["logistic"])
                            ratios.setdefault((name, acq, row["labels"]), []).append(row["accuracy"] / max(row["logistic"], 1e-9))
                cells = [f"{statistics.mean(acc[b]):.3f} ± {statistics.pstdev(acc[b]):.3f}" for b in budgets]
                lines.append(f"| {name} | {arm}, {acq} | " + " | ".join(cells) + " |")
                print(lines[-1], flush=True)
            for acq in cfg["acquisitions"]:
                cells = [f"{statistics.mean(lr[acq][b]):.3f} ± {statistics.pstdev(lr[acq][b]):.3f}" for b in budgets]
                lines.append(f"| {name} | LogisticRegression on {acq}'s labels | " + " | ".join(cells) + " |")
                print(lines[-1], flush=True)
    lines += ["", "Accuracy of the defaults ÷ LogisticRegression accuracy on the same labels (mean over seeds):", ""]
    lines += ["| data | acquisition | " + " | ".join(f"{b} labels" for b in cfg["report_budgets"]) + " |",
              "|---|---|" + "---|" * len(cfg["report_budgets"])]  # fmt: skip
    for name in names:
        for acq in cfg["acquisitions"]:
            cells = [f"{statistics.mean(ratios[(name, acq, b)]):.3f}" for b in cfg["report_budgets"]]
            lines.append(f"| {name} | {acq} | " + " | ".join(cells) + " |")
    lines += ["", f"seeds {seeds}; {time.perf_counter() - start:.0f} s on {torch.get_num_threads()} CPU thread(s)."]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
