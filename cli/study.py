"""`activebayes study run CONFIG.toml`: a simulated active-learning study (activebayes.study).

Reads the TOML config (data paths relative to it), runs every acquisition `repeats` times with a
simulated oracle, and writes study.db, results.json and learning-curve.png into --out (default:
a folder `<config stem>-results` beside the config). Rerunning with the same --out resumes.
--jobs N runs the (acquisition, repeat) runs in N spawned worker processes sharing study.db
(activebayes.study_jobs); a failed run lets the others finish, then one line names it.
--engine ray runs them as Ray tasks instead, --jobs at a time, on a local Ray (the study's
database is a SQLite file in --out, so a cluster --address is refused).
Prints a table of the mean (± sd) test accuracy against the number of labels per acquisition.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from activebayes_cli._app import command_group
from activebayes_cli._context import check_device, state
from activebayes_cli._options import Address, Device, Engine, EngineName
from activebayes_cli._output import curves_table
from activebayes_cli._threads import one_intra_op_thread

app = command_group(help="Simulated active-learning studies from a TOML config.", no_args_is_help=True)


@app.command("run", short_help="Run (or resume) a simulated study from its TOML file.")
def run(
    ctx: typer.Context,
    config_file: Annotated[Path, typer.Argument(metavar="CONFIG", help="The study's .toml file.")],
    out: Annotated[Optional[Path], typer.Option("--out", help="Output folder (default: <config stem>-results beside the config); an existing one is resumed.")] = None,
    device: Device = "auto",
    jobs: Annotated[int, typer.Option("--jobs", min=1, metavar="<int>", help="Worker processes running the (acquisition, repeat) runs side by side (spawned; they share one GPU); 1 runs them in this process.")] = 1,
    engine: Engine = EngineName.local,
    address: Address = None,
) -> None:
    """Run (or resume) a simulated study; writes results.json and learning-curve.png."""
    from activebayes._memory import keep_freed_memory
    from activebayes.distributed import check_engine_store
    from activebayes.errors import ConfigError
    from activebayes.study import StudyConfig, run_study
    from activebayes.study_jobs import StudyRunsFailed, run_study_jobs

    st = state(ctx)
    config = StudyConfig.from_toml(config_file)  # every config mistake fails here, before any write
    check_device(device)  # a bad --device fails in one line before anything is written
    folder = out if out is not None else config_file.resolve().parent / f"{config_file.stem}-results"
    check_engine_store(engine.value, address, f"sqlite:///{folder / 'study.db'}")  # before anything is written
    started = time.perf_counter()
    try:
        with one_intra_op_thread(), st.out.progress(f"study {config.name}", total=None) as advance:
            report = lambda done, total, text: advance(done, total, text)  # noqa: E731
            if jobs == 1 and engine is EngineName.local:
                keep_freed_memory()  # this process runs the rounds, then exits (activebayes._memory)
                result = run_study(config, folder, device=device, progress=report)
            else:
                result = run_study_jobs(config, folder, jobs=jobs, device=device, progress=report, engine=engine.value, address=address)
    except ConfigError as exc:
        if str(exc).startswith("out_dir:"):  # the library names its argument; here it is --out
            raise ConfigError(str(exc).replace("out_dir", "--out")) from None
        raise
    except KeyboardInterrupt:
        line = (f"interrupted: the finished rounds are kept in {folder / 'study.db'}; "
                "run the same command again to resume")  # fmt: skip
        print(json.dumps({"error": line, "exit_code": 130}) if st.out.json else line, file=sys.stderr, flush=True)
        raise typer.Exit(130) from None
    except StudyRunsFailed as exc:
        if exc.user_mistake:
            raise  # one line, exit 2 (the root command group)
        line = f"error: {exc}"  # a bug: one line here, the traceback in the log file; exit 1
        print(json.dumps({"error": line.removeprefix("error: "), "exit_code": 1}) if st.out.json else line, file=sys.stderr, flush=True)
        raise typer.Exit(1) from None
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
        title = f"{config.name}: test accuracy against labels ({config.posterior}, {config.repeats} repeat{'' if config.repeats == 1 else 's'})"
        console.print(curves_table(title, result.curves, config.repeats))
        console.print(f"results: {result.results}")
        console.print(f"learning curve: {result.plot}")
        console.print(f"database: {result.database} ({result.rounds_run} round{'' if result.rounds_run == 1 else 's'} run now, {elapsed:.1f} s)")

    st.out.result(summary, render)
