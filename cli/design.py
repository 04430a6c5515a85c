"""`activebayes design ...`: Bayesian experimental design sessions. Parses, calls activebayes.design, prints.

    activebayes design memory-span                         ask a person at the terminal
    activebayes design memory-span --simulate-span 6.5     a simulated participant

Trials are recorded in the database of the command's --db, else of the global --db or
ACTIVEBAYES_DB; without any of them a person's go to the default activebayes.db and a simulated
session's nowhere (the output says which). A participant recorded before is resumed: --trials
counts the trials to run now, after the recorded ones, and a simulated participant's answer to
trial n is drawn from (--seed, participant, n), as is the digit list shown to a person at trial n
(`activebayes.design.digit_lists`), so a session resumed after k trials answers, and shows, as
one run straight through. --json prints one JSON object on stdout. Ctrl-C keeps the trials
answered, says so in one line and exits 130, as `label` does.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from typer import Abort

from activebayes.errors import StoreError
from activebayes_cli._app import INTERRUPTED, CliError, command_group
from activebayes_cli._context import shown_url, state
from activebayes_cli._design_project import DEFAULT_PROJECT, session_posterior
from activebayes_cli._memory_span import trial_line
from activebayes_cli._options import CommandDb
from activebayes_cli._output import unwrapped_when_piped
from activebayes_cli._parse import new_file

design_app = command_group(help="Bayesian experimental design: choose the most informative trial next.", no_args_is_help=True)

_YES = {"y", "yes", "1", "true"}
_NO = {"n", "no", "0", "false"}
_QUIT = {"q", "quit"}


class _Stop(Exception):
    """The person ended the session (q or the end of input; Ctrl-C is a KeyboardInterrupt)."""


class _PromptParticipant:
    """A person at the terminal: shows a digit list of the chosen length (trial n's from (seed,
    participant, n): `activebayes.design.digit_lists`), asks y/n."""

    def __init__(self, console: Console, seed: int, participant: str, first_trial: int) -> None:
        self.console = console
        self.seed, self.participant, self.trial = seed, participant, first_trial

    def answer(self, design: float | list[float]) -> int:
        from activebayes.design.digit_lists import digit_list

        digits = int(round(design if isinstance(design, float) else design[0]))
        sequence = " ".join(map(str, digit_list(self.seed, self.participant, self.trial, digits)))
        self.trial += 1
        self.console.print(f"Show [bold]{digits}[/bold] digits: [bold cyan]{sequence}[/bold cyan]")
        while True:
            try:
                reply = typer.prompt("recalled? [y/n, q stops]", err=self.console.stderr).strip().lower()
            except Abort as exc:  # click turns both Ctrl-C and the end of input into Abort
                if isinstance(exc.__context__, KeyboardInterrupt):
                    raise KeyboardInterrupt from None
                raise _Stop from None
            except EOFError:
                raise _Stop from None
            if reply in _QUIT:
                raise _Stop
            if reply in _YES:
                return 1
            if reply in _NO:
                return 0
            self.console.print("please answer y or n (q stops; the trials answered so far are recorded)")


def _check(ok: bool, what: str, fix: str) -> None:
    """A user's mistake: one line 'error: what; fix' and exit code 2 (printed by the root group)."""
    if not ok:
        raise CliError(what, fix)


def recorded_participants(store: Any, project: str) -> dict[str, int]:
    """{participant id: trials recorded} of a design project."""
    from activebayes.design.record import recorded_trials

    counts: dict[str, int] = {}
    for trial in recorded_trials(store, project):
        counts[trial["participant"]] = counts.get(trial["participant"], 0) + 1
    return counts


def _refuse_lookalike(who: str, known: dict[str, int]) -> None:
    """A new id that differs from a recorded one only in case or spacing is taken for a typo of it."""
    if who in known:
        return
    fold = "".join(who.split()).casefold()
    twin = next((p for p in known if "".join(p.split()).casefold() == fold), None)
    _check(twin is None, f"--participant {who!r}: no trials are recorded under that id, but {twin!r} has {known.get(twin or '', 0)}"
           " (ids that differ only in case or spacing are taken for a typo)",
           f"pass --participant {twin!r} to resume them, or an id of its own for a new participant")  # fmt: skip


