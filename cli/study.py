"""`activebayes study run CONFIG.toml`: a simulated active-learning study (activebayes.study).

Reads the TOML config (data paths relative to it), runs every acquisition `repeats` times with a
simulated oracle, and writes study.db, results.json and learning-curve.png into --out (default:
a folder `<config stem>-results` beside the config). Rerunning with the same --out resumes.
--jobs N runs the (acquisition, repeat) runs in N spawned worker processes sharing study.db
(activebayes.study_jobs); a failed run lets the others finish, then one line names it.
Prints a table of the mean (± sd) test accuracy against the number of labels per acquisition.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Annotated, Any, Optional

import torch
import typer
from rich.table import Table

from activebayes_cli._context import state

app = typer.Typer(help="Simulated active-learning studies from a TOML config.", no_args_is_help=True)


def curves_table(title: str, curves: dict[str, list[dict[str, Any]]], repeats: int) -> Table:
    """Labels down, one column per acquisition: mean test accuracy (± sd over repeats)."""
    table = Table(title=title)
    table.add_column("labels", justify="right")
    for name in curves:
        table.add_column(name, justify="right")
    by_name = [{p["labels"]: p for p in points} for points in curves.values()]
    for n in sorted({p["labels"] for points in curves.values() for p in points}):
        cells = []
        for points in by_name:
            p = points.get(n)
            cells.append("" if p is None else (f"{p['mean']:.3f} ± {p['sd']:.3f}" if repeats > 1 else f"{p['mean']:.3f}"))
        table.add_row(str(n), *cells)
    return table


@app.command("run")
def run(
    ctx: typer.Context,
    config_file: Annotated[Path, typer.Argument(metavar="CONFIG", help="The study's .toml file.")],
    out: Annotated[Optional[Path], typer.Option("--out", help="Output folder (default: <config stem>-results beside the config); an existing one is resumed.")] = None,
    device: Annotated[str, typer.Option("--device", help="auto (CUDA when present), cpu or cuda.")] = "auto",
    jobs: Annotated[int, typer.Option("--jobs", min=1, help="Worker processes running the (acquisition, repeat) runs side by side (spawned; they share one GPU); 1 runs them in this process.")] = 1,
) -> None:
    """Run (or resume) a simulated study; writes results.json and learning-curve.png."""
    from activebayes._device import resolve_device
    from activebayes.study import StudyConfig, run_study
    from activebayes.study_jobs import StudyRunsFailed, run_study_jobs

    st = state(ctx)
    config = StudyConfig.from_toml(config_file)  # every config mistake fails here, before any write
    resolve_device(device)
    folder = out if out is not None else config_file.resolve().parent / f"{config_file.stem}-results"
    threads = torch.get_num_threads()
    if "OMP_NUM_THREADS" not in os.environ:
        torch.set_num_threads(1)  # small networks on shared cores: one intra-op thread is fastest
    started = time.perf_counter()
    try:
        with st.out.progress(f"study {config.name}", total=None) as advance:
            report = lambda done, total, text: advance(done, total, text)  # noqa: E731
            if jobs == 1:
                result = run_study(config, folder, device=device, progress=report)
            else:
                result = run_study_jobs(config, folder, jobs=jobs, device=device, progress=report)
    except StudyRunsFailed as exc:
        if exc.user_mistake:
            raise  # one line, exit 2 (the root command group)
        line = f"error: {exc}"  # a bug: one line here, the traceback in the log file; exit 1
        print(json.dumps({"error": line.removeprefix("error: "), "exit_code": 1}) if st.out.json else line, file=sys.stderr, flush=True)
        raise typer.Exit(1) from None
    finally:
        torch.set_num_threads(threads)
    elapsed = time.perf_counter() - started
    summary = {
        "name": config.name,
        "out": str(result.out_dir),
        "database": f"sqlite:///{result.database}",
        "results": str(result.results),
        "plot": str(result.plot),
        "rounds_run": result.rounds_run,
        "elapsed_s": round(elapsed, 2),
        "curves": result.curves,
    }

    def render(console: Any) -> None:
        title = f"{config.name}: test accuracy against labels ({config.posterior}, {config.repeats} repeat(s))"
        console.print(curves_table(title, result.curves, config.repeats))
        console.print(f"results: {result.results}")
        console.print(f"learning curve: {result.plot}")
        console.print(f"database: {result.database} ({result.rounds_run} round(s) run now, {elapsed:.1f} s)")

    st.out.result(summary, render)
