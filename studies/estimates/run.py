"""Estimates without a test set, measured against one: LURE estimates from the chosen labels,
active testing at a budget of 50 against a random 50-label test split, the stopping signal
against where test accuracy plateaued, and `debias` training.

    .venv/bin/python studies/estimates/run.py [--out studies/estimates/results] [--seeds 0,1,2]
        [--parts digits,tables,debias] [--max-labels 300]

Every run is what a user of the CLI gets, in-process (as studies/benchmark/run.py does): a fresh
SQLite project, `pool add TABLE.csv --label-column L --test-fraction 0.3 --seed SEED`, rounds of
`round --oracle truth --acquisition ARM --k 10 --seed SEED` with the CLI's default model
(mc-dropout MLP, training sized to the labels), the first batch random. Each round records its
stop set's predictions; here the stop set is every item of the table (`stop_set_size`), so the
model's accuracy on the pool it drew from is known exactly, beside the test split's.

digits   scikit-learn's 8×8 digits (1,797 rows) as a 64-column table; arms power-epig (the CLI's
         default), power-bald and random, to `--max-labels` labels. Per round: the LURE estimate
         of accuracy from the round's 10 labels and its 95 % interval, the test accuracy, the
         pool accuracy. Per run at the end: active testing — the final model, 50 labels drawn
         ∝ its expected 0-1 loss (+10 % uniform), 40 draws — against 40 random 50-label samples
         of the same pool; and the stopping rule's stop point against the first label count
         whose test accuracy is within 1 point of the last round's.
tables   breast_cancer and wine (scikit-learn's bundled tables, studies/benchmark/tables.py),
         power-epig, to 100 labels: the same per-round figures.
debias   digits, power-bald, with and without `debias` (LURE-weighted training).

Each round's stop-set agreement (Cohen's kappa of consecutive rounds) is kept, so the summary
reports where the rule stops at Bloodgood & Vijay-Shanker's threshold 0.99 and at 0.98 and 0.97.

Each finished run is written to `<out>/runs/<part>/<table>-<arm>-seed<S>.json` and skipped when
rerun; `<out>/summary.json` and `<out>/results.md` are rewritten from all runs at the end.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "benchmark"))

import tables as benchmark_tables  # noqa: E402

K = 10
TEST_FRACTION = 0.3
AT_BUDGET = 50
AT_DRAWS = 40
PLATEAU = 0.01  # test accuracy within 1 point of the last round's


def digits_csv(folder: Path) -> Path:
    """scikit-learn's digits as a table: 64 pixel columns and a label column."""
    from sklearn.datasets import load_digits

    bunch = load_digits()
    path = folder / "digits.csv"
    if not path.exists():
        header = [f"px{i}" for i in range(bunch.data.shape[1])] + ["digit"]
        rows = [",".join([*(str(int(v)) for v in x), str(int(y))]) for x, y in zip(bunch.data, bunch.target)]
        path.write_text("\n".join([",".join(header), *rows]) + "\n")
    return path


def table_csv(name: str, folder: Path) -> tuple[Path, str, str | None]:
    record = benchmark_tables.write_tables(folder, [name])[name]
    return folder / f"{name}.csv", record["label"], record["key"]


