"""Real-data active-learning benchmark: which acquisition should be the tool's default?

    .venv/bin/python studies/benchmark/run.py [--config studies/benchmark/config.json]
        [--out studies/benchmark/results] [--jobs 2] [--tables a,b] [--arms x,y] [--seeds 0,1]
        [--cache studies/benchmark/.tables] [--no-report] [--model-variant default|marglik]
    .venv/bin/python studies/benchmark/run.py --tables heldout --seeds 0,1,2 --out studies/benchmark/results/heldout

For each table × arm × seed, exactly what a user of the CLI gets (run in-process, as
studies/tabular/run.py does, rather than one `activebayes` process per round):

* a fresh SQLite project (`init`; classification: classes read from the labels),
* `pool add TABLE.csv --label-column L [--key-column K] --test-fraction 0.3 --seed SEED`
  (`activebayes_cli._pool_import.register_pool` with only the label and key given: the tool's
  own defaults for categorical columns, gaps (imputed) and standardisation),
* rounds of `round --oracle truth --acquisition ARM --k 10 --seed SEED` with the CLI's default
  model (classification: `--model mlp --posterior mc-dropout`, the training sized to the labels;
  regression: `--posterior gp`), until a round has been fitted on `max_labels` labels. The first
  round has no labels (the tool's cold start: 10 items at random); each later round fits on 10,
  20, ..., 100 labels and the loop records the test-split accuracy (classification) or RMSE
  (regression) of that fit.

`--tables heldout` runs the held-out tables instead (heldout.py: classification tables of the
sweep's sample that the defaults were not chosen on, picked by a fixed rule), `random` against
the CLI's default arm (arms.py) unless `--arms` is given, keeps the selection in `<out>/selection.md`,
and the report appends the summary rows in the benchmark's format (every arm with runs in `--out`)
and the selection (also when report.py runs alone on `<out>`). `--tables confirm` does the same
on the confirmation set (heldout.py: the same rule on a second sample, none of the held-out
set's tables).

`--model-variant marglik` trains the network by online marginal-likelihood training instead of
the 1/N weight decay (variants.py); the default variant is the CLI's model as it is.

A seed sets the test split, the cold start and the rounds' seeds, so arms with the same seed
share the split and the first 10 labels (the comparison with random is paired).

Arms come from the config (`arms.classification`, `arms.regression`) or `--arms`; an arm
`activebayes.acquisition.resolve_acquisition` does not know (yet), or one the task does not take,
is skipped with a printed note. Runs go to `--jobs` processes (spawned, one torch thread each);
each finished run is written as `<out>/runs/<table>/<arm>/seed<S>.json`, and a rerun skips the
runs already written with the same settings. At the end `report.py` writes `<out>/results.md`,
`<out>/summary.json` and `<out>/curves.png` from every run in `<out>/runs` (see report.py).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import tables as benchmark_tables  # noqa: E402
from arms import arm_parts, default_arm  # noqa: E402
import variants as benchmark_variants  # noqa: E402

DEFAULT_CONFIG = HERE / "config.json"
DEFAULT_OUT = HERE / "results"


def fingerprint(cfg: dict[str, Any], record: dict[str, Any], variant: str = "default") -> dict[str, Any]:
    """The settings a finished run on the table of `record` (tables.py) must share to be reused
    (a model variant other than the default among them)."""
    return {
        "k": int(cfg["k"]),
        "max_labels": int(cfg["max_labels"]),
        "test_fraction": float(cfg["test_fraction"]),
        "table": {**record["settings"], "rows": record["rows"]},
        **({"model_variant": variant} if variant != "default" else {}),
    }


def run_path(out: Path, table: str, arm: str, seed: int) -> Path:
    return out / "runs" / table / arm.replace("/", "+") / f"seed{seed}.json"


def finished(path: Path, fp: dict[str, Any]) -> bool:
    if not path.exists():
        return False
    try:
        return json.loads(path.read_text()).get("settings") == fp
    except (OSError, ValueError):
        return False


def _init_worker() -> None:
    import torch

    torch.set_num_threads(1)
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def run_one(job: dict[str, Any]) -> dict[str, Any]:
    """One active-learning run (see the module docstring); its record, also written to job["path"]."""
    import torch

    from activebayes.data import load_project_data
    from activebayes.loop import ActiveLearningLoop
    from activebayes.oracles import truth_oracle
    from activebayes.store import PoolStore
    from activebayes_cli._model import NO_MODEL, default_posterior, model_factory, posterior_factory
    from activebayes_cli._pool_import import register_pool

    torch.set_num_threads(1)
    table, arm, seed, task = job["table"], job["arm"], int(job["seed"]), job["task"]
    k, max_labels = int(job["settings"]["k"]), int(job["settings"]["max_labels"])
    metric = "accuracy" if task == "classification" else "rmse"
    start = time.perf_counter()
    curve: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ab-bench-") as tmp:
        work = Path(tmp)
        with PoolStore(f"sqlite:///{work / 'project.db'}") as store:
            store.create_project("p", task=task, classes_from_data=task == "classification")
            summary = register_pool(
                store, "p", Path(job["csv"]), label_column=job["label"], key_column=job["key"],
                test_fraction=float(job["settings"]["test_fraction"]), seed=seed, text_folder=work / "cache",
            )  # fmt: skip
            info = store.project("p")
            data = load_project_data(store, "p")
            posterior = default_posterior(task)
            model_fn = None if posterior == "gp" else model_factory("mlp", data.x.shape[1:], len(info.classes))
            factory, settings = posterior_factory(posterior, model_fn, samples=None, epochs=None, device="cpu")
            factory, settings = benchmark_variants.apply_variant(job["settings"].get("model_variant", "default"), factory, settings)
            settings = {"model": NO_MODEL if posterior == "gp" else "mlp", **settings}
            acquisition, first, cover = arm_parts(arm)
            from activebayes_cli._model import default_first

            loop_options = {"first": first or default_first(), "cover_classes": cover}
            loop = ActiveLearningLoop(
                factory, acquisition, store, "p", truth_oracle(store, "p", data), batch_size=k, seed=seed, device="cpu",
                who="truth", posterior_name=posterior, posterior_settings=settings, data=data, **loop_options,
            )  # fmt: skip
            cold_s = None
            while (labelled := store.count_labelled("p")) <= max_labels:
                t0 = time.perf_counter()
                result = loop.step()
                seconds = time.perf_counter() - t0
                if labelled == 0:
                    cold_s = seconds
                    continue
                point = {"labels": labelled, metric: float(result.metrics[metric]), "seconds": seconds}
                point |= {key: float(v) for key, v in result.metrics.items() if key in ("nll", "ece") and v is not None}
                point |= {key: float(v) for key, v in (result.timings or {}).items()}
                curve.append(point)
    record = {
        "table": table,
        "arm": arm,
        "seed": seed,
        "task": task,
        "metric": metric,
        "posterior": posterior,
        "model": settings["model"],
        "curve": curve,
        "cold_start_s": cold_s,
        "seconds": time.perf_counter() - start,
        "pool": {key: summary[key] for key in ("rows", "pool_items", "test_items", "features", "key_column", "classes", "missing", "notes")},
        "settings": job["settings"],
        "torch_threads": torch.get_num_threads(),
    }
    path = Path(job["path"])
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp_path = path.with_suffix(".tmp")
    tmp_path.write_text(json.dumps(record, indent=1) + "\n")
    tmp_path.replace(path)
    return record


def _safe_run(job: dict[str, Any]) -> dict[str, Any]:
    try:
        return run_one(job)
    except Exception as exc:  # one run's failure is reported, the others go on
        return {"table": job["table"], "arm": job["arm"], "seed": job["seed"], "error": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc()}  # fmt: skip


def arm_problem(arm: str, task: str) -> str | None:
    """Why `arm` cannot run on a `task` table with the CLI's default posterior, or None."""
    from activebayes.acquisition import resolve_acquisition
    from activebayes.errors import ConfigError
    from activebayes.loop import FIRST_BATCHES
    from activebayes_cli._app import CliError
    from activebayes_cli._model import check_task_options, default_posterior

    acquisition, first, _ = arm_parts(arm)
    if first not in (None, *FIRST_BATCHES):
        return f"first batch {first!r} is not one of {', '.join(FIRST_BATCHES)}"
    if arm.count("/") >= 2 and arm.split("/", 2)[2] != "cover":
        return f"arm {arm!r}: the third part can only be 'cover'"
    try:
        resolve_acquisition(acquisition)
    except ConfigError:
        return "activebayes.acquisition.resolve_acquisition does not know it (yet)"
    try:
        check_task_options(task, default_posterior(task), acquisition)
    except CliError as exc:
        return f"{exc.what}" if hasattr(exc, "what") else str(exc)
    return None


