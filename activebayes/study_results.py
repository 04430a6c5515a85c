"""A simulated study's results, read back from its database: one learning curve (test accuracy
per label count) per (acquisition, repeat), their mean and sd (ddof=1; 0 for one repeat) over
repeats, the labels each needed to reach ACCURACY_TARGETS, round timings, where each run's
stopping signal fired (`stopped_at`, `activebayes.stopping.first_stop`), results.json (the
same bytes for the same seed), timings.json (the seconds) and the learning-curve plot
(`collect_results`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from activebayes.atomic_files import write_json_atomic
from activebayes.errors import DataError
from activebayes.figures import save_png
from activebayes.stopping import THRESHOLD, WINDOW, first_stop
from activebayes.store import RoundStatus
from activebayes.study_config import StudyConfig

# Gal et al. 2017, Table 1: labels to reach 10% / 5% test error on MNIST
GAL2017_TABLE1 = {"bald": (145, 335), "variation-ratio": (120, 295), "entropy": (165, 355),
                  "mean-std": (230, 695), "random": (255, 835)}  # fmt: skip
ACCURACY_TARGETS = (0.90, 0.95)
TIMING_MILESTONES = (100, 500, 1000)
TIMINGS_FILE = "timings.json"  # beside results.json: the seconds, which differ from run to run


@dataclass(frozen=True)
class StudyResult:
    """What `run_study` produced.

    runs: acquisition -> one curve per repeat, [(labels, test accuracy), ...].
    curves: acquisition -> [{"labels", "mean", "sd", "n"}] over repeats (label counts every
    finished repeat reached).
    """

    config: StudyConfig
    out_dir: Path
    database: Path
    results: Path
    plot: Path
    runs: dict[str, list[list[tuple[int, float]]]]
    curves: dict[str, list[dict[str, float]]]
    rounds_run: int
    elapsed_s: float


def summarise_curves(runs: Sequence[Sequence[tuple[int, float]]]) -> list[dict[str, float]]:
    """Mean and sd (ddof=1; 0 for one run) of the metric at each label count all runs share."""
    shared = set.intersection(*({n for n, _ in run} for run in runs)) if runs else set()
    out = []
    for n in sorted(shared):
        values = np.asarray([dict(run)[n] for run in runs], dtype=np.float64)
        sd = float(values.std(ddof=1)) if len(values) > 1 else 0.0
        out.append({"labels": int(n), "mean": float(values.mean()), "sd": sd, "n": len(values)})
    return out


def run_curve(store: Any, name: str, max_labels: int) -> list[tuple[int, float]]:
    """(labels, test accuracy) of project `name`'s finished rounds fitted on at most `max_labels`."""
    return _accuracy_curve(_round_records(store, name, max_labels))


def _accuracy_curve(records: list[dict[str, float]]) -> list[tuple[int, float]]:
    """(labels, test accuracy) of each finished round, from `_round_records`."""
    return [(int(r["labels"]), r["accuracy"]) for r in records]


ROUND_METRIC_KEYS = ("accuracy", "nll", "ece")  # results.json: the same for the same seed
ROUND_TIMING_KEYS = ("fit_s", "score_s", "evaluate_s")  # timings.json: seconds, different every run


def _round_records(store: Any, name: str, max_labels: int, keys: Sequence[str] = ROUND_METRIC_KEYS) -> list[dict[str, float]]:
    """One run's finished rounds: {labels, and each of `keys` the round recorded}, from its test
    metrics (accuracy, nll, ece) and its timings (fit_s, score_s, evaluate_s: seconds)."""
    records = []
    for r in store.rounds(name):
        if r.status is RoundStatus.done and "accuracy" in r.metrics and r.labelled_count <= max_labels:
            values = {**(r.timings or {}), **r.metrics}
            records.append({"labels": r.labelled_count} | {k: float(values[k]) for k in keys if k in values})
    return records


def _only(record: Mapping[str, float], keys: Sequence[str]) -> dict[str, float]:
    """A round record's labels and those of `keys` it holds."""
    return {k: v for k, v in record.items() if k == "labels" or k in keys}


def labels_to_reach(curve: Sequence[tuple[int, float]], target: float) -> int | None:
    """The first label count (in increasing order) whose accuracy is >= `target`; None if never."""
    for labels, value in sorted(curve):
        if value >= target:
            return int(labels)
    return None


def _reach_summary(config: StudyConfig, runs: Mapping[str, list[list[tuple[int, float]]]],
                   curves: Mapping[str, list[dict[str, float]]]) -> dict[str, dict[str, Any]]:  # fmt: skip
    out: dict[str, dict[str, Any]] = {}
    for acquisition, points in curves.items():
        mean_curve = [(c["labels"], c["mean"]) for c in points]
        out[acquisition] = {
            f"{a:.2f}": {"mean": labels_to_reach(mean_curve, a),
                         "per_seed": [labels_to_reach(run, a) for run in runs[acquisition]]}
            for a in ACCURACY_TARGETS
        }  # fmt: skip
    return out


def _timing_summary(config: StudyConfig, store: Any) -> dict[str, dict[str, Any]]:
    """acquisition -> {milestone labels: {fit_s, evaluate_s, score_s: median over repeats, n}}
    for each milestone in TIMING_MILESTONES some repeat reached (the first round at >= it)."""
    out: dict[str, dict[str, Any]] = {}
    for acquisition in config.acquisitions:
        per_milestone: dict[str, Any] = {}
        for milestone in TIMING_MILESTONES:
            if milestone > config.max_labels:
                continue
            rows = []
            for repeat in range(config.repeats):
                name = f"{acquisition}-r{repeat + 1}"
                if name not in store.projects():
                    continue
                done = [r for r in store.rounds(name) if r.status is RoundStatus.done and r.labelled_count >= milestone]
                if done:
                    rows.append(min(done, key=lambda r: r.labelled_count).timings or {})
            if rows:
                entry: dict[str, Any] = {"n": len(rows)}
                for key in ("fit_s", "evaluate_s", "score_s"):
                    values = [float(t[key]) for t in rows if key in t]
                    entry[key] = float(np.median(values)) if values else None
                per_milestone[str(milestone)] = entry
        out[acquisition] = per_milestone
    return out