def run(csv: Path, label: str, key: str | None, arm: str, seed: int, max_labels: int, *, debias: bool = False,
        active_testing: bool = False) -> dict[str, Any]:  # fmt: skip
    """One active-learning run; its per-round records and, optionally, active testing at the end."""
    import torch

    from activebayes.data import load_project_data
    from activebayes.loop import ActiveLearningLoop
    from activebayes.oracles import truth_oracle
    from activebayes.round_estimates import round_estimate
    from activebayes.stopping import unpack_predictions
    from activebayes.store import PoolStore
    from activebayes_cli._model import model_factory, posterior_factory
    from activebayes_cli._pool_import import register_pool

    torch.set_num_threads(1)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ab-estimates-") as tmp, PoolStore(f"sqlite:///{Path(tmp) / 'p.db'}") as store:
        store.create_project("p", task="classification", classes_from_data=True)
        register_pool(store, "p", csv, label_column=label, key_column=key, test_fraction=TEST_FRACTION, seed=seed, text_folder=Path(tmp))
        info = store.project("p")
        data = load_project_data(store, "p")
        oracle = truth_oracle(store, "p", data)
        truth = oracle.truth
        model_fn = model_factory("mlp", data.x.shape[1:], len(info.classes))
        factory, settings = posterior_factory("mc-dropout", model_fn, samples=None, epochs=None, device="cpu")
        loop = ActiveLearningLoop(factory, arm, store, "p", oracle, batch_size=K, seed=seed, device="cpu", who="truth",
                                  posterior_name="mc-dropout", posterior_settings=settings, data=data, first="random",
                                  debias=debias)  # fmt: skip
        loop.stop_set_size = 10**9  # every item: the pool accuracy is known exactly
        while store.count_labelled("p") < max_labels:
            loop.step()
        ids, _, keys = store.items("p")
        pool_keys = set(store.items("p", split="pool")[2])
        classes = list(info.classes)
        records, labelled_before = [], set()
        for rnd in store.rounds("p"):
            queries = store.queries("p", rnd.number)
            stop_set = (rnd.metrics or {}).get("stop_set")
            if rnd.labelled_count > 0 and stop_set is not None:
                predicted = unpack_predictions(stop_set["predictions"])
                right = {k: classes[int(p)] == str(truth[k]) for k, p in zip(keys, predicted)}
                candidates = [k for k in pool_keys if k not in labelled_before]
                estimate = round_estimate(rnd, queries, "classification", classes)
                record = {"round": rnd.number, "labels": rnd.labelled_count, "test_accuracy": rnd.metrics.get("accuracy"),
                          "test_nll": rnd.metrics.get("nll"), "pool_accuracy": float(np.mean([right[k] for k in candidates])),
                          "changed": rnd.metrics.get("changed"), "agreement": rnd.metrics.get("agreement"),
                          "naive_accuracy": float(np.mean([q.prediction["label"] == q.value for q in queries])),
                          **{f"est_{name}": v for name, v in estimate.figures().items()}, "reason": estimate.reason}  # fmt: skip
                records.append(record)
            labelled_before.update(q.key for q in queries)
        result = {"arm": arm, "seed": seed, "debias": debias, "rounds": records, "seconds": None}
        if active_testing:
            result["active_testing"] = compare_active_testing(loop, store, truth, classes, seed)
    result["seconds"] = time.perf_counter() - started
    return result


def compare_active_testing(loop: Any, store: Any, truth: dict[str, Any], classes: list[str], seed: int) -> dict[str, Any]:
    """The final model (fitted on every label) on the unlabelled pool: AT_DRAWS active-testing
    draws of AT_BUDGET labels (`activebayes.active_testing`) and as many uniformly random ones,
    each estimate against the model's exact pool accuracy and its test accuracy."""
    from activebayes.active_testing import draw_evaluation_set
    from activebayes.estimates import expected_loss, lure_estimate, wilson_interval

    rows, _, values = store.labels("p")
    posterior = loop._new_posterior(seed + 7919).fit(loop._features(rows), loop._targets(values))
    item_ids, cand_rows = store.candidates("p")
    all_ids, _, all_keys = store.items("p")
    key_of = dict(zip(np.asarray(all_ids).tolist(), all_keys))
    probs = loop._class_probabilities(posterior, np.asarray(cand_rows)).numpy()
    wrong = np.asarray([classes[int(p)] != str(truth[key_of[int(i)]]) for i, p in zip(item_ids, probs.argmax(1))], dtype=float)
    test_rows, _, test_values = store.labels("p", split="test")
    test_probs = loop._class_probabilities(posterior, test_rows).numpy()
    test_accuracy = float(np.mean([classes[int(p)] == v for p, v in zip(test_probs.argmax(1), test_values)]))
    pool_accuracy = 1.0 - float(wrong.mean())
    expected = expected_loss(probs, "zero-one")
    active, random = [], []
    rng = np.random.default_rng(seed)
    for draw_seed in range(AT_DRAWS):
        draw = draw_evaluation_set(expected, AT_BUDGET, draw_seed)
        estimate = lure_estimate(wrong[draw.positions], draw.probabilities, len(wrong), bounded=True).map(lambda r: 1 - r, increasing=False)
        active.append((estimate.value, estimate.low, estimate.high))
        sample = rng.choice(len(wrong), AT_BUDGET, replace=False)
        accuracy = 1.0 - float(wrong[sample].mean())
        low, high = wilson_interval(accuracy, AT_BUDGET)
        random.append((accuracy, low, high))

    def summary(values: list[tuple[float, float, float]], target: float) -> dict[str, float]:
        v = np.asarray(values)
        return {"mae": float(np.mean(np.abs(v[:, 0] - target))), "coverage": float(np.mean((v[:, 1] <= target) & (target <= v[:, 2]))),
                "width": float(np.mean(v[:, 2] - v[:, 1]))}  # fmt: skip

    return {"pool_accuracy": pool_accuracy, "test_accuracy": test_accuracy, "pool": len(wrong),
            "active_vs_pool": summary(active, pool_accuracy), "random_vs_pool": summary(random, pool_accuracy),
            "active_vs_test": summary(active, test_accuracy), "random_vs_test": summary(random, test_accuracy)}  # fmt: skip


