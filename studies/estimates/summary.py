"""The summaries of `run.py`'s runs: per group of runs (part/table-arm) and per part over all its
tables, the per-round LURE estimates against the test split and the pool, active testing against
a random 50-label split, and the stopping rule at several kappa thresholds against where test
accuracy plateaued; then, over every study, the thresholds compared (`threshold_table`).

Every round's interval is the library's current rule (`intervals.round_accuracy`: from the raw
draws where a run kept them, else re-derived from the stored interval), beside the earlier rule
(the normal quantile) and Clopper–Pearson's interval on the same effective size, unadjusted and
adjusted. Active testing's interval is recomputed where a run kept its draws; runs written
before keep only the earlier rule's summary, and `reruns` (an `--out` of run.py with fresh runs
of the same names) gives the current rule's figures from their draws.

    .venv/bin/python studies/estimates/run.py --summary [--reruns DIR]   # rewrite summary.json and results.md
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from intervals import RULES, active_testing_summary, round_accuracy

PLATEAU = 0.01  # test accuracy within 1 point of the last round's
STOP_THRESHOLDS = (0.99, 0.98, 0.97, 0.96, 0.95)  # Bloodgood & Vijay-Shanker's 0.99, and looser ones
ACCURACY_AT = (50, 100, 150, 200, 300)
AT_KEYS = ("active_vs_pool", "random_vs_pool", "active_vs_test", "random_vs_test")


def coverage(est: np.ndarray, test: np.ndarray, pool: np.ndarray) -> dict[str, float]:
    """95 % coverage of the test and pool accuracy [R] and mean width of the rounds' intervals,
    est [R, 3] = (value, low, high) per round under one of `intervals.RULES`."""
    return {"coverage_test": float(np.mean((est[:, 1] <= test) & (test <= est[:, 2]))),
            "coverage_pool": float(np.mean((est[:, 1] <= pool) & (pool <= est[:, 2]))), "mean_width": float(np.mean(est[:, 2] - est[:, 1]))}  # fmt: skip


def estimate_summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean absolute error and 95 % coverage of the per-round accuracy estimate, against the test
    split and against the pool the round drew from, over every round with an estimate; the
    coverage under the current rule and, in "rules", under each of `intervals.RULES`."""
    rows = [r for run in runs for r in run["rounds"] if r.get("est_accuracy") and r.get("test_accuracy") is not None]
    if not rows:
        return {"rounds": 0}
    by_rule = {rule: np.asarray([round_accuracy(r, rule) for r in rows]) for rule in RULES}
    est = by_rule["current"]
    test = np.asarray([r["test_accuracy"] for r in rows])
    pool = np.asarray([r["pool_accuracy"] for r in rows])
    rules = {rule: coverage(per_round, test, pool) for rule, per_round in by_rule.items()}
    naive = np.asarray([r["naive_accuracy"] for r in rows])
    return {
        "rounds": len(rows),
        "from_draws": sum("draws" in r for r in rows),
        "mae_vs_test": float(np.mean(np.abs(est[:, 0] - test))),
        "mae_vs_pool": float(np.mean(np.abs(est[:, 0] - pool))),
        "median_ae_vs_test": float(np.median(np.abs(est[:, 0] - test))),
        "worst_estimate": float(est[:, 0].min()),
        "bias_vs_pool": float(np.mean(est[:, 0] - pool)),
        "naive_bias_vs_pool": float(np.mean(naive - pool)),
        **rules["current"],
        "rules": rules,
    }


def stop_points(run: dict[str, Any]) -> dict[str, Any]:
    """Labels where the stopping rule first fired (mean agreement of the last 3 pairs of rounds
    >= each of STOP_THRESHOLDS; None: never) and the test accuracy there, and the first labels
    whose test accuracy is within PLATEAU of the last round's."""
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


def threshold_reading(stops: list[dict[str, Any]], threshold: float) -> dict[str, Any]:
    """Over runs' `stop_points`: how often the rule at `threshold` fired, how often before the
    run's plateau (early: test accuracy had not yet come within PLATEAU of the last round's), the
    mean labels from the plateau to the stop, and the mean share of the budget it saved and of
    the test accuracy it gave up (last round's − at the stop)."""
    fired = [s for s in stops if s[f"stop_{threshold}"] is not None]
    early = [s for s in fired if s[f"stop_{threshold}"] < s["plateau"]]
    return {
        "runs": len(stops), "fired": len(fired), "early": len(early), "good": len(fired) - len(early),
        "mean_stop": float(np.mean([s[f"stop_{threshold}"] for s in fired])) if fired else None,
        "mean_plateau": float(np.mean([s["plateau"] for s in stops])) if stops else None,
        "after_plateau": float(np.mean([s[f"stop_{threshold}"] - s["plateau"] for s in fired])) if fired else None,
        "saved": float(np.mean([1 - s[f"stop_{threshold}"] / s["last"] for s in fired])) if fired else None,
        "accuracy_given_up": float(np.mean([s["final_test"] - s[f"test_at_stop_{threshold}"] for s in fired])) if fired else None,
    }  # fmt: skip