def plot_study(config: StudyConfig, curves: Mapping[str, list[dict[str, float]]], path: Path) -> Path:
    """Mean ± sd bands per acquisition; with `paper = "gal2017"` the paper's Table 1 points."""
    from activebayes.figures import agg_figure

    if not any(curves.values()):
        raise DataError("curves: expected at least one finished round, got none")
    figure = agg_figure()
    axes = figure.add_subplot()
    for acquisition, points in curves.items():
        if not points:
            continue
        xs = np.asarray([c["labels"] for c in points], dtype=np.float64)
        mean = np.asarray([c["mean"] for c in points])
        sd = np.asarray([c["sd"] for c in points])
        (line,) = axes.plot(xs, mean, linewidth=1.6, label=acquisition)
        axes.fill_between(xs, mean - sd, mean + sd, color=line.get_color(), alpha=0.2, linewidth=0)
        if config.paper == "gal2017" and acquisition in GAL2017_TABLE1:
            n90, n95 = GAL2017_TABLE1[acquisition]
            axes.scatter([n90, n95], [0.90, 0.95], marker="x", s=40, color=line.get_color(), zorder=3)
    if config.paper == "gal2017":
        axes.scatter([], [], marker="x", color="0.3", label="Gal et al. 2017, Table 1")
        axes.axhline(0.90, color="0.7", linewidth=0.8, linestyle=":")
        axes.axhline(0.95, color="0.7", linewidth=0.8, linestyle=":")
    axes.set_xlabel("labelled items")
    axes.set_ylabel("test accuracy")
    axes.grid(True, alpha=0.3)
    axes.legend()
    axes.set_title(f"{config.name}: {config.posterior}, mean ± sd of {config.repeats} repeat(s)")
    return save_png(figure, path)


def collect_results(config: StudyConfig, out_dir: str | Path, *, rounds_run: int = 0,
                    started: float | None = None) -> StudyResult:  # fmt: skip
    """Read every run's curve and timings from out_dir/study.db and write results.json,
    timings.json and learning-curve.png (after run_study, or after all run_one calls of a
    parallel runner). results.json holds what the seed decides, so a study run again with the same
    seed writes the same bytes; the seconds each round took are in timings.json beside it:
    {"milestones": acquisition -> {labels: {fit_s, evaluate_s, score_s, n}}, "rounds": acquisition
    -> one list per repeat of {labels, fit_s, score_s, evaluate_s}}."""
    from activebayes.store import PoolStore

    started = time.perf_counter() if started is None else started
    out_dir = Path(out_dir)
    db = out_dir / "study.db"
    runs: dict[str, list[list[tuple[int, float]]]] = {a: [] for a in config.acquisitions}
    rounds: dict[str, list[list[dict[str, float]]]] = {a: [] for a in config.acquisitions}
    seconds: dict[str, list[list[dict[str, float]]]] = {a: [] for a in config.acquisitions}
    stops: dict[str, list[int | None]] = {a: [] for a in config.acquisitions}  # where the stopping signal fired
    with PoolStore(f"sqlite:///{db}") as store:
        projects = set(store.projects())
        for repeat in range(config.repeats):
            for acquisition in config.acquisitions:
                name = f"{acquisition}-r{repeat + 1}"
                if name in projects:
                    records = _round_records(store, name, config.max_labels, ROUND_METRIC_KEYS + ROUND_TIMING_KEYS)  # one pass
                    runs[acquisition].append(_accuracy_curve(records))
                    rounds[acquisition].append([_only(r, ROUND_METRIC_KEYS) for r in records])
                    seconds[acquisition].append([_only(r, ROUND_TIMING_KEYS) for r in records])
                    stops[acquisition].append(first_stop(store.rounds(name)))
        timings = _timing_summary(config, store)
    curves = {a: summarise_curves(points) for a, points in runs.items()}
    plot = plot_study(config, curves, out_dir / "learning-curve.png")
    document: dict[str, Any] = {
        "config": config.to_dict(), "curves": curves,
        "runs": {a: [[list(p) for p in run] for run in rs] for a, rs in runs.items()},
        "labels_to_reach": _reach_summary(config, runs, curves), "rounds": rounds,
        "stopped_at": {"rule": f"mean kappa of the last {WINDOW} pairs of rounds >= {THRESHOLD} (activebayes.stopping)", "labels": stops},
        "database": db.name, "plot": plot.name, "timings": TIMINGS_FILE,  # beside results.json
    }  # fmt: skip
    if config.paper == "gal2017":
        document["paper"] = {"source": "Gal, Islam & Ghahramani 2017, Table 1 (labels to reach 10% / 5% error)",
                             "labels_to_reach": {a: {"0.90": n90, "0.95": n95} for a, (n90, n95) in GAL2017_TABLE1.items()}}  # fmt: skip
    results = out_dir / "results.json"
    write_json_atomic(results, document)  # each file whole or not at all
    write_json_atomic(out_dir / TIMINGS_FILE, {"milestones": timings, "rounds": seconds})
    return StudyResult(config, out_dir, db, results, plot, runs, curves, rounds_run, time.perf_counter() - started)
