"""`activebayes label`: record a person's answers, from a CSV file or typed in the terminal.

`--from FILE` reads `key,label` rows (FileOracle: the whole file is validated — fields, classes,
duplicates — and the store checks every key, before one transaction records them all). With no
file, the open queries of the waiting round are shown one by one (digit images drawn in the
terminal, table rows as a table); type a label, `s` to skip, `q` to save what was typed and stop.
Answers are tagged with the waiting round (or --round N); `activebayes round` then closes a round
whose queries are all answered and starts the next.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from activebayes_cli._app import CliError
from activebayes_cli._context import state
from activebayes_cli._parse import existing_file

app = typer.Typer()


def _target_round(store: Any, name: str, number: int | None) -> int | None:
    """--round N (checked), else the latest round when it waits for answers, else None."""
    rounds = store.rounds(name)
    if number is not None:
        if not any(r.number == number for r in rounds):
            known = ", ".join(str(r.number) for r in rounds) or "none yet"
            raise CliError(f"--round: project {name!r} has no round {number} (rounds: {known})", "pass one of them or leave --round out")
        return number
    if rounds and rounds[-1].status == "queried":
        return rounds[-1].number
    return None


@app.command("label")
def label(
    ctx: typer.Context,
    from_csv: Annotated[Optional[Path], typer.Option("--from", help="CSV of key,label rows (e.g. a filled-in round-N.csv).")] = None,
    round_number: Annotated[Optional[int], typer.Option("--round", help="Round the answers belong to (default: the waiting round).")] = None,
    who: Annotated[Optional[str], typer.Option("--who", help="Who answered (default: $USER).")] = None,
) -> None:
    """Import answers from a CSV, or answer the waiting round's queries in the terminal."""
    from activebayes.oracles import FileOracle, PromptOracle

    st = state(ctx)
    who = who or os.environ.get("USER") or os.environ.get("USERNAME") or "human"
    if from_csv is not None:
        existing_file(from_csv, "--from")
    store = st.store()
    name = st.project_name()
    info = store.project(name)
    classes = info.classes if info.task == "classification" else None
    target = _target_round(store, name, round_number)

    if from_csv is not None:
        answers = FileOracle(from_csv, classes=classes, keys=store.item_keys(name)).answers()  # the whole file first
        if not answers:
            raise CliError(f"--from: {from_csv} holds no answers", "fill in the label column (rows of key,label)")
        pairs = [(a.key, a.value) for a in answers]
        recorded = store.record_observations(name, pairs, who=who, source="file", round_number=target)
        skipped = 0
    else:
        if target is None:
            raise CliError(
                f"nothing to label: no round of project {name!r} waits for answers",
                "run `activebayes round` first, or import answers with --from CSV",
            )
        pending = [q for q in store.queries(name, target) if q.value is None]
        if not pending:
            st.out.note(f"round {target} has all its answers. Next: activebayes round")
            st.out.result({"project": name, "round": target, "recorded": 0, "skipped": 0, "remaining": 0})
            return
        from activebayes.loop import load_project_data

        data = load_project_data(store, name)
        candidates = data.x[[q.row for q in pending]]
        oracle = PromptOracle(classes=classes, output=sys.stderr if st.out.json else sys.stdout)
        answers = oracle.ask([q.key for q in pending], candidates)
        pairs = [(a.key, a.value) for a in answers if a.value is not None]
        recorded = store.record_observations(name, pairs, who=who, source="prompt", round_number=target) if pairs else 0
        skipped = len(answers) - len(pairs)

    remaining = len([q for q in store.queries(name, target) if q.value is None]) if target is not None else 0
    summary = {"project": name, "round": target, "recorded": recorded, "skipped": skipped, "remaining": remaining}

    def render(console) -> None:
        where = f" for round {target}" if target is not None else ""
        console.print(f"Recorded {recorded} answer(s){where}" + (f", skipped {skipped}" if skipped else "") + ".")
        if target is not None and remaining:
            console.print(f"{remaining} quer{'y' if remaining == 1 else 'ies'} of round {target} still open: `activebayes label` to continue.")
        else:
            console.print("Next: activebayes round")

    st.out.result(summary, render)
