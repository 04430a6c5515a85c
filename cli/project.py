"""`activebayes init`, `status` and `export`: create a project, see where it stands, take the labels out."""

from __future__ import annotations

import csv
import json
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.table import Table

from activebayes_cli._app import CliError
from activebayes_cli._context import state
from activebayes_cli._parse import parse_classes, writable_target

app = typer.Typer()


class TaskName(str, Enum):
    classification = "classification"
    regression = "regression"


@app.command()
def init(
    ctx: typer.Context,
    name: Annotated[str, typer.Option("--name", help="Project name (unique in the database).")],
    task: Annotated[TaskName, typer.Option("--task", help="What the oracle answers.")] = TaskName.classification,
    classes: Annotated[
        Optional[str], typer.Option("--classes", help="Class count N (classes 0..N-1) or comma-separated names.")
    ] = None,
    db: Annotated[Optional[str], typer.Option("--db", help="Database URL (same as the global --db).")] = None,
) -> None:
    """Create a project (and the database when it does not exist yet)."""
    st = state(ctx)
    if db is not None:
        st.db = db
    name = name.strip()
    if not name:
        raise CliError("--name: expected a non-empty project name", "pass e.g. --name digits")
    class_list: list[str] | None = None
    if task is TaskName.classification:
        if classes is None:
            raise CliError("--classes: a classification project needs its classes", "pass e.g. --classes 10 or --classes cat,dog")
        class_list = parse_classes(classes)
    elif classes is not None:
        raise CliError("--classes: only a classification project has classes", "leave --classes out for --task regression")
    info = st.store(create=True).create_project(name, task=task.value, classes=class_list)
    st.out.result(
        {"project": info.name, "task": info.task, "classes": info.classes, "db": st.db},
        lambda c: c.print(
            f"Created project [bold]{info.name}[/] ({info.task}"
            + (f", {len(info.classes)} classes" if info.classes else "")
            + f") in {st.db}.\nNext: activebayes pool add FILE"
        ),
    )


def _next_step(has_data: bool, latest: Any, unlabelled: int, pending: int) -> str:
    if not has_data:
        return "add data with `activebayes pool add FILE`"
    if latest is not None and latest.status == "queried" and pending:
        return (
            f"answer the {pending} open queries of round {latest.number}: "
            f"`activebayes label --from round-{latest.number}.csv` or `activebayes label`"
        )
    if latest is not None and latest.status in ("started", "fitted", "scored"):
        return f"round {latest.number} stopped while {latest.status!r}: `activebayes round` resumes it"
    if unlabelled == 0:
        return "every pool item is labelled: `activebayes export FILE`"
    return "run `activebayes round` to choose the next items to label"


def _metric_text(metrics: dict[str, Any]) -> str:
    parts = []
    for key, value in metrics.items():
        if isinstance(value, float):
            parts.append(f"{key}={value:.4g}")
        elif isinstance(value, (int, str)):
            parts.append(f"{key}={value}")
    return ", ".join(parts)


@app.command()
def status(ctx: typer.Context) -> None:
    """Rounds, labelled and unlabelled counts, metrics per round, and the next step."""
    st = state(ctx)
    store = st.store()
    name = st.project_name()
    info = store.project(name)
    n_pool = store.count_items(name, split="pool")
    n_test = store.count_items(name, split="test")
    labelled = store.count_labelled(name, split="pool")
    rounds = store.rounds(name)
    latest = rounds[-1] if rounds else None
    pending = 0
    if latest is not None and latest.status == "queried":
        pending = sum(q.value is None for q in store.queries(name, latest.number))
    next_step = _next_step(info.data_path is not None and n_pool > 0, latest, n_pool - labelled, pending)
    data = {
        "project": name,
        "task": info.task,
        "classes": info.classes,
        "data_path": info.data_path,
        "pool_items": n_pool,
        "test_items": n_test,
        "labelled": labelled,
        "unlabelled": n_pool - labelled,
        "open_queries": pending,
        "rounds": [
            {
                "number": r.number,
                "status": r.status,
                "posterior": r.posterior,
                "acquisition": r.acquisition,
                "labelled_count": r.labelled_count,
                "metrics": r.metrics,
                "failure_reason": r.failure_reason,
            }
            for r in rounds
        ],
        "next": next_step,
    }

    def render(console) -> None:
        console.print(f"[bold]{name}[/] ({info.task}) — data: {info.data_path or 'none yet'}")
        console.print(
            f"pool items: {n_pool}   labelled: {labelled}   unlabelled: {n_pool - labelled}   test items: {n_test}"
        )
        if rounds:
            table = Table(title="rounds")
            for column in ("round", "status", "posterior", "acquisition", "labelled", "metrics"):
                table.add_column(column, overflow="fold")
            for r in rounds:
                status_text = r.status + (f" ({r.failure_reason})" if r.failure_reason else "")
                table.add_row(
                    str(r.number), status_text, r.posterior, r.acquisition, str(r.labelled_count), _metric_text(r.metrics)
                )
            console.print(table)
        else:
            console.print("no rounds yet")
        console.print(f"next: {next_step}")

    st.out.result(data, render)


@app.command()
def export(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="Output file: .csv or .json (by suffix).")],
) -> None:
    """Write the labelled items with their labels and provenance (who, source, round, time)."""
    st = state(ctx)
    fmt = writable_target(file, "FILE", (".csv", ".json"))
    store = st.store()
    name = st.project_name()
    round_numbers = {r.id: r.number for r in store.rounds(name)}
    latest: dict[str, dict[str, Any]] = {}
    for obs in store.observations(name):  # in recording order: the last one per key is the label
        latest[obs["key"]] = obs
    records = []
    for split in ("pool", "test"):
        rows, keys, values = store.labels(name, split=split)
        for row, key, value in zip(rows.tolist(), keys, values):
            obs = latest.get(key, {})
            created = obs.get("created_at")
            records.append(
                {
                    "key": key,
                    "row": int(row),
                    "split": split,
                    "label": value,
                    "who": obs.get("who", ""),
                    "source": obs.get("source", ""),
                    "round": round_numbers.get(obs.get("round_id")) if obs.get("round_id") is not None else None,
                    "time": created.isoformat() if created is not None else None,
                }
            )
    columns = ["key", "row", "split", "label", "who", "source", "round", "time"]
    if fmt == "csv":
        with file.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=columns)
            writer.writeheader()
            for record in records:
                writer.writerow({k: ("" if record[k] is None else record[k]) for k in columns})
    else:
        file.write_text(json.dumps({"project": name, "items": records}, indent=2) + "\n", encoding="utf-8")
    st.out.result(
        {"project": name, "file": str(file), "items": len(records)},
        lambda c: c.print(f"Wrote {len(records)} labelled items of {name} to {file}"),
    )