# ---- summaries ------------------------------------------------------------------------------
def estimate_summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean absolute error and 95 % coverage of the per-round accuracy estimate, against the test
    split and against the pool the round drew from, over every round with an estimate."""
    rows = [r for run in runs for r in run["rounds"] if r.get("est_accuracy") and r.get("test_accuracy") is not None]
    if not rows:
        return {"rounds": 0}
    est = np.asarray([r["est_accuracy"] for r in rows])
    test = np.asarray([r["test_accuracy"] for r in rows])
    pool = np.asarray([r["pool_accuracy"] for r in rows])
    naive = np.asarray([r["naive_accuracy"] for r in rows])
    return {
        "rounds": len(rows),
        "mae_vs_test": float(np.mean(np.abs(est[:, 0] - test))),
        "mae_vs_pool": float(np.mean(np.abs(est[:, 0] - pool))),
        "bias_vs_pool": float(np.mean(est[:, 0] - pool)),
        "naive_bias_vs_pool": float(np.mean(naive - pool)),
        "coverage_test": float(np.mean((est[:, 1] <= test) & (test <= est[:, 2]))),
        "coverage_pool": float(np.mean((est[:, 1] <= pool) & (pool <= est[:, 2]))),
        "mean_width": float(np.mean(est[:, 2] - est[:, 1])),
    }


STOP_THRESHOLDS = (0.99, 0.98, 0.97)  # Bloodgood & Vijay-Shanker's 0.99, and two looser ones


def stop_points(run: dict[str, Any]) -> dict[str, Any]:
    """Labels where the stopping rule first fired (mean agreement of the last 3 pairs of rounds
    >= each of STOP_THRESHOLDS; None: never), and the first labels whose test accuracy is within
    PLATEAU of the last round's."""
    from activebayes.stopping import stop_signal

    out: dict[str, Any] = {}
    for threshold in STOP_THRESHOLDS:
        agreements, fired = [], None
        for r in run["rounds"]:
            if r.get("agreement") is not None:
                agreements.append(r["agreement"])
                if fired is None and stop_signal(agreements, threshold=threshold).stop:
                    fired = r["labels"]
        out[f"stop_{threshold}"] = fired
        out[f"test_at_stop_{threshold}"] = next((r["test_accuracy"] for r in run["rounds"] if r["labels"] == fired), None)
    final = run["rounds"][-1]["test_accuracy"]
    plateau = next(r["labels"] for r in run["rounds"] if r["test_accuracy"] >= final - PLATEAU)
    last = [r["agreement"] for r in run["rounds"] if r.get("agreement") is not None][-3:]
    return out | {"plateau": plateau, "last": run["rounds"][-1]["labels"], "final_test": final,
                  "mean_agreement_last_3": float(np.mean(last)) if last else None}  # fmt: skip


def write_summary(out: Path) -> dict[str, Any]:
    runs: dict[str, list[dict[str, Any]]] = {}
    for path in sorted((out / "runs").rglob("*.json")):
        runs.setdefault(f"{path.parent.name}/{path.stem.rsplit('-seed', 1)[0]}", []).append(json.loads(path.read_text()))
    summary: dict[str, Any] = {}
    for group, group_runs in runs.items():
        entry = {"runs": len(group_runs), "estimates": estimate_summary(group_runs),
                 "stopping": [stop_points(r) | {"seed": r["seed"]} for r in group_runs]}  # fmt: skip
        at = [r["active_testing"] for r in group_runs if "active_testing" in r]
        if at:
            entry["active_testing"] = {k: {m: float(np.mean([a[k][m] for a in at])) for m in ("mae", "coverage", "width")}
                                       for k in ("active_vs_pool", "random_vs_pool", "active_vs_test", "random_vs_test")}  # fmt: skip
        if group.startswith("debias/") or group.startswith("digits/"):
            entry["test_accuracy_at"] = {str(n): float(np.mean([next((r["test_accuracy"] for r in run["rounds"] if r["labels"] >= n), math.nan)
                                                                 for run in group_runs])) for n in (50, 100, 200, 290)}  # fmt: skip
        summary[group] = entry
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    (out / "results.md").write_text(markdown(summary))
    example = runs.get("digits/digits-power-epig")
    if example:
        plot_example(sorted(example, key=lambda r: r["seed"])[0], out / "learning-curve-estimate.png")
    return summary


