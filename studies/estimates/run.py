"""Estimates without a test set, measured against one: LURE estimates from the chosen labels,
active testing at a budget of 50 against a random 50-label test split, the stopping signal
against where test accuracy plateaued, and `debias` training.

    .venv/bin/python studies/estimates/run.py [--out studies/estimates/results] [--seeds 0,1,2]
        [--parts digits,tables,debias,mnist,benchmark] [--tables NAME,...] [--arms ARM,...] [--max-labels 300]
        [--summary [--reruns DIR]]

Every run is what a user of the CLI gets, in-process (as studies/benchmark/run.py does): a fresh
SQLite project, `pool add TABLE --label-column L --test-fraction 0.3 --seed SEED`, rounds of
`round --oracle truth --acquisition ARM --k 10 --seed SEED` with the CLI's default model
(mc-dropout MLP 128-128, dropout 0.5, training sized to the labels: at least 500 steps), the
first batch random, one torch thread. Each round records its stop set's predictions; here the
stop set is every item of the table (`stop_set_size`), so the model's accuracy on the pool it
drew from is known exactly, beside the test split's.

digits     scikit-learn's 8×8 digits (1,797 rows) as a 64-column table; arms power-epig (the CLI's
           default), power-bald and random, to `--max-labels` labels. Per round: the LURE
           estimate of accuracy from the round's 10 labels and its 95 % interval, the test
           accuracy, the pool accuracy. Per run at the end: active testing — the final model, 50
           labels drawn ∝ its expected 0-1 loss (+10 % uniform), 40 draws — against 40 random
           50-label samples of the same pool; and the stopping rule's stop point against the
           first label count whose test accuracy is within 1 point of the last round's.
tables     breast_cancer and wine (scikit-learn's bundled tables, studies/benchmark/tables.py),
           power-epig, to 100 labels: the same per-round figures.
mnist      8,000 of MNIST's training images (the four IDX files, raw or .gz, in shared/data/mnist
           beside the repository's folder; skipped when absent) as the npz a user would add
           ([N, 784] in [0, 1]): pool 5,600, test split 2,400; power-bald (with active testing)
           and random, to 300 fitted labels.
benchmark  the classification tables of the real-data benchmark (studies/benchmark/config.json,
           its loader and row cap), power-epig with active testing, to 140 fitted labels.
debias     digits, power-bald, with and without `debias` (LURE-weighted training).

Each round's stop-set agreement (Cohen's kappa of consecutive rounds) is kept, so the summary
(`summary.py`) reports where the rule stops at Bloodgood & Vijay-Shanker's threshold 0.99 and at
looser ones, per run and over every study.

Each round also keeps its raw draws ("draws": the pool size N_t, and in rank order each query's
0-1 loss, class NLL and draw probability q, None for a deterministic query), and active testing
each draw's 0-1 losses and q, so that any interval can be recomputed from them (`intervals.py`;
runs written before these were kept have their intervals re-derived from the stored ones).

Each finished run is written to `<out>/runs/<part>/<table>-<arm>-seed<S>.json` and skipped when
rerun (`--tables` and `--arms` keep only the named tables and arms, e.g. to rerun a few into a
scratch `--out`); `<out>/summary.json` and `<out>/results.md` are rewritten from all runs at the end (with
`--summary`, only that).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "benchmark")]

import tables as benchmark_tables  # noqa: E402
from summary import write_summary  # noqa: E402

K = 10
TEST_FRACTION = 0.3
AT_BUDGET = 50
AT_DRAWS = 40


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


MNIST_FOLDER = Path(__file__).resolve().parents[3] / "shared" / "data" / "mnist"
MNIST_ROWS = 8000  # training images in the table: a pool of 5,600 and a test split of 2,400
MNIST_LABELS = 310  # the last fitted round has 300 labels


def mnist_npz(folder: Path, source: Path = MNIST_FOLDER) -> Path | None:
    """MNIST_ROWS of MNIST's training images (a seed-0 uniform subset) as the npz a user would
    `pool add`: x [N, 784] float32 in [0, 1], y the digits, keys the image's index in the
    training file. None when `source` lacks the four IDX files, raw or .gz (the part is skipped)."""
    from activebayes.data.loaders import read_idx
    from activebayes.errors import ConfigError
    from activebayes.study import mnist_files

    try:
        files = mnist_files(source)
    except ConfigError:
        return None
    path = folder / f"mnist-{MNIST_ROWS}.npz"
    if not path.exists():
        x, y = read_idx(files["train_x"]), read_idx(files["train_y"])
        rows = np.sort(np.random.default_rng(0).choice(len(y), MNIST_ROWS, replace=False))
        np.savez(path, x=(x[rows].reshape(len(rows), -1) / 255.0).astype(np.float32), y=y[rows].astype(np.int64),
                 keys=np.asarray([f"train-{i}" for i in rows]))  # fmt: skip
    return path


BENCHMARK_CONFIG = HERE.parent / "benchmark" / "config.json"
BENCHMARK_LABELS = 150  # the smallest pool (penguins, 241 items) keeps 91 unlabelled for active testing


def benchmark_classification_tables() -> list[str]:
    """The classification tables of the real-data benchmark's config (studies/benchmark)."""
    config = json.loads(BENCHMARK_CONFIG.read_text())
    return [name for name in config["tables"] if benchmark_tables.TABLES[name].task == "classification"]