def _csv_list(text: str | None) -> list[str] | None:
    return [t.strip() for t in text.split(",") if t.strip()] if text else None


def plan_jobs(cfg: dict[str, Any], out: Path, names: list[str], arms: list[str] | None, seeds: list[int],
              records: dict[str, dict[str, Any]], cache: Path, variant: str = "default") -> tuple[list[dict[str, Any]], int, list[str]]:  # fmt: skip
    """(jobs to run, runs already finished, notes on skipped arms)."""
    jobs, done, notes, checked = [], 0, [], {}
    for name in names:
        rec = records[name]
        fp = fingerprint(cfg, rec, variant)
        task = rec["task"]
        for arm in arms if arms is not None else cfg["arms"][task]:
            if (arm, task) not in checked:
                checked[(arm, task)] = problem = arm_problem(arm, task)
                if problem:
                    notes.append(f"arm {arm!r} skipped for {task} tables: {problem}")
                    print(f"note: {notes[-1]}", flush=True)
            if checked[(arm, task)]:
                continue
            for seed in seeds:
                path = run_path(out, name, arm, seed)
                if finished(path, fp):
                    done += 1
                    continue
                jobs.append({"table": name, "arm": arm, "seed": seed, "task": task, "label": rec["label"], "key": rec["key"],
                             "csv": str(cache / rec["file"]), "path": str(path), "settings": fp})  # fmt: skip
    return jobs, done, notes


