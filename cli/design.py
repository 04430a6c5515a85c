"""`activebayes design ...`: Bayesian experimental design sessions. Parses, calls activebayes.design, prints.

    activebayes design memory-span                         ask a person at the terminal
    activebayes design memory-span --simulate-span 6.5     a simulated participant

Trials are recorded in a database with --db URL (or the global --db, for a person; a simulated
session records nothing unless --db is given). --json prints one JSON object on stdout.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Annotated, Any, Optional

import torch
import typer
from rich.console import Console
from typer import Abort

from activebayes.design import (
    GridPosterior,
    MemorySpanModel,
    SessionTrace,
    SimulatedParticipant,
    Trial,
    run_design_session,
    summarise_posterior,
)
from activebayes_cli._app import CliError, command_group
from activebayes_cli._context import state
from activebayes_cli._memory_span import trial_line
from activebayes_cli._options import CommandDb

design_app = command_group(help="Bayesian experimental design: choose the most informative trial next.", no_args_is_help=True)

_YES = {"y", "yes", "1", "true"}
_NO = {"n", "no", "0", "false"}


class _Stop(Exception):
    """The person ended the session (end of input or Ctrl-C at the prompt)."""


class _PromptParticipant:
    """A person at the terminal: shows a random digit list of the chosen length, asks y/n."""

    def __init__(self, console: Console, seed: int) -> None:
        self.console = console
        self.rng = random.Random(seed)  # the digits shown only; no model randomness here

    def answer(self, design: float | list[float]) -> int:
        digits = int(round(design if isinstance(design, float) else design[0]))
        sequence = " ".join(str(self.rng.randrange(10)) for _ in range(digits))
        self.console.print(f"Show [bold]{digits}[/bold] digits: [bold cyan]{sequence}[/bold cyan]")
        while True:
            try:
                reply = typer.prompt("recalled? [y/n]", err=self.console.stderr).strip().lower()
            except (Abort, EOFError):
                raise _Stop from None
            if reply in _YES:
                return 1
            if reply in _NO:
                return 0
            self.console.print("please answer y or n")


def _check(ok: bool, what: str, fix: str) -> None:
    """A user's mistake: one line 'error: what; fix' and exit code 2 (printed by the root group)."""
    if not ok:
        raise CliError(what, fix)


@design_app.command("memory-span")
def memory_span(
    ctx: typer.Context,
    participant: Annotated[Optional[str], typer.Option("--participant", help="Participant id (recorded with --db; resumes their earlier trials).")] = None,
    trials: Annotated[int, typer.Option("--trials", help="Most trials to run.")] = 20,
    max_digits: Annotated[int, typer.Option("--max-digits", help="Longest list offered (designs 1..max).")] = 15,
    learn_slope: Annotated[bool, typer.Option("--learn-slope", help="Learn the slope too: joint (span, slope) grid; EIG stays about the span.")] = False,
    simulate_span: Annotated[Optional[float], typer.Option("--simulate-span", help="Answer with a simulated participant of this span.")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the simulated participant and the digits shown.")] = 0,
    target_sd: Annotated[Optional[float], typer.Option("--target-sd", help="Stop once the posterior sd of the span is at most this.")] = None,
    db: CommandDb = None,
    plot: Annotated[Optional[Path], typer.Option("--plot", help="Write a PNG of the posterior and the designs.")] = None,
) -> None:
    """Estimate a memory span: each trial shows the list length with the largest expected information gain.

    Trials are recorded in --db: by default a person's in the global --db, a simulation's nowhere.
    """
    cli = state(ctx)
    json_output = cli.out.json
    _check(trials >= 1, f"--trials: expected a positive number of trials, got {trials}", "pass e.g. --trials 20")
    _check(2 <= max_digits <= 40, f"--max-digits: expected a list length between 2 and 40, got {max_digits}", "pass e.g. --max-digits 15")
    _check(target_sd is None or (math.isfinite(target_sd) and target_sd > 0),
           f"--target-sd: expected a positive sd in digits, got {target_sd}", "pass e.g. --target-sd 0.5")  # fmt: skip
    _check(simulate_span is None or (math.isfinite(simulate_span) and 0 < simulate_span <= 40),
           f"--simulate-span: expected a span between 0 and 40 digits, got {simulate_span}", "pass e.g. --simulate-span 6.5")  # fmt: skip
    _check(plot is None or (plot.suffix.lower() == ".png" and plot.parent.exists()),
           f"--plot: expected a .png path in an existing folder, got {str(plot)!r}", "pass e.g. --plot span.png")  # fmt: skip
    console = Console(stderr=json_output, highlight=False)
    who = participant or ("simulated" if simulate_span is not None else "anonymous")
    model = MemorySpanModel()
    posterior = GridPosterior(model, learn_slope=True, n_theta=201, n_slope=40) if learn_slope else GridPosterior(model)
    designs = torch.arange(1.0, max_digits + 1.0, dtype=torch.float64)

    record, offset = None, 0
    url = db if db is not None else (None if simulate_span is not None else cli.db)
    if url is not None:
        from activebayes.design.record import DesignRecord
        from activebayes.store import PoolStore

        settings: dict[str, Any] = {"model": repr(model), "prior": "theta ~ N(7, 2^2)", "learn_slope": learn_slope}
        if db is None:
            store = cli.store(create=True)
        else:
            _check("://" in db, f"--db: {db!r} is not a database URL", "use e.g. sqlite:///span.db")
            store = PoolStore(db)
        record = DesignRecord(store, designs, participant=who, project=cli.project or "memory-span", settings=settings)
        offset = record.replay(posterior)
        if offset:
            console.print(f"resumed {who!r}: {offset} earlier trials, span {posterior.mean:.2f} ± {posterior.sd:.2f}")

    if simulate_span is not None:
        responder: Any = SimulatedParticipant(simulate_span, seed=seed)
    else:
        responder = _PromptParticipant(console, seed * 1_000_003 + offset)  # new digits when resuming
    done: list[Trial] = []

    def on_trial(trial: Trial) -> None:
        if record is not None:
            record.add(trial, offset=offset)
        done.append(trial)
        if not json_output:
            console.print(trial_line(trial, offset), soft_wrap=True)

    try:
        trace = run_design_session(
            posterior, designs, responder, trials, target_sd=target_sd, seed=seed, on_trial=on_trial,
            target="theta",  # the span is the question; with --learn-slope the slope is a nuisance
        )  # fmt: skip
    except _Stop:
        trace = SessionTrace("eig", done, posterior)
        console.print("stopped: no answer given")
    if plot is not None:
        from activebayes.design.plots import plot_session

        plot_session(trace, plot, true_span=simulate_span)
    summary = summarise_posterior(posterior)
    if json_output:
        out = {"trials": [{"design": t.design, "outcome": t.outcome, "eig": t.eig} for t in trace.trials], "posterior": summary}
        typer.echo(json.dumps(out))
        return
    lo, hi = summary["interval"]
    console.print(f"span estimate: {summary['mean']:.2f} ± {summary['sd']:.2f} digits, 90% interval [{lo:.2f}, {hi:.2f}]")
    if plot is not None:
        console.print(f"wrote {plot}")
