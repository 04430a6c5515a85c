"""What `status` says about where a project stands without a test split (see
`activebayes.round_estimates`, `activebayes.active_testing`, `activebayes.stopping`):

* every round's model, estimated from the labels its own round drew (LURE-weighted with the
  recorded draw probabilities): pool accuracy and NLL (regression: RMSE and Gaussian NLL) with
  95 % intervals, beside the test split's figures where there is one. A round whose acquisition
  is deterministic (top-k) has no estimate, and says so, as does a round waiting for answers,
  stopped before asking (interrupted) or failed (discarded by `round --restart-round`). An
  estimate on part of its round's answers (the round still open, or failed before the rest came
  in) is marked "provisional: ..., 2 of its 10 answers in" / "partial: ...";
* every value shown lies in its figure's possible range (`activebayes.round_estimates.RANGES`):
  an unbiased LURE value outside it (an accuracy of -7.35 after two wrong answers drawn with
  small probability) is shown at the nearest possible value, marked with the unbiased value.
  `--json` gives each figure as [estimate, low, high] with the estimate in range, and the
  unbiased values under "unbiased" ({"accuracy": -7.35, "nll": 46.2}); "labels" the answers it
  rests on, "asked" its round's queries, "partial" and "note" as the text marks it;
* an estimate speaks for the pool's rows: where a round drew among distinct inputs standing for
  more rows (rows with equal features), "from" says "10 labels of 500 rows (450 distinct inputs)"
  and `--json` gives "pool" 500 and "inputs" 450 (`activebayes.row_weights`);
* the evaluation set of `activebayes evaluate`, when there is one: its active-testing estimate;
* the stopping signal, appended to the Next line: the share of the stop set's predictions the
  latest round changed and the rounds' agreement (Bloodgood & Vijay-Shanker: stop once the mean
  kappa of the last 3 pairs of rounds reaches `activebayes.stopping.THRESHOLD`, 0.98 here against
  their 0.99, chosen in studies/estimates), the latest estimate's interval, and a plain sentence.
  That estimate is the latest round's on all its round's answers (`latest_estimate`): an open
  round's provisional one is named only while no round has a whole one, and marked then.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from rich.console import Console

from activebayes_cli._output import titled_table

ESTIMATE_FIGURES = {"classification": (("accuracy", "accuracy"), ("nll", "nll")), "regression": (("rmse", "rmse"), ("nll", "nll"))}
SHOWN = {"classification": ("accuracy", "class_nll"), "regression": ("rmse", "normal_nll")}  # PoolEstimate attributes status shows


class Headline(NamedTuple):
    """The estimate the Next line names: its figure ("accuracy" | "RMSE"), the Estimate, the
    figure's possible range, its round, and its note (None unless partial)."""

    figure: str
    estimate: Any
    bounds: tuple[float, float]
    round: int
    note: str | None


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


def stop_sentence(signal: Any, latest: Headline | None) -> str:
    """The stopping signal as the Next line's second half."""
    parts = []
    if signal.changed is not None:
        text = f"{signal.changed:.1%} of pool predictions changed in the latest round"
        if signal.changed_window is not None:
            text += f", {signal.changed_window:.1%} over the last {signal.window}"
        parts.append(text)
    if latest is not None:
        e = latest.estimate
        note = f"; {latest.note}" if latest.note else ""
        parts.append(f"round {latest.round}'s estimated {latest.figure} {figure_text(shown_value(e, latest.bounds))} "
                     f"(95 % interval {figure_text(e.low)} to {figure_text(e.high) if math.isfinite(e.high) else NO_UPPER_END}{note})")  # fmt: skip
    if signal.mean_agreement is None:
        verdict = f"too few rounds to judge whether to stop ({signal.window} pairs of rounds needed)"
    elif signal.stop:
        verdict = (f"predictions have stabilised (mean agreement {signal.mean_agreement:.3f} over the last {signal.window} rounds "
                   f">= {signal.threshold}): labelling more is unlikely to pay")  # fmt: skip
    else:
        verdict = (f"predictions still change (mean agreement {signal.mean_agreement:.3f} over the last {signal.window} rounds "
                   f"< {signal.threshold}): labelling more is likely to pay")  # fmt: skip
    return "; ".join([*parts, verdict])