def _interrupted(cli: Any, who: str, record: Any) -> None:
    """Ctrl-C: one line on stderr saying what was kept (the trials in the store, read back: one
    interrupted while it was written is there or not, whole) and how to resume; exit 130, as `label`."""
    if record is None:
        kept = "nothing recorded (a simulated session is recorded only with --db FILE or ACTIVEBAYES_DB)"
    else:
        trials = len(record.trials())
        kept = (f"{trials} trial{'s' if trials != 1 else ''} of {who!r} recorded; "
                f"`{cli.next_command('design', 'memory-span', '--participant', who)}` resumes")  # fmt: skip
    print(f"interrupted: {kept}", file=sys.stderr, flush=True)
    raise typer.Exit(INTERRUPTED)


def _plural_people(n: int) -> str:
    return f"{n} participant{'s' if n != 1 else ''}"


@design_app.command("memory-span", short_help="Estimate a memory span, one EIG-chosen trial at a time.")
def memory_span(
    ctx: typer.Context,
    participant: Annotated[Optional[str], typer.Option("--participant", help="Participant id, needed for a person: their trials are recorded under it, and the same id resumes them.")] = None,
    trials: Annotated[int, typer.Option("--trials", help="Most trials to run now; when resuming a participant, this many MORE after their recorded trials (not a total).")] = 20,
    max_digits: Annotated[int, typer.Option("--max-digits", help="Longest list offered (designs 1..max).")] = 15,
    learn_slope: Annotated[bool, typer.Option("--learn-slope", help="Learn the slope too: joint (span, slope) grid; EIG stays about the span.")] = False,
    simulate_span: Annotated[Optional[float], typer.Option("--simulate-span", help="Answer with a simulated participant of this span.")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the simulated participant (trial n's answer is drawn from seed, participant and n) and of the digits shown to a person (trial n's list from seed, participant and n; no digit twice before all ten are shown).")] = 0,
    target_sd: Annotated[Optional[float], typer.Option("--target-sd", help="Stop once the posterior sd of the span is at most this.")] = None,
    db: CommandDb = None,
    plot: Annotated[Optional[Path], typer.Option("--plot", help="Write a PNG of the posterior and the designs (an existing file only with --force).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing --plot file.")] = False,
) -> None:
    """Estimate a memory span: each trial shows the list length with the largest expected information gain.

    Trials are recorded in --db (the command's, else the global --db or ACTIVEBAYES_DB); with none
    of them, a person's in activebayes.db and a simulation's nowhere. --trials counts the trials
    to run now: a resumed participant gets this many more.
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
    _check(plot is not None or not force, "--force: only applies with --plot (it overwrites an existing plot)", "add --plot FILE or leave --force out")
    if plot is not None:
        new_file(plot, "the plot", "--plot FILE", force)
    console = unwrapped_when_piped(Console(stderr=json_output, highlight=False))
    if participant is not None:
        participant = participant.strip()
        _check(participant != "", "--participant: expected an id, got an empty one", "pass e.g. --participant p1")
    _check(participant is not None or simulate_span is not None,
           "--participant: a person's trials are recorded under their id (without one, each person would resume the last one's trials)",
           "pass --participant ID (the same id again resumes that person), or --simulate-span for a simulated participant")  # fmt: skip
    who = participant or "simulated"
    import torch  # the design stack loads when a session runs, not when the CLI starts

    from activebayes.design import SessionTrace, SimulatedParticipant, Trial, run_design_session, summarise_posterior

    posterior = session_posterior(learn_slope)
    designs = torch.arange(1.0, max_digits + 1.0, dtype=torch.float64)

    if db is not None:  # the command's own --db: as the global one, given on the command line
        cli.db, cli.db_typed, cli.db_given = db, True, True
    record, offset, project = None, 0, cli.project or DEFAULT_PROJECT
    if cli.db_given or simulate_span is None:  # a simulation records only where a --db / ACTIVEBAYES_DB says
        from activebayes.design.record import DesignRecord, design_key

        settings: dict[str, Any] = {"model": repr(posterior.model), "prior": "theta ~ N(7, 2^2)", "learn_slope": learn_slope}
        store = cli.store(create=True)
        existing = store.project(project) if project in store.projects() else None  # read once
        if existing is not None and existing.task != "design":
            raise CliError(f"project {project!r} in {shown_url(cli.db)} is a {existing.task} project, not a design project",
                           "name another with the global --project NAME (before `design`), e.g. `activebayes --project span design memory-span`")  # fmt: skip
        recorded_slope = bool((existing.settings or {}).get("learn_slope")) if existing is not None else learn_slope
        _check(recorded_slope == learn_slope,  # status, export and every resume read the trials with the project's model
               f"--learn-slope: project {project!r} was set up {'with' if recorded_slope else 'without'} it, and its status and resumes use that model",
               f"{'pass' if recorded_slope else 'leave out'} --learn-slope, or give the other model a project of its own with the global --project NAME")  # fmt: skip
        known = recorded_participants(store, project) if existing is not None else {}
        _refuse_lookalike(who, known)
        record = DesignRecord(store, designs, participant=who, project=project, settings=settings)
        offset = record.replay(posterior)
        if offset:
            console.print(f"resumed {who!r}: {offset} earlier trials, span {posterior.mean:.2f} ± {posterior.sd:.2f}; "
                          f"running up to {trials} more (trials {offset + 1}-{offset + trials})", markup=False, soft_wrap=True)  # fmt: skip
        elif simulate_span is None:
            console.print(f"new participant {who!r}" + (f" ({_plural_people(len(known))} recorded before)" if known else ""), markup=False)

    if simulate_span is not None:
        responder: Any = SimulatedParticipant(simulate_span, seed=seed, participant=who, first_trial=offset)
    else:
        responder = _PromptParticipant(console, seed, who, offset)
    done: list[Trial] = []

    def on_trial(trial: Trial) -> None:
        if record is not None:
            try:
                record.add(trial, offset=offset)
            except StoreError as exc:  # a second session of this participant id: this one stops, its earlier trials kept
                said = "recalled" if trial.outcome else "not recalled"
                raise CliError(f"{exc}; this trial ({design_key(trial.design)}, {said}) is not recorded",
                               f"run one session per participant id (give each person an id of their own); "
                               f"`{cli.next_command('design', 'memory-span', '--participant', who)}` resumes with every recorded trial") from None  # fmt: skip
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
        console.print("stopped before this list was answered")
    except KeyboardInterrupt:  # Ctrl-C: the trials answered are recorded (each in its own transaction), nothing else is written
        _interrupted(cli, who, record)
    if plot is not None:
        from activebayes.design.plots import plot_session

        plot_session(trace, plot, true_span=simulate_span)
    summary = summarise_posterior(posterior)
    where = shown_url(cli.db) if record is not None else None
    if json_output:
        out = {
            "participant": who, "earlier_trials": offset, "db": where, "project": project if record is not None else None,
            "trials": [{"trial": t.index + 1 + offset, "design": t.design, "outcome": t.outcome, "eig": t.eig} for t in trace.trials],
            "posterior": summary,
        }  # fmt: skip
        typer.echo(json.dumps(out))
        return
    lo, hi = summary["interval"]
    total = offset + len(trace.trials)
    after = f"after {total} trial{'s' if total != 1 else ''}" + (f" ({len(trace.trials)} now, {offset} before)" if offset else "")
    console.print(f"span estimate {after}: {summary['mean']:.2f} ± {summary['sd']:.2f} digits, 90% interval [{lo:.2f}, {hi:.2f}]", soft_wrap=True)
    if record is not None:
        console.print(f"recorded {who!r} in {where} (project {project!r}); the same --participant resumes", markup=False, soft_wrap=True)
    else:
        console.print("not recorded (a simulation is recorded only with --db FILE or ACTIVEBAYES_DB)", markup=False, soft_wrap=True)
    if plot is not None:
        console.print(f"Wrote {plot}")
