"""The queries of a round as the terminal shows them: a rich Table of rank, key (or query id),
score, the round's prediction when asked for, and the label so far."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from activebayes_cli._round_file import prediction_text


def score_text(score: float) -> str:
    """An acquisition score for the queries table: four decimals, or four significant digits where
    four decimals would show 0.0000 for a non-zero score (EPIG and BALD of a confident posterior are
    often 1e-5 nats) or run long (a variance of 12,345)."""
    return f"{score:.4f}" if score == 0 or 1e-3 <= abs(score) < 1e4 else f"{score:.3e}"


def queries_table(title: str | None, queries: list[Any], task: str = "classification", writing: str = "plain", show_guess: bool = False,
                  ids: dict[str, str] | None = None) -> Table:  # fmt: skip
    """rank, key (with `ids`, query: each key's opaque id, `_task_ids`, where the keys could name
    the class), score, with `show_guess` the round's prediction (when any query has one), and the
    label so far, numbers with the project's decimal mark (`writing`), as in its round file."""
    from activebayes.data.number_style import marked

    table = Table(title=title)
    table.add_column("rank", justify="right")
    table.add_column("key" if ids is None else "query", overflow="fold")
    table.add_column("score", justify="right")
    predicted = show_guess and any(q.prediction for q in queries)
    if predicted:
        table.add_column("predicted")
    table.add_column("label")
    for q in queries:
        cells = [str(q.rank + 1), q.key if ids is None else ids[q.key], marked(score_text(q.score), writing)]
        if predicted:
            cells.append(prediction_text(q.prediction, writing))
        label = "" if q.value is None else marked(q.value, writing) if task == "regression" else q.value
        table.add_row(*cells, label)
    return table