def latest_figure(estimates: list[tuple[Any, Any]], task: str) -> Headline | None:
    """The Next line's estimate: accuracy (regression: RMSE) of the latest round with one on all
    its round's answers, else of the latest round with a partial one (`latest_estimate`)."""
    from activebayes.round_estimates import RANGES, latest_estimate

    attribute = SHOWN.get(task, SHOWN["classification"])[0]
    found = latest_estimate([(r.number, e) for r, e in estimates if getattr(e, attribute, None) is not None])
    if found is None:
        return None
    number, e = found
    return Headline("accuracy" if attribute == "accuracy" else "RMSE", getattr(e, attribute), RANGES[attribute], number, e.note)


def shown_value(estimate: Any, bounds: tuple[float, float]) -> float:
    """The estimate as shown: inside `bounds`, the range the figure can take ([0, 1] for an
    accuracy, [0, ∞) for a categorical NLL or an RMSE, anywhere for a Gaussian NLL:
    `activebayes.round_estimates.RANGES`). The LURE estimate is unbiased but not bounded (a
    few answers drawn with small probability weigh much more than 1), so after a few labels it
    can fall outside; moving it to the nearest possible value only brings it closer to the
    truth. `--json` keeps the unbiased value beside it ("unbiased")."""
    from activebayes.round_estimates import nearest_possible

    return nearest_possible(estimate.value, bounds)


def figure_text(value: float) -> str:
    """An estimate or a test figure: three decimals where they say something (0.812, 64.230), else
    four significant digits (6.247e-07, 4.128e+13), where three decimals showed 0.000 or
    41278518701947.039 for a regression's RMSE in small or large units."""
    return f"{value:.3f}" if value == 0 or 1e-2 <= abs(value) < 1e5 or not math.isfinite(value) else f"{value:.4g}"


NO_UPPER_END = "no upper end"  # an interval's missing upper end, as `triple_text` writes it
NO_UPPER_END_NOTE = (f"{NO_UPPER_END}: fewer than 3 of the round's labels were drawn at random (auto draws 2 a round), too few "
                     "to bound an RMSE or NLL from above")  # fmt: skip


def triple_text(value: float, low: float | None, high: float | None, bounds: tuple[float, float]) -> str:
    """"0.812 [0.701, 0.890]" of an estimate and its interval; a value outside `bounds` is shown
    at its edge, marked with the unbiased value. An interval with no upper end (an RMSE or NLL from
    under 3 random draws: `activebayes.estimates.chi2_interval`; None where a round's metrics
    recorded it) says so instead of printing inf, as does one with no lower end (a Gaussian NLL
    from one draw)."""
    from activebayes.round_estimates import nearest_possible

    shown = nearest_possible(value, bounds)
    mark = f" (unbiased value {value:.3g}, outside the possible range)" if shown != value else ""
    lower = figure_text(low) if low is not None and math.isfinite(low) else "no lower end"
    upper = figure_text(high) if high is not None and math.isfinite(high) else NO_UPPER_END
    return f"{figure_text(shown)} [{lower}, {upper}]{mark}"


def interval_text(estimate: Any, bounds: tuple[float, float]) -> str:
    """`triple_text` of an Estimate; "-" for None."""
    return "-" if estimate is None else triple_text(estimate.value, estimate.low, estimate.high, bounds)