def table_csv(name: str, folder: Path) -> tuple[Path, str, str | None]:
    max_rows = json.loads(BENCHMARK_CONFIG.read_text())["max_rows"]
    record = benchmark_tables.write_tables(folder, [name], max_rows)[name]
    return folder / f"{name}.csv", record["label"], record["key"]


def run(csv: Path, label: str | None, key: str | None, arm: str, seed: int, max_labels: int, *, debias: bool = False,
        active_testing: bool = False) -> dict[str, Any]:  # fmt: skip
    """One active-learning run; its per-round records and, optionally, active testing at the end."""
    import torch

    from activebayes.data import load_project_data, project_truth
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
        truth = project_truth(store, "p", data)  # key -> label of every item, for the pool accuracy
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
                if estimate.available:
                    record["draws"] = round_draws(rnd, queries, classes)
                records.append(record)
            labelled_before.update(q.key for q in queries)
        result = {"arm": arm, "seed": seed, "debias": debias, "rounds": records, "seconds": None}
        if active_testing:
            result["active_testing"] = compare_active_testing(loop, store, truth, classes, seed)
    result["seconds"] = time.perf_counter() - started
    return result


def round_draws(rnd: Any, queries: list[Any], classes: list[str]) -> dict[str, Any]:
    """The round's raw draws: {"pool": N_t, "zero_one": [k], "class_nll": [k] or None, "q": [k]}
    in rank order (q None for a deterministic query); every query of the study is answered."""
    from activebayes.round_estimates import item_losses

    ordered = sorted(queries, key=lambda q: q.rank)
    losses = item_losses([q.prediction for q in ordered], [q.value for q in ordered], "classification", classes)
    nll = losses.class_nll.tolist() if losses.class_nll is not None else None
    return {"pool": int(rnd.acquisition_settings["candidates"]), "zero_one": losses.zero_one.tolist(), "class_nll": nll,
            "q": [None if q.probability is None else float(q.probability) for q in ordered]}  # fmt: skip


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
    active, random, draws = [], [], []
    rng = np.random.default_rng(seed)
    for draw_seed in range(AT_DRAWS):
        draw = draw_evaluation_set(expected, AT_BUDGET, draw_seed)
        estimate = lure_estimate(wrong[draw.positions], draw.probabilities, len(wrong), bounded=True).map(lambda r: 1 - r, increasing=False)
        active.append((estimate.value, estimate.low, estimate.high))
        draws.append({"zero_one": wrong[draw.positions].tolist(), "q": draw.probabilities.tolist()})
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
            "active_vs_test": summary(active, test_accuracy), "random_vs_test": summary(random, test_accuracy),
            "draws": draws, "random": [list(r) for r in random]}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--parts", default="digits,tables,debias,mnist,benchmark")
    parser.add_argument("--tables", default=None, help="only these tables (comma-separated names), e.g. to rerun a few")
    parser.add_argument("--arms", default=None, help="only these arms (comma-separated)")
    parser.add_argument("--max-labels", type=int, default=300)
    parser.add_argument("--summary", action="store_true", help="only rewrite summary.json and results.md from the runs on disk")
    parser.add_argument("--reruns", type=Path, default=None, help="with --summary: an --out of fresh runs whose active-testing draws give the current rule's figures")
    args = parser.parse_args()
    if args.summary:
        if args.reruns is not None and not (args.reruns / "runs").is_dir():
            print(f"--reruns: no runs folder under {args.reruns}", file=sys.stderr)
            raise SystemExit(2)
        write_summary(args.out, args.reruns)
        return
    seeds = [int(s) for s in args.seeds.split(",")]
    keep = None if args.tables is None else set(args.tables.split(","))
    parts = args.parts.split(",")
    cache = HERE.parent / "benchmark" / ".tables"
    cache.mkdir(parents=True, exist_ok=True)
    jobs: list[tuple[str, str, Path, str, str | None, str, int, int, dict[str, Any]]] = []
    digits = digits_csv(cache)
    mnist = mnist_npz(cache) if "mnist" in parts else None
    if "mnist" in parts and mnist is None:
        print(f"mnist: skipped, no IDX files in {MNIST_FOLDER}", flush=True)
    for seed in seeds:
        if "digits" in parts:
            for arm in ("power-epig", "power-bald", "random"):
                jobs.append(("digits", "digits", digits, "digit", None, arm, seed, args.max_labels, {"active_testing": arm == "power-epig"}))
        if "tables" in parts:
            for name in [n for n in ("breast_cancer", "wine") if keep is None or n in keep]:
                csv, label, key = table_csv(name, cache)
                jobs.append(("tables", name, csv, label, key, "power-epig", seed, 100, {}))
        if "benchmark" in parts:
            for name in [n for n in benchmark_classification_tables() if keep is None or n in keep]:
                csv, label, key = table_csv(name, cache)
                jobs.append(("benchmark", name, csv, label, key, "power-epig", seed, BENCHMARK_LABELS, {"active_testing": True}))
        if mnist is not None:
            for arm in ("power-bald", "random"):
                jobs.append(("mnist", "mnist", mnist, None, None, arm, seed, MNIST_LABELS, {"active_testing": arm == "power-bald"}))
        if "debias" in parts:
            jobs.append(("debias", "digits", digits, "digit", None, "power-bald", seed, args.max_labels, {"debias": True}))
    arms = None if args.arms is None else set(args.arms.split(","))
    jobs = [job for job in jobs if (keep is None or job[1] in keep) and (arms is None or job[5] in arms)]
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
