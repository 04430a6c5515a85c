"""The default classification model against simple baselines on the same labels.

    .venv/bin/python studies/benchmark/baselines.py --tables heldout --seeds 0,1,2 \
        --out studies/benchmark/results/baselines/heldout
    .venv/bin/python studies/benchmark/baselines.py --seeds 0,1,2 --out studies/benchmark/results/baselines/benchmark

The question: does the CLI's classification model learn as much from a few labels as a model a
user could fit instead? No acquisition is involved. For a table × seed, as run.py does (the same
project, the same test split for that seed, the same standardised features `pool add` builds):

1. a SQLite project and `register_pool(TABLE.csv, label, key, test_fraction=0.3, seed=SEED)`;
2. labelled sets of 10, 20, 50 and 100 pool items (`labelled_sets`: the first n of one seeded
   permutation of the pool, so the sets are nested, as random acquisition's are);
3. on each set, every model of `MODELS` fitted on the same rows and scored on the test split:
   * `ours`: the CLI's default (`round` without --model, --posterior or --epochs): the mlp of
     `activebayes_cli._model.model_factory` in the mc-dropout posterior of `posterior_factory`
     (training sized to the labels, weight decay λ/N), predicting the class of highest mean
     MC probability, as the loop's test accuracy does;
   * `lr`: scikit-learn's LogisticRegression with its default C = 1 (max_iter 1000);
   * `lr-cv`: LogisticRegression with C from `C_GRID` by 5-fold cross-validation on the labelled
     set alone (`choose_c`: the best pooled fold accuracy; ties to the C nearest 1);
   * `rf`: RandomForestClassifier, default settings, seeded.
   A labelled set of one class gives every sklearn model the constant prediction of that class.

Each table × seed is written as `<out>/runs/<table>/seed<S>.json` (rerun skips it);
`baselines_report.py` writes `<out>/results.md` from them (also at the end of this script).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import tables as benchmark_tables  # noqa: E402

SIZES = (10, 20, 50, 100)
TEST_FRACTION = 0.3
#: the C values lr-cv chooses among: 10^-2 .. 10^3, half a decade apart
C_GRID = tuple(float(c) for c in 10.0 ** np.linspace(-2, 3, 11))
CV_FOLDS = 5
#: mixed into the seed of the labelled sets, so they are not the test split's draw
SET_SALT = 4021

#: a model: fit(x [n, D], y [n] class indices, n_classes, seed) -> predict(x [m, D]) -> [m] classes
Fit = Callable[[np.ndarray, np.ndarray, int, int], Callable[[np.ndarray], np.ndarray]]


@dataclass
class PreparedTable:
    """A table imported as `pool add` imports it: x [N, D] the standardised features of every row;
    pool_rows [P] / test_rows [T] the rows of each split; pool_y [P] / test_y [T] their labels as
    indices into `classes`."""

    x: np.ndarray
    pool_rows: np.ndarray
    pool_y: np.ndarray
    test_rows: np.ndarray
    test_y: np.ndarray
    classes: list[str]


def prepare(csv: Path, label: str, key: str | None, seed: int, test_fraction: float = TEST_FRACTION) -> PreparedTable:
    """`csv` imported into a fresh SQLite project as run.py's runs import it (the CLI's defaults,
    only the label and key given); the features and both splits' labels read back."""
    from activebayes.data import load_project_data
    from activebayes.data.project import label_texts
    from activebayes.store import PoolStore
    from activebayes_cli._pool_import import register_pool

    with tempfile.TemporaryDirectory(prefix="ab-baselines-") as tmp, PoolStore(f"sqlite:///{Path(tmp) / 'project.db'}") as store:
        store.create_project("p", task="classification", classes_from_data=True)
        register_pool(store, "p", csv, label_column=label, key_column=key, test_fraction=test_fraction, seed=seed,
                      text_folder=Path(tmp) / "cache")  # fmt: skip
        classes = [str(c) for c in store.project("p").classes]
        data = load_project_data(store, "p")
        x = np.array(data.x, dtype=np.float32)
        _, pool_rows = store.candidates("p")
        test_rows, _, test_values = store.labels("p", split="test")
        index = {c: i for i, c in enumerate(classes)}
        pool_rows = np.asarray(pool_rows, dtype=np.int64)
        pool_y = np.asarray([index[v] for v in label_texts(np.asarray(data.y)[pool_rows])], dtype=np.int64)
        test_y = np.asarray([index[v] for v in test_values], dtype=np.int64)
    return PreparedTable(x, pool_rows, pool_y, np.asarray(test_rows, dtype=np.int64), test_y, classes)