def invocation_line(finished: int, failed: int, wall: float, processes: int) -> str:
    """The report's line on this invocation of run.py, empty when it finished no run: the report
    is then of runs made earlier (a regenerated report), and this invocation's time is none of theirs."""
    if not finished:
        return ""
    failures = f" {failed} more failed and are not in the report." if failed else ""
    return (f"Last invocation of run.py: {finished} run(s) in {wall:.0f} s wall on {processes} process(es) "
            f"(one torch thread each).{failures}")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, default=DEFAULT_CONFIG)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--jobs", type=int, default=2, help="processes (default 2)")
    parser.add_argument("--tables", help="comma-separated table names (default: the config's), or 'heldout' or 'confirm' (heldout.py)")
    parser.add_argument("--arms", help="comma-separated acquisitions for every table (default: the config's per task)")
    parser.add_argument("--seeds", help="comma-separated seeds (default: the config's)")
    parser.add_argument("--cache", type=Path, default=benchmark_tables.CACHE, help="where the tables' csv files are written")
    parser.add_argument("--no-report", action="store_true", help="only run; write no report")
    parser.add_argument("--model-variant", choices=benchmark_variants.VARIANTS, default="default",
                        help="how the network is trained (variants.py; default: the CLI's model as it is)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    cfg = json.loads(args.config.read_text())
    names = _csv_list(args.tables) or list(cfg["tables"])
    heldout = names[0] if names in (["heldout"], ["confirm"]) else None
    if heldout:
        import heldout as heldout_tables

        chosen, left_out = heldout_tables.heldout_tables(heldout)
        benchmark_tables.TABLES.update(chosen)
        names = list(chosen)
    unknown = [n for n in names if n not in benchmark_tables.TABLES]
    if unknown:
        parser.error(f"--tables: unknown {unknown}; known: {', '.join(benchmark_tables.TABLES)}")
    arms = _csv_list(args.arms) or (["random", default_arm("classification")] if heldout else None)
    seeds = [int(s) for s in _csv_list(args.seeds)] if args.seeds else [int(s) for s in cfg["seeds"]]
    records = benchmark_tables.write_tables(args.cache, names, cfg["max_rows"])
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    if heldout:  # the report appends it (report.py, also when run alone on `out`)
        heldout_tables.write_selection(out, heldout_tables.selection_markdown(chosen, left_out, records, heldout))
    jobs, done, notes = plan_jobs(cfg, out, names, arms, seeds, records, args.cache, args.model_variant)
    print(f"{len(jobs)} run(s) to do, {done} already finished, {args.jobs} process(es)", flush=True)
    failures = []
    if jobs:
        # the big tables first, so that the last runs are short ones
        jobs.sort(key=lambda j: -records[j["table"]]["rows"])
        if args.jobs <= 1:
            _init_worker()
            results = map(_safe_run, jobs)
            pool = None
        else:
            pool = multiprocessing.get_context("spawn").Pool(args.jobs, initializer=_init_worker)
            results = pool.imap_unordered(_safe_run, jobs)
        try:
            for i, rec in enumerate(results, 1):
                if "error" in rec:
                    failures.append(rec)
                    print(f"[{i}/{len(jobs)}] {rec['table']} {rec['arm']} seed {rec['seed']}: FAILED {rec['error']}", flush=True)
                    continue
                last = rec["curve"][-1] if rec["curve"] else {}
                shown = f"{rec['metric']} {last.get(rec['metric'], float('nan')):.3f} at {last.get('labels')} labels"
                print(f"[{i}/{len(jobs)}] {rec['table']} {rec['arm']} seed {rec['seed']}: {shown} ({rec['seconds']:.1f} s)", flush=True)
        finally:
            if pool is not None:
                pool.close()
                pool.join()
    for rec in failures:
        print(f"\n{rec['table']} {rec['arm']} seed {rec['seed']} failed:\n{rec['traceback']}", file=sys.stderr)
    if not args.no_report:
        import report

        wall = time.perf_counter() - start
        timing = invocation_line(len(jobs) - len(failures), len(failures), wall, args.jobs)
        report.write_report(out, cfg, notes=notes, timing=timing)
        print(f"wrote {out / 'results.md'}, {out / 'summary.json'}, {out / 'curves.png'}")
    wall = time.perf_counter() - start
    print(f"total wall time {wall:.0f} s ({wall / 60:.1f} min) for {len(jobs)} run(s) on {args.jobs} process(es)", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