def accuracy_at(runs: list[dict[str, Any]]) -> dict[str, float]:
    """Mean test accuracy over runs at the first round with at least n labels, for each n of
    ACCURACY_AT that every run reaches."""
    last = min(run["rounds"][-1]["labels"] for run in runs)
    counts = [n for n in ACCURACY_AT if n <= last] + ([last] if last not in ACCURACY_AT else [])
    return {str(n): float(np.mean([next(r["test_accuracy"] for r in run["rounds"] if r["labels"] >= n) for run in runs])) for n in counts}


def at_mean(at: list[dict[str, Any]], keys: tuple[str, ...] = AT_KEYS) -> dict[str, Any]:
    """Active testing's figures (`AT_KEYS` × mae, coverage, width) averaged over runs."""
    return {k: {m: float(np.mean([a[k][m] for a in at])) for m in ("mae", "coverage", "width")} for k in keys} | {"runs": len(at)}


def at_under(at: list[dict[str, Any]], rule: str) -> list[dict[str, Any]]:
    """Each run's active-testing figures with the active draws' intervals under `rule` (from the
    draws; the runs must have kept them)."""
    return [a | active_testing_summary(a, rule) for a in at]  # type: ignore[operator]


def group_entry(group_runs: list[dict[str, Any]], tables: int = 1, reruns: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"runs": len(group_runs), "tables": tables, "estimates": estimate_summary(group_runs),
                             "stopping": [stop_points(r) | {"seed": r["seed"], "table": r.get("table")} for r in group_runs]}  # fmt: skip
    at = [r["active_testing"] for r in group_runs if "active_testing" in r]
    if at:
        with_draws = all("draws" in a for a in at)
        entry["active_testing"] = at_mean(at_under(at, "current") if with_draws else at) | {"rule": "current" if with_draws else "earlier"}
    rerun_at = [r["active_testing"] for r in reruns or [] if "draws" in r.get("active_testing", {})]
    if rerun_at:
        entry["active_testing_reruns"] = {rule: at_mean(at_under(rerun_at, rule), ("active_vs_pool", "active_vs_test")) for rule in ("earlier", "current")}
    if tables == 1:
        entry["test_accuracy_at"] = accuracy_at(group_runs)
    return entry