def labelled_sets(pool_size: int, sizes: Sequence[int], seed: int) -> dict[int, np.ndarray]:
    """{n: positions [n] into the pool} for each n in `sizes` up to `pool_size`: the first n of
    one permutation of range(pool_size) seeded by (seed, SET_SALT), so smaller sets lie inside larger ones."""
    order = np.random.default_rng([int(seed), SET_SALT]).permutation(pool_size)
    return {int(n): order[:n] for n in sizes if n <= pool_size}


# ---- the models ---------------------------------------------------------------------------------
def _constant(label: int) -> Callable[[np.ndarray], np.ndarray]:
    return lambda x: np.full(len(x), label, dtype=np.int64)


def _fit_lr(x: np.ndarray, y: np.ndarray, c: float) -> Callable[[np.ndarray], np.ndarray]:
    """LogisticRegression(C=c) on (x, y); the constant prediction when y has one class."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    if len(np.unique(y)) < 2:
        return _constant(int(y[0]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = LogisticRegression(C=c, max_iter=1000).fit(x, y)
    return model.predict


#: fit_at(x [n, D], y [n], value) -> predict(x [m, D]) -> [m] classes: a model fitted at one value of a setting
FitAt = Callable[[np.ndarray, np.ndarray, float], Callable[[np.ndarray], np.ndarray]]


def cv_choice(x: np.ndarray, y: np.ndarray, seed: int, grid: Sequence[float], fit_at: FitAt, folds: int = CV_FOLDS) -> float:
    """The value v of `grid` whose fits `fit_at(x_train, y_train, v)` get the most held-out items right
    over `folds`-fold cross-validation on (x, y) alone (shuffled KFold, seeded; fewer folds when
    there are fewer items); ties go to the v nearest 1 in log scale, then the smaller."""
    from sklearn.model_selection import KFold

    splits = list(KFold(min(folds, len(y)), shuffle=True, random_state=seed).split(x))
    correct = [sum(int((fit_at(x[tr], y[tr], v)(x[te]) == y[te]).sum()) for tr, te in splits) for v in grid]
    best = max(correct)
    return min((v for v, k in zip(grid, correct) if k == best), key=lambda v: (abs(np.log10(v)), v))


def choose_c(x: np.ndarray, y: np.ndarray, seed: int, grid: Sequence[float] = C_GRID, folds: int = CV_FOLDS) -> float:
    """LogisticRegression's C by `cv_choice` over `grid`."""
    return cv_choice(x, y, seed, grid, _fit_lr, folds)


def fit_lr(x: np.ndarray, y: np.ndarray, n_classes: int, seed: int) -> Callable[[np.ndarray], np.ndarray]:
    return _fit_lr(x, y, 1.0)


def fit_lr_cv(x: np.ndarray, y: np.ndarray, n_classes: int, seed: int) -> Callable[[np.ndarray], np.ndarray]:
    return _fit_lr(x, y, choose_c(x, y, seed))


def fit_rf(x: np.ndarray, y: np.ndarray, n_classes: int, seed: int) -> Callable[[np.ndarray], np.ndarray]:
    from sklearn.ensemble import RandomForestClassifier

    return RandomForestClassifier(random_state=seed, n_jobs=1).fit(x, y).predict


def fit_ours(x: np.ndarray, y: np.ndarray, n_classes: int, seed: int) -> Callable[[np.ndarray], np.ndarray]:
    """The CLI's default classification model (module docstring) fitted on (x, y)."""
    from activebayes_cli._model import default_posterior, model_factory, posterior_factory

    model_fn = model_factory("mlp", x.shape[1:], n_classes)
    factory, _ = posterior_factory(default_posterior("classification"), model_fn, samples=None, epochs=None, device="cpu")
    return network_predict(factory(seed=seed).fit(to_tensor(x), to_tensor(y)).predict_proba)


def to_tensor(a: np.ndarray) -> Any:
    import torch

    return torch.from_numpy(np.ascontiguousarray(a))


