"""A design project (task "design", made by `activebayes design memory-span`) as the project
commands see it: its trials, not a pool of items to label.

The store holds such a project as one reusable item per list length ("digits=7") and one
observation per trial (`activebayes.design.record`), so the pool commands' readers would count
the list lengths as "pool items" and a list length's latest trial as its "label". Instead:

    status    participants, trials and each participant's span estimate (their trials replayed
              on the session's prior), and `design memory-span --participant ID` as the next step
    export    every trial: participant, trial number, list length, outcome, EIG, source, time
    pool add, round, label, export --format label-studio
              refused in one line (`refuse_design`), naming `design memory-span` instead
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from activebayes_cli._app import CliError
from activebayes_cli._context import CliState, shown_url
from activebayes_cli._output import titled_table

DEFAULT_PROJECT = "memory-span"  # the project `design memory-span` records in without --project


def session_posterior(learn_slope: bool) -> Any:
    """The prior of a memory-span session: a grid over the span (θ ~ N(7, 2²)), or with
    `learn_slope` a joint (span, slope) grid; status replays recorded trials on the same prior."""
    from activebayes.design import GridPosterior, MemorySpanModel

    model = MemorySpanModel()
    return GridPosterior(model, learn_slope=True, n_theta=201, n_slope=40) if learn_slope else GridPosterior(model)


def design_command(st: CliState, name: str, participant: str = "ID") -> str:
    """The command that adds trials to design project `name`: `activebayes [--db URL] [--project
    NAME] design memory-span --participant ID` (it resumes a participant already recorded)."""
    project = ["--project", shlex.quote(name)] if name != DEFAULT_PROJECT else []
    return st.command_line(*project, "design", "memory-span", "--participant", shlex.quote(participant))


def refuse_design(st: CliState, name: str, info: Any, command: str) -> None:
    """A one-line CliError when project `name` is a design project, which `command` (pool add,
    round, label, evaluate, ...) does not work on; nothing has been written when it is raised."""
    if info.task != "design":
        return
    init = st.command_line("init", "--name", "NAME")
    raise CliError(
        f"project {name!r} is a design project: `activebayes design memory-span` chooses and records its trials, "
        f"and `{command}` works on a pool of items to label",
        f"add trials with `{design_command(st, name)}`; for data to label, create a project with `{init}`",
    )


def design_status(st: CliState, store: Any, name: str, info: Any) -> None:
    """`activebayes status` of a design project: its participants, trials and span estimates."""
    from activebayes.design import summarise_posterior
    from activebayes.design.record import recorded_trials, replay
    from activebayes.store.models import utc_text

    trials = recorded_trials(store, name)
    by_participant: dict[str, list[dict[str, Any]]] = {}
    for t in trials:
        by_participant.setdefault(t["participant"], []).append(t)
    learn_slope = bool((info.settings or {}).get("learn_slope"))
    participants = []
    for who, theirs in by_participant.items():
        posterior = session_posterior(learn_slope)
        replay(posterior, theirs)
        participants.append({"participant": who, "trials": len(theirs), "first": utc_text(theirs[0]["time"]),
                             "last": utc_text(theirs[-1]["time"]), "span": summarise_posterior(posterior)})  # fmt: skip
    if trials:
        latest = trials[-1]["participant"]
        next_step = (f"more trials with `{design_command(st, name, latest)}` (resumes {latest!r}; "
                     "another --participant id starts a new participant)")  # fmt: skip
    else:
        next_step = f"run trials with `{design_command(st, name)}`"
    data = {"project": name, "task": info.task, "db": shown_url(st.db), "learn_slope": learn_slope,
            "trials": len(trials), "participants": participants, "next": next_step}  # fmt: skip

    def render(console: Console) -> None:
        counts = f"{len(participants)} participant{'s' if len(participants) != 1 else ''}, {len(trials)} trial{'s' if len(trials) != 1 else ''}"
        console.print(f"[bold]{escape(name)}[/] (design: memory span) — {counts}", markup=True)
        if participants:
            table = titled_table("participants (span: posterior mean ± sd in digits, prior N(7, 2²))")
            for column in ("participant", "trials", "last trial", "span", "90% interval"):
                table.add_column(column, justify="left" if column == "participant" else "right")
            for p in participants:
                span, (lo, hi) = p["span"], p["span"]["interval"]
                last = by_participant[p["participant"]][-1]["time"]
                table.add_row(p["participant"], str(p["trials"]), f"{last:%Y-%m-%d %H:%M}" if last else "-",
                              f"{span['mean']:.2f} ± {span['sd']:.2f}", f"[{lo:.2f}, {hi:.2f}]")  # fmt: skip
            console.print(table)
        else:
            console.print("no trials yet")
        console.print(f"next: {next_step}", markup=False)

    st.out.result(data, render)


def trial_records(store: Any, name: str) -> tuple[list[str], list[dict[str, Any]]]:
    """(columns, one record per trial) of design project `name`, as export writes them: trial
    numbered from 1 per participant (as `design memory-span` prints it), the list length in
    digits (and the rate of a 2-D design), the outcome (1 recalled, 0 not), the EIG in nats."""
    from activebayes.design.record import recorded_trials
    from activebayes.store.models import utc_text

    records = []
    for t in recorded_trials(store, name):
        design = t["design"] if isinstance(t["design"], list) else [t["design"]]
        records.append({"participant": t["participant"], "trial": int(t["trial"]) + 1, "digits": design[0],
                        **({"rate": design[1]} if len(design) > 1 else {}), "outcome": int(t["outcome"]),
                        "eig": t["eig"], "source": t["source"], "time": utc_text(t["time"])})  # fmt: skip
    two_d = any("rate" in r for r in records)
    columns = ["participant", "trial", "digits", *(["rate"] if two_d else []), "outcome", "eig", "source", "time"]
    return columns, records


def export_trials(st: CliState, store: Any, name: str, file: Path, fmt: str, to_stdout: bool) -> None:
    """`activebayes export` of a design project: every trial, as csv or JSON, to `file` or stdout."""
    import csv
    import json

    from activebayes.atomic_files import write_json_atomic
    from activebayes_cli._round_file import write_csv_like_pool
    from activebayes_cli.export import _to_stdout

    columns, records = trial_records(store, name)
    rows = [["" if r.get(c) is None else (f"{r[c]:g}" if c in ("digits", "rate") else r[c]) for c in columns] for r in records]
    document = {"project": name, "task": "design", "trials": records}
    if to_stdout and fmt == "csv":
        _to_stdout(lambda out: csv.writer(out, lineterminator="\n").writerows([columns, *rows]))
    elif to_stdout:
        _to_stdout(lambda out: out.write(json.dumps(document, indent=2) + "\n"))
    elif fmt == "csv":
        write_csv_like_pool(file, columns, rows, None, None)
    else:
        write_json_atomic(file, document)
    participants = len({r["participant"] for r in records})
    what = f"{len(records)} trial{'s' if len(records) != 1 else ''} of {participants} participant{'s' if participants != 1 else ''} of {name}"
    if to_stdout:
        if not st.out.quiet:
            st.out.err.print(f"Wrote {what} to stdout", markup=False)
        return
    st.out.result({"project": name, "file": str(file), "trials": len(records), "participants": participants},
                  lambda c: c.print(f"Wrote {what} to {file}", markup=False))  # fmt: skip