def markdown(summary: dict[str, Any]) -> str:
    """The summary as the tables README_EXPERIMENTS.md quotes."""
    def f(v: Any, digits: int = 3) -> str:
        return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else (f"{v:.{digits}f}" if isinstance(v, float) else str(v))

    lines = ["# Estimates without a test set (`studies/estimates/run.py`)", "",
             "## Per-round LURE estimates of accuracy (each from the round's own 10 labels)", "",
             "| runs | seeds | rounds | MAE vs test | MAE vs pool | bias vs pool | plain mean's bias vs pool | 95 % coverage of test | of pool | mean width |",
             "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for group, entry in summary.items():
        e = entry["estimates"]
        if e.get("rounds"):
            lines.append(f"| {group} | {entry['runs']} | {e['rounds']} | {f(e['mae_vs_test'])} | {f(e['mae_vs_pool'])} | {f(e['bias_vs_pool'])} | "
                         f"{f(e['naive_bias_vs_pool'])} | {f(e['coverage_test'], 2)} | {f(e['coverage_pool'], 2)} | {f(e['mean_width'])} |")  # fmt: skip
    lines += ["", f"## Active testing: {AT_BUDGET} labels, {AT_DRAWS} draws per run, the final model on the unlabelled pool", "",
              "| runs | against | method | MAE | 95 % coverage | mean width |", "|---|---|---|---|---|---|"]  # fmt: skip
    for group, entry in summary.items():
        for key, at in entry.get("active_testing", {}).items():
            method, _, target = key.partition("_vs_")
            lines.append(f"| {group} | {target} | {'active testing (LURE)' if method == 'active' else 'random 50-label split'} | "
                         f"{f(at['mae'])} | {f(at['coverage'], 2)} | {f(at['width'])} |")  # fmt: skip
    lines += ["", "## The stopping signal: labels where it fires against where test accuracy plateaued", "",
              "plateau: the first labels whose test accuracy is within 1 point of the last round's; stop at κ: the first labels where "
              "the mean Cohen's kappa of the last 3 pairs of consecutive rounds' stop-set predictions reaches κ (test accuracy there).", "",
              "| runs | seed | stop at 0.99 | stop at 0.98 | stop at 0.97 | plateau | last | test at last | mean κ of the last 3 |",
              "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for group, entry in summary.items():
        for s in entry["stopping"]:
            cells = [f"{s[f'stop_{t}']} ({f(s[f'test_at_stop_{t}'])})" if s[f"stop_{t}"] is not None else "never" for t in STOP_THRESHOLDS]
            lines.append(f"| {group} | {s['seed']} | {' | '.join(cells)} | {s['plateau']} | {s['last']} | {f(s['final_test'])} | {f(s['mean_agreement_last_3'])} |")
    lines += ["", "## Test accuracy (mean over seeds) at label counts", "", "| runs | 50 | 100 | 200 | 290 |", "|---|---|---|---|---|"]
    for group, entry in summary.items():
        if "test_accuracy_at" in entry:
            lines.append(f"| {group} | " + " | ".join(f(v) for v in entry["test_accuracy_at"].values()) + " |")
    return "\n".join(lines) + "\n"


def plot_example(run: dict[str, Any], path: Path) -> None:
    """One run's test accuracy and, beside it, the estimate from each round's chosen labels."""
    from activebayes.report import Segment, plot_learning_segments

    rounds = [r for r in run["rounds"] if r.get("test_accuracy") is not None]
    segment = Segment(f"mc-dropout + {run['arm']} (test split)", tuple(r["round"] for r in rounds),
                      tuple((r["labels"], r["test_accuracy"]) for r in rounds))  # fmt: skip
    band = [(r["labels"], *r["est_accuracy"]) for r in rounds if r.get("est_accuracy")]
    plot_learning_segments({"digits": [segment]}, path, ylabel="accuracy", title=f"digits, seed {run['seed']}", estimate=band)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--parts", default="digits,tables,debias")
    parser.add_argument("--max-labels", type=int, default=300)
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    parts = args.parts.split(",")
    cache = HERE.parent / "benchmark" / ".tables"
    cache.mkdir(parents=True, exist_ok=True)
    jobs: list[tuple[str, str, Path, str, str | None, str, int, int, dict[str, Any]]] = []
    digits = digits_csv(cache)
    for seed in seeds:
        if "digits" in parts:
            for arm in ("power-epig", "power-bald", "random"):
                jobs.append(("digits", "digits", digits, "digit", None, arm, seed, args.max_labels, {"active_testing": arm == "power-epig"}))
        if "tables" in parts:
            for name in ("breast_cancer", "wine"):
                csv, label, key = table_csv(name, cache)
                jobs.append(("tables", name, csv, label, key, "power-epig", seed, 100, {}))
        if "debias" in parts:
            jobs.append(("debias", "digits", digits, "digit", None, "power-bald", seed, args.max_labels, {"debias": True}))
    for part, table, csv, label, key, arm, seed, max_labels, extra in jobs:
        path = args.out / "runs" / part / f"{table}-{arm}-seed{seed}.json"
        if path.exists():
            continue
        print(f"{part}: {table} {arm} seed {seed} ...", flush=True)
        result = run(csv, label, key, arm, seed, max_labels, **extra) | {"table": table, "part": part}
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=1) + "\n")
        print(f"  {result['seconds']:.0f} s", flush=True)
    print(json.dumps(write_summary(args.out), indent=1))


if __name__ == "__main__":
    main()
