"""What `status` says about where a project stands without a test split (see
`activebayes.round_estimates`, `activebayes.active_testing`, `activebayes.stopping`):

* every round's model, estimated from the labels its own round drew (LURE-weighted with the
  recorded draw probabilities): pool accuracy and NLL (regression: RMSE and Gaussian NLL) with
  95 % intervals, beside the test split's figures where there is one. A round whose acquisition
  is deterministic (top-k) has no estimate, and says so;
* the evaluation set of `activebayes evaluate`, when there is one: its active-testing estimate;
* the stopping signal, appended to the Next line: the share of the stop set's predictions the
  latest round changed and the rounds' agreement (Bloodgood & Vijay-Shanker: stop once the mean
  kappa of the last 3 pairs of rounds reaches `activebayes.stopping.THRESHOLD`, 0.98 here against
  their 0.99, chosen in studies/estimates), the latest estimate's interval, and a plain sentence.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

ESTIMATE_FIGURES = {"classification": (("accuracy", "accuracy"), ("nll", "nll")), "regression": (("rmse", "rmse"), ("nll", "nll"))}


def round_estimates(store: Any, name: str, info: Any, rounds: list[Any]) -> list[tuple[Any, Any]]:
    """[(RoundInfo, PoolEstimate)] of every round that fitted a model (labelled_count > 0)."""
    from activebayes.round_estimates import round_estimate

    return [(r, round_estimate(r, store.queries(name, r.number), info.task, info.classes)) for r in rounds if r.labelled_count > 0]


def evaluation_estimate_of(store: Any, name: str, info: Any) -> Any | None:
    """The evaluation set's estimate with the predictions of the model that drew it, or None
    without an evaluation set."""
    from activebayes.active_testing import EVAL_SPLIT, SETTINGS_KEY, evaluation_estimate

    record = (info.settings or {}).get(SETTINGS_KEY)
    if not record:
        return None
    _, keys, values = store.labels(name, split=EVAL_SPLIT)
    return evaluation_estimate(record, dict(zip(keys, values)), info.task, info.classes)


def stop_reading(rounds: list[Any], task: str) -> Any:
    """The stopping rule's reading (`activebayes.stopping.stop_signal`) from the rounds' recorded
    "agreement" and stop-set predictions."""
    from activebayes.stopping import WINDOW, changed_share, stop_signal, unpack_predictions

    agreements = [float(r.metrics["agreement"]) for r in rounds if isinstance((r.metrics or {}).get("agreement"), (int, float))]
    sets = [(r.metrics["stop_set"]) for r in rounds if isinstance((r.metrics or {}).get("stop_set"), dict)]
    changed = next((float(r.metrics["changed"]) for r in reversed(rounds) if isinstance((r.metrics or {}).get("changed"), (int, float))), None)
    window = None
    if len(sets) > WINDOW and sets[-1]["ids"] == sets[-1 - WINDOW]["ids"]:
        window = changed_share(unpack_predictions(sets[-1 - WINDOW]["predictions"]), unpack_predictions(sets[-1]["predictions"]),
                               regression=task == "regression")  # fmt: skip
    return stop_signal(agreements, changed, window)


def stop_sentence(signal: Any, latest: Any | None) -> str:
    """The stopping signal as the Next line's second half."""
    parts = []
    if signal.changed is not None:
        text = f"{signal.changed:.1%} of pool predictions changed in the latest round"
        if signal.changed_window is not None:
            text += f", {signal.changed_window:.1%} over the last {signal.window}"
        parts.append(text)
    if latest is not None:
        figure, estimate = latest
        parts.append(f"estimated {figure} {shown_value(estimate):.3f} (95 % interval {estimate.low:.3f} to {estimate.high:.3f})")
    if signal.mean_agreement is None:
        verdict = f"too few rounds to judge whether to stop ({signal.window} pairs of rounds needed)"
    elif signal.stop:
        verdict = (f"predictions have stabilised (mean agreement {signal.mean_agreement:.3f} over the last {signal.window} rounds "
                   f">= {signal.threshold}): labelling more is unlikely to pay")  # fmt: skip
    else:
        verdict = (f"predictions still change (mean agreement {signal.mean_agreement:.3f} over the last {signal.window} rounds "
                   f"< {signal.threshold}): labelling more is likely to pay")  # fmt: skip
    return "; ".join([*parts, verdict])


def latest_figure(estimates: list[tuple[Any, Any]], task: str) -> tuple[str, Any] | None:
    """("accuracy" | "rmse", Estimate) of the latest round with an estimate."""
    for _, estimate in reversed(estimates):
        figure = estimate.accuracy if task == "classification" else estimate.rmse
        if estimate.available and figure is not None:
            return ("accuracy" if task == "classification" else "RMSE"), figure
    return None