def read_runs(out: Path) -> dict[str, list[dict[str, Any]]]:
    """part/table-arm -> the runs under `out`/runs."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for path in sorted((out / "runs").rglob("*.json")):
        runs.setdefault(f"{path.parent.name}/{path.stem.rsplit('-seed', 1)[0]}", []).append(json.loads(path.read_text()))
    return runs


def write_summary(out: Path, reruns: Path | None = None) -> dict[str, Any]:
    """summary.json and results.md from every run under `out`/runs (and active testing's current
    rule from the draws of the runs under `reruns`/runs), and the example plots."""
    runs = read_runs(out)
    again = read_runs(reruns) if reruns is not None else {}
    summary: dict[str, Any] = {group: group_entry(group_runs, reruns=again.get(group)) for group, group_runs in runs.items()}
    for part in ("digits", "tables", "mnist", "benchmark"):  # each part's groups (tables or arms) together as well
        members = [g for g in runs if g.startswith(part + "/")]
        if len(members) > 1:
            summary[f"{part} (all {len(members)} {'arms' if part in ('digits', 'mnist') else 'tables'})"] = group_entry([r for g in members for r in runs[g]], tables=len(members),
                                                                         reruns=[r for g in members for r in again.get(g, [])])  # fmt: skip
    studies = {"digits": [g for g in runs if g.startswith("digits/")], "wine, breast_cancer": [g for g in runs if g.startswith("tables/")],
               "MNIST": [g for g in runs if g.startswith("mnist/")], "benchmark tables": [g for g in runs if g.startswith("benchmark/")]}  # fmt: skip
    stops = {study: [s for g in groups for s in summary[g]["stopping"]] for study, groups in studies.items() if groups}
    summary["thresholds"] = {study: {str(t): threshold_reading(s, t) for t in STOP_THRESHOLDS} for study, s in stops.items()}
    everything = [stop for group in stops.values() for stop in group]
    summary["thresholds"]["all studies"] = {str(t): threshold_reading(everything, t) for t in STOP_THRESHOLDS}
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    (out / "results.md").write_text(markdown(summary))
    for group, name in (("digits/digits-power-epig", "learning-curve-estimate.png"), ("mnist/mnist-power-bald", "learning-curve-estimate-mnist.png")):
        if runs.get(group):
            plot_example(sorted(runs[group], key=lambda r: r["seed"])[0], out / name)
    return summary


def _f(v: Any, digits: int = 3) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else (f"{v:.{digits}f}" if isinstance(v, float) else str(v))


def markdown(summary: dict[str, Any]) -> str:
    """The summary as the tables README_EXPERIMENTS.md quotes."""
    f = _f
    groups = {g: e for g, e in summary.items() if g != "thresholds"}
    lines = ["# Estimates without a test set (`studies/estimates/run.py`)", "",
             "## Per-round LURE estimates of accuracy (each from the round's own 10 labels)", "",
             "95 % intervals: Wilson's on the effective size scaled by Korn & Graubard's degrees-of-freedom factor (z/t_{M−1})² "
             "(activebayes.estimates); in brackets the earlier rule (the normal quantile). Rounds of runs that kept no raw draws "
             "have the interval re-derived from the stored one (studies/estimates/intervals.py).", "",
             "| runs | seeds | rounds | MAE vs test | median AE vs test | MAE vs pool | bias vs pool | plain mean's bias vs pool | 95 % coverage of test (earlier) | of pool (earlier) | mean width (earlier) | lowest estimate |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for group, entry in groups.items():
        e = entry["estimates"]
        if e.get("rounds"):
            old = e["rules"]["earlier"]
            lines.append(f"| {group} | {entry['runs']} | {e['rounds']} | {f(e['mae_vs_test'])} | {f(e['median_ae_vs_test'])} | {f(e['mae_vs_pool'])} | "
                         f"{f(e['bias_vs_pool'])} | {f(e['naive_bias_vs_pool'])} | {f(e['coverage_test'], 2)} ({f(old['coverage_test'], 2)}) | "
                         f"{f(e['coverage_pool'], 2)} ({f(old['coverage_pool'], 2)}) | {f(e['mean_width'])} ({f(old['mean_width'])}) | {f(e['worst_estimate'], 2)} |")  # fmt: skip
    names = {"earlier": "Wilson, z", "current": "Wilson, t (current)", "cp": "Clopper–Pearson on n", "cp_adjusted": "Clopper–Pearson on n·(z/t)²"}
    lines += ["", "## Interval rules compared on the same rounds", "",
              "Coverage of the test / pool accuracy and mean width of each rule on the same effective size n. Korn & Graubard's "
              "own interval is Clopper–Pearson's on n·(t_{n−1}/t_d)², a factor of 1 when each of M draws is its own unit (n − 1 = "
              "d = M − 1): the 'Clopper–Pearson on n' column.", "",
              "| runs | rounds | " + " | ".join(names.values()) + " |", "|---|---|" + "---|" * len(names)]  # fmt: skip
    for group, entry in groups.items():
        e = entry["estimates"]
        if e.get("rounds"):
            cells = [f"{f(c['coverage_test'], 2)} / {f(c['coverage_pool'], 2)} / {f(c['mean_width'])}" for c in (e["rules"][r] for r in names)]
            lines.append(f"| {group} | {e['rounds']} | " + " | ".join(cells) + " |")
    lines += ["", "## Active testing: 50 labels, 40 draws per run, the final model on the unlabelled pool", "",
              "Each cell: active testing (LURE) / a random 50-label sample of the same pool (Wilson's interval on 50 trials). The pool "
              "is what the estimate is about (the items still unlabelled); the test split is drawn from the whole table. rule: the "
              "active draws' interval ('earlier': the runs kept only the earlier rule's summary).", "",
              "| runs | runs with AT | rule | MAE vs pool | 95 % coverage of pool | MAE vs test | 95 % coverage of test | mean width |",
              "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for group, entry in groups.items():
        at = entry.get("active_testing")
        if at:
            pair = lambda key, m, d=3: f"{f(at['active_' + key][m], d)} / {f(at['random_' + key][m], d)}"  # noqa: E731
            lines.append(f"| {group} | {at['runs']} | {at['rule']} | {pair('vs_pool', 'mae')} | {pair('vs_pool', 'coverage', 2)} | {pair('vs_test', 'mae')} | "
                         f"{pair('vs_test', 'coverage', 2)} | {pair('vs_pool', 'width')} |")  # fmt: skip
    reruns = {g: e["active_testing_reruns"] for g, e in groups.items() if "active_testing_reruns" in e}
    if reruns:
        lines += ["", "### Active testing under the current rule, from reruns of the same runs that kept their draws", "",
                  "Each cell: current rule (earlier rule) on the same 40 draws per run.", "",
                  "| runs | reruns | 95 % coverage of pool | 95 % coverage of test | mean width |", "|---|---|---|---|---|"]  # fmt: skip
        for group, at in reruns.items():
            now, old = at["current"], at["earlier"]
            cell = lambda key, m, d=2: f"{f(now[key][m], d)} ({f(old[key][m], d)})"  # noqa: E731
            lines.append(f"| {group} | {now['runs']} | {cell('active_vs_pool', 'coverage')} | {cell('active_vs_test', 'coverage')} | "
                         f"{cell('active_vs_pool', 'width', 3)} |")  # fmt: skip
    lines += ["", "## The stopping rule's thresholds over every study", "",
              "A run 'fired' when the mean Cohen's kappa of the last 3 pairs of consecutive rounds' stop-set predictions reached κ "
              "by its last round; 'early' when that was before the run's plateau (the first labels whose test accuracy is within "
              "1 point of the last round's), 'at/after' the other stops. Stop − plateau: mean labels from the plateau to the stop "
              "(fired runs); saved: the mean share of the run's labels left unspent; given up: the mean test accuracy lost (last − at stop).", "",
              "| study | κ | runs | fired | at/after plateau | early | mean stop | mean plateau (all runs) | stop − plateau | saved | given up |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for study, readings in summary.get("thresholds", {}).items():
        for t, r in readings.items():
            lines.append(f"| {study} | {t} | {r['runs']} | {r['fired']} | {r['good']} | {r['early']} | {f(r['mean_stop'], 0)} | "
                         f"{f(r['mean_plateau'], 0)} | {f(r['after_plateau'], 0)} | {f(r['saved'], 2)} | {f(r['accuracy_given_up'])} |")  # fmt: skip
    shown = (0.99, 0.98, 0.97, 0.95)
    lines += ["", "## The stopping signal per run: labels where it fires against where test accuracy plateaued", "",
              "plateau: the first labels whose test accuracy is within 1 point of the last round's; stop at κ: the first labels where "
              "the mean kappa of the last 3 pairs of rounds reaches κ (test accuracy there).", "",
              "| runs | table | seed | " + " | ".join(f"stop at {t}" for t in shown) + " | plateau | last | test at last | mean κ of the last 3 |",
              "|---|---|---|" + "---|" * len(shown) + "---|---|---|---|"]  # fmt: skip
    for group, entry in groups.items():
        if entry.get("tables", 1) > 1:
            continue
        for s in entry["stopping"]:
            cells = [f"{s[f'stop_{t}']} ({f(s[f'test_at_stop_{t}'])})" if s[f"stop_{t}"] is not None else "never" for t in shown]
            lines.append(f"| {group} | {s.get('table') or '-'} | {s['seed']} | {' | '.join(cells)} | {s['plateau']} | {s['last']} | "
                         f"{f(s['final_test'])} | {f(s['mean_agreement_last_3'])} |")  # fmt: skip
    lines += ["", "## Test accuracy (mean over seeds) at label counts", "", "| runs | labels: accuracy |", "|---|---|"]
    for group, entry in groups.items():
        if "test_accuracy_at" in entry:
            lines.append(f"| {group} | " + ", ".join(f"{n}: {f(v)}" for n, v in entry["test_accuracy_at"].items()) + " |")
    return "\n".join(lines) + "\n"


def plot_example(run: dict[str, Any], path: Path) -> None:
    """One run's test accuracy and, beside it, the estimate from each round's chosen labels."""
    from activebayes.report import Segment, plot_learning_segments

    rounds = [r for r in run["rounds"] if r.get("test_accuracy") is not None]
    segment = Segment(f"mc-dropout + {run['arm']} (test split)", tuple(r["round"] for r in rounds),
                      tuple((r["labels"], r["test_accuracy"]) for r in rounds))  # fmt: skip
    band = [(r["labels"], *round_accuracy(r)) for r in rounds if r.get("est_accuracy")]
    table = run.get("table", "digits")
    plot_learning_segments({table: [segment]}, path, ylabel="accuracy", title=f"{table}, seed {run['seed']}", estimate=band)