def render_estimates(console: Console, estimates: list[tuple[Any, Any]], task: str, evaluation: Any | None,
                     evaluate_command: str = "activebayes evaluate --budget 30") -> None:  # fmt: skip
    """The estimates (one row per fitted round, the test split's figures beside them; one line
    per round when the table does not fit the console), a footnote when an interval has no upper
    end (`NO_UPPER_END_NOTE`, naming `evaluate_command` while there is no evaluation set) and
    the evaluation set's line."""
    from activebayes.round_estimates import RANGES

    if estimates:
        (main, main_key), (_, nll_key) = ESTIMATE_FIGURES.get(task, ESTIMATE_FIGURES["classification"])
        has_test = any(main_key in (r.metrics or {}) for r, _ in estimates)
        columns = ["round", "labelled", f"est. {main}", "est. nll", *((f"test {main}", "test nll") if has_test else ()), "from"]
        rows, shown_figures = [], SHOWN.get(task, SHOWN["classification"])
        for r, e in estimates:
            shown = [interval_text(getattr(e, a), RANGES[a]) for a in shown_figures]
            test = [figure_text(r.metrics[k]) if isinstance((r.metrics or {}).get(k), (int, float)) else "-" for k in (main_key, nll_key)]
            source = f"{e.labels} label{'' if e.labels == 1 else 's'} of {pool_text(e)}" + (f"; {e.note}" if e.note else "") if e.available else (e.reason or "")
            rows.append([str(r.number), str(r.labelled_count), *shown, *(test if has_test else ()), source])
        title = f"estimates from the chosen labels (LURE, 95 % intervals of the pool {'RMSE' if task == 'regression' else 'accuracy'} and NLL)"
        widths = [max(len(c), *(len(row[i]) for row in rows)) for i, c in enumerate(columns[:-1])]
        if sum(widths) + 3 * len(widths) + 20 <= console.width:
            table = titled_table(title)
            for column in columns:
                table.add_column(column, justify="left" if column == "from" else "right", no_wrap=column != "from", overflow="fold")
            for row in rows:
                table.add_row(*row)
            console.print(table)
        else:
            console.print(title + ":")
            for row in rows:
                pairs = ", ".join(f"{c} {v}" for c, v in zip(columns[2:-1], row[2:-1]) if v != "-")
                console.print(f"  round {row[0]} ({row[1]} labelled): {pairs or 'no estimate'}; {row[-1]}")
        if any(not math.isfinite(x.high) for _, e in estimates for x in (getattr(e, a) for a in shown_figures) if x is not None):
            console.print(NO_UPPER_END_NOTE + (f"; `{evaluate_command}` sets items apart for an estimate with both ends" if evaluation is None else ""))
    if evaluation is not None:
        if evaluation.available:
            figure, nll = (interval_text(getattr(evaluation, a), RANGES[a]) for a in SHOWN.get(task, SHOWN["classification"]))
            note = f"; {evaluation.note}" if evaluation.note else ""
            console.print(f"evaluation set (active testing, {evaluation.labels} labels of a pool of {evaluation.pool}{note}): "
                          f"{'accuracy' if task == 'classification' else 'RMSE'} {figure}, nll {nll}")  # fmt: skip
        else:
            console.print(f"evaluation set: {evaluation.reason or ''}")


def pool_text(e: Any) -> str:
    """What a PoolEstimate speaks for: "450" (items), or "500 rows (450 distinct inputs)" where a
    round drew among distinct inputs that stand for more rows (`activebayes.row_weights`)."""
    return f"{e.pool}" if e.inputs is None else f"{e.pool} rows ({e.inputs} distinct inputs)"


def estimate_fields(e: Any) -> dict[str, Any]:
    """One PoolEstimate for `--json`: each figure as [estimate in its possible range, low, high]
    (high null where the interval has no upper end: an NLL or RMSE from under 3 random draws),
    "unbiased" the LURE values themselves, "labels" the answers it rests on, "asked" its round's
    queries (or the evaluation set's items), "partial" and "note" (provisional or partial), "pool"
    (the rows it speaks for), "inputs" (the distinct inputs drawn among where they stand for more
    rows, else null) and "reason" (why there is none)."""
    return {**e.figures(in_range=True), "unbiased": e.unbiased_values(), "labels": e.labels, "asked": e.asked,
            "partial": e.partial, "note": e.note, "pool": e.pool, "inputs": e.inputs, "reason": e.reason}  # fmt: skip


def estimates_data(estimates: list[tuple[Any, Any]], evaluation: Any | None, signal: Any) -> dict[str, Any]:
    """The same for `--json`."""
    return {
        "estimates": [{"round": r.number, "labelled": r.labelled_count, **estimate_fields(e)} for r, e in estimates],
        "evaluation": None if evaluation is None else estimate_fields(evaluation),
        "stopping": {"changed": signal.changed, "changed_window": signal.changed_window, "agreements": list(signal.agreements),
                     "mean_agreement": signal.mean_agreement, "window": signal.window, "threshold": signal.threshold, "stop": signal.stop},  # fmt: skip
    }
