"""The memory-span design session as the CLI shows it: one line per trial, a table of trials,
and the short simulated session that `design memory-span` and `demo` both print."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from activebayes_cli._output import titled_table

if TYPE_CHECKING:  # the design stack (torch) loads when a session runs, not when the CLI starts
    from activebayes.design import SessionTrace, Trial


def trial_line(trial: Trial, offset: int = 0) -> str:
    """One trial as a line: design, outcome, EIG (nats) and the posterior of the span after it,
    within 80 columns up to trial 999 and a span under 10 digits."""
    lo, hi = trial.interval
    outcome = "recalled" if trial.outcome else "not recalled"
    return (
        f"trial {trial.index + 1 + offset:>3}: {trial.design:g} digits, {outcome:<12} EIG {trial.eig:.3f}  "
        f"span {trial.mean:.2f} ± {trial.sd:.2f}, 90% [{lo:.2f}, {hi:.2f}]"
    )


def trials_table(trace: SessionTrace, title: str) -> Table:
    table = titled_table(title)
    for name in ("trial", "digits", "recalled", "EIG (nats)", "mean", "sd", "90% interval"):
        table.add_column(name, justify="right")
    for t in trace.trials:
        lo, hi = t.interval
        table.add_row(str(t.index + 1), f"{t.design:g}", "yes" if t.outcome else "no", f"{t.eig:.3f}",
                      f"{t.mean:.2f}", f"{t.sd:.2f}", f"[{lo:.2f}, {hi:.2f}]")  # fmt: skip
    return table


def memory_span_demo(console: Console, seed: int = 0, *, span: float = 6.5, trials: int = 12) -> SessionTrace:
    """A short simulated memory-span session (EIG designs, 1..15 digits), printed as a table."""
    import torch

    from activebayes.design import GridPosterior, MemorySpanModel, SimulatedParticipant, run_design_session, summarise_posterior

    posterior = GridPosterior(MemorySpanModel())
    designs = torch.arange(1.0, 16.0, dtype=torch.float64)
    trace = run_design_session(posterior, designs, SimulatedParticipant(span, seed=seed), trials, seed=seed)
    console.print(trials_table(trace, f"memory span: EIG-chosen lists, simulated participant with span {span:g}"))
    s = summarise_posterior(posterior)
    console.print(f"span estimate {s['mean']:.2f} ± {s['sd']:.2f} (90% [{s['interval'][0]:.2f}, {s['interval'][1]:.2f}])")
    return trace