def network_predict(predict_proba: Callable[[Any], Any], batch: int = 1024) -> Callable[[np.ndarray], np.ndarray]:
    """x [m, D] -> the class of highest probability [m] under `predict_proba` (a fitted posterior's
    x [b, D] tensor -> [b, C]; its posterior predictive, or dropout off), in batches."""
    import torch

    def predict(x: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            parts = [predict_proba(to_tensor(x[i : i + batch])).argmax(-1).cpu().numpy() for i in range(0, len(x), batch)]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    return predict


MODELS: dict[str, Fit] = {"ours": fit_ours, "lr": fit_lr, "lr-cv": fit_lr_cv, "rf": fit_rf}


# ---- a table × seed ------------------------------------------------------------------------------
def model_seed(seed: int, n: int) -> int:
    """The seed a model gets on the labelled set of n items of run seed `seed` (the loop's round seed)."""
    from activebayes.loop import round_seed

    return round_seed(seed, n)


def evaluate(table: PreparedTable, seed: int, models: Mapping[str, Fit], sizes: Sequence[int] = SIZES) -> list[dict[str, Any]]:
    """[{"labels": n, "model", "accuracy", "seconds"}] for each labelled set (`labelled_sets`) and
    model, every model fitted on the same pool rows and scored on the test rows; each record
    keeps the labelled rows' classes seen (`"classes_seen"`)."""
    x_test = table.x[table.test_rows]
    out = []
    for n, positions in labelled_sets(len(table.pool_rows), sizes, seed).items():
        rows, y = table.pool_rows[positions], table.pool_y[positions]
        for name, fit in models.items():
            t0 = time.perf_counter()
            predicted = np.asarray(fit(table.x[rows], y, len(table.classes), model_seed(seed, n))(x_test))
            accuracy = float(np.mean(predicted == table.test_y))
            out.append({"labels": n, "model": name, "accuracy": accuracy, "seconds": time.perf_counter() - t0,
                        "classes_seen": int(len(np.unique(y)))})  # fmt: skip
    return out


def run_path(out: Path, table: str, seed: int) -> Path:
    return out / "runs" / table / f"seed{seed}.json"


def run_table(record: dict[str, Any], cache: Path, seed: int, models: Sequence[str], sizes: Sequence[int]) -> dict[str, Any]:
    """One table × seed (module docstring) as the record written to its run file."""
    start = time.perf_counter()
    table = prepare(cache / record["file"], record["label"], record["key"], seed)
    results = evaluate(table, seed, {m: MODELS[m] for m in models}, sizes)
    return {"table": record["name"], "seed": seed, "classes": len(table.classes), "pool": len(table.pool_rows),
            "test": len(table.test_rows), "features": int(table.x.shape[1]), "results": results,
            "settings": run_settings(record, models, sizes), "seconds": time.perf_counter() - start}  # fmt: skip


def run_settings(record: dict[str, Any], models: Sequence[str], sizes: Sequence[int]) -> dict[str, Any]:
    """What a run file on the table of `record` must share to be reused."""
    return {"sizes": list(sizes), "models": list(models), "test_fraction": TEST_FRACTION,
            "table": {**record["settings"], "rows": record["rows"]}}  # fmt: skip


def table_records(names: list[str], cache: Path) -> dict[str, dict[str, Any]]:
    """{name: tables.py record} of `names` (or the held-out / confirmation set) written to `cache`."""
    config = json.loads((HERE / "config.json").read_text())
    if names in (["heldout"], ["confirm"]):
        import heldout as heldout_tables

        chosen, _ = heldout_tables.heldout_tables(names[0])
        benchmark_tables.TABLES.update(chosen)
        names = list(chosen)
    records = benchmark_tables.write_tables(cache, names, config["max_rows"])
    return {n: r for n, r in records.items() if r["task"] == "classification"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", help="comma-separated names, or 'heldout' or 'confirm' (default: config.json's classification tables)")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--out", type=Path, default=HERE / "results" / "baselines")
    parser.add_argument("--cache", type=Path, default=benchmark_tables.CACHE)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    # scikit-learn's note on 10 labels of many classes ("could represent a regression problem")
    warnings.filterwarnings("ignore", message="The number of unique classes")
    names = args.tables.split(",") if args.tables else json.loads((HERE / "config.json").read_text())["tables"]
    models = args.models.split(",")
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        parser.error(f"--models: unknown {unknown}; known: {', '.join(MODELS)}")
    sizes = [int(s) for s in args.sizes.split(",")]
    records = table_records(names, args.cache)
    start, failed = time.perf_counter(), 0
    for name, record in records.items():
        for seed in (int(s) for s in args.seeds.split(",")):
            path = run_path(args.out, name, seed)
            if path.exists() and json.loads(path.read_text()).get("settings") == run_settings(record, models, sizes):
                continue
            try:
                run = run_table(record, args.cache, seed, models, sizes)
            except Exception as exc:  # one table's failure is reported, the others go on
                failed += 1
                print(f"{name} seed {seed}: FAILED {type(exc).__name__}: {exc}", flush=True)
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(run, indent=1) + "\n")
            shown = " ".join(f"{r['model']}@{r['labels']}={r['accuracy']:.3f}" for r in run["results"] if r["labels"] in (20, 50))
            print(f"{name} seed {seed}: {run['seconds']:.1f} s  {shown}", flush=True)
    print(f"wall {time.perf_counter() - start:.0f} s", flush=True)
    import baselines_report

    baselines_report.write_report(args.out)
    print(f"wrote {args.out / 'results.md'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