def shown_value(estimate: Any) -> float:
    """The estimate as shown: inside the range the figure can take ([0, 1] for an accuracy or a
    0-1 loss, whose interval is Wilson's; [0, ∞) for NLL, RMSE, MSE). The LURE estimate is
    unbiased but not bounded (its weights can be negative), so after a few labels drawn with
    high probability it can fall outside; moving it to the nearest possible value only brings it
    closer to the truth. `--json` keeps the unbiased value."""
    upper = 1.0 if estimate.interval == "wilson" else float("inf")
    return min(max(estimate.value, 0.0), upper)


def interval_text(estimate: Any) -> str:
    """"0.812 [0.701, 0.890]"; a value outside its possible range is shown at its edge, marked."""
    if estimate is None:
        return "-"
    value = shown_value(estimate)
    mark = f" (unbiased value {estimate.value:.3g}, outside the possible range)" if value != estimate.value else ""
    return f"{value:.3f} [{estimate.low:.3f}, {estimate.high:.3f}]{mark}"


def render_estimates(console: Console, estimates: list[tuple[Any, Any]], task: str, evaluation: Any | None) -> None:
    """The estimates (one row per fitted round, the test split's figures beside them; one line
    per round when the table does not fit the console) and the evaluation set's line."""
    if estimates:
        (main, main_key), (_, nll_key) = ESTIMATE_FIGURES.get(task, ESTIMATE_FIGURES["classification"])
        has_test = any(main_key in (r.metrics or {}) for r, _ in estimates)
        columns = ["round", "labelled", f"est. {main}", "est. nll", *((f"test {main}", "test nll") if has_test else ()), "from"]
        rows = []
        for r, e in estimates:
            figure = e.accuracy if task == "classification" else e.rmse
            nll = e.class_nll if task == "classification" else e.normal_nll
            test = [f"{r.metrics[k]:.3f}" if isinstance((r.metrics or {}).get(k), (int, float)) else "-" for k in (main_key, nll_key)]
            source = f"{e.labels} labels of {e.pool}" if e.available else (e.reason or "")
            rows.append([str(r.number), str(r.labelled_count), interval_text(figure), interval_text(nll), *(test if has_test else ()), source])
        title = f"estimates from the chosen labels (LURE, 95 % intervals of the pool {'RMSE' if task == 'regression' else 'accuracy'} and NLL)"
        widths = [max(len(c), *(len(row[i]) for row in rows)) for i, c in enumerate(columns[:-1])]
        if sum(widths) + 3 * len(widths) + 20 <= console.width:
            table = Table(title=title)
            for column in columns:
                table.add_column(column, justify="left" if column == "from" else "right", no_wrap=column != "from", overflow="fold")
            for row in rows:
                table.add_row(*(cell for cell in row))
            console.print(table)
        else:
            console.print(title + ":")
            for row in rows:
                pairs = ", ".join(f"{c} {v}" for c, v in zip(columns[2:-1], row[2:-1]) if v != "-")
                console.print(f"  round {row[0]} ({row[1]} labelled): {pairs or 'no estimate'}; {row[-1]}")
    if evaluation is not None:
        if evaluation.available:
            figure = evaluation.accuracy if task == "classification" else evaluation.rmse
            nll = evaluation.class_nll if task == "classification" else evaluation.normal_nll
            console.print(f"evaluation set (active testing, {evaluation.labels} labels of a pool of {evaluation.pool}): "
                          f"{'accuracy' if task == 'classification' else 'RMSE'} {interval_text(figure)}, nll {interval_text(nll)}")  # fmt: skip
        else:
            console.print(f"evaluation set: {evaluation.reason or ''}")


def estimates_data(estimates: list[tuple[Any, Any]], evaluation: Any | None, signal: Any) -> dict[str, Any]:
    """The same for `--json`."""
    return {
        "estimates": [{"round": r.number, "labelled": r.labelled_count, **e.figures(), "labels": e.labels, "pool": e.pool,
                       "reason": e.reason} for r, e in estimates],  # fmt: skip
        "evaluation": None if evaluation is None else {**evaluation.figures(), "labels": evaluation.labels, "pool": evaluation.pool, "reason": evaluation.reason},
        "stopping": {"changed": signal.changed, "changed_window": signal.changed_window, "agreements": list(signal.agreements),
                     "mean_agreement": signal.mean_agreement, "window": signal.window, "threshold": signal.threshold, "stop": signal.stop},  # fmt: skip
    }
