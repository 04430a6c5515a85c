"""`activebayes demo`: what the tool's defaults do, against random, end to end.

1. In a temporary folder (or --out DIR): scikit-learn's handwritten digits (1797 8x8 images,
   bundled with scikit-learn) written as digits.npz, and one SQLite database study.db.
2. Two arms, each what `activebayes round --oracle truth --k 10` gives a user who names no
   strategy (cli/_demo_runs.py, after `run_one` in studies/benchmark/run.py): a project per arm
   and seed (`default-s0`, `random-s0`, ...) whose pool is the digits imported as `pool add`
   does (test split 0.3 with the seed), the default model and posterior (`--model mlp`,
   `default_posterior`: MC dropout, training sized to the labels), rounds of 10 items answered
   by the held-back truth until a round has been fitted on 80 labels (40 with --fast).
   "the default" takes the round's default acquisition and cold-start first batch
   (`default_acquisition`, `default_first` in cli/_model.py, chosen by the real-data benchmark
   in studies/benchmark and named in the output as they are); "random" is uniform throughout.
   Seeds seed, seed+1, seed+2 (only seed with --fast); arms with the same seed share the test
   split and the rounds' seeds.
3. A table of the mean (± sd over seeds) test accuracy of every fitted round against the number
   of labels, one line on where the default stands against random, learning-curve.png and
   results.json.
4. The memory-span design demo (EIG-chosen list lengths for a simulated participant).
"""

from __future__ import annotations

import io
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console

from activebayes_cli._app import CliError, command_group
from activebayes_cli._context import check_device, state
from activebayes_cli._memory_span import memory_span_demo
from activebayes_cli._options import Device
from activebayes_cli._output import curves_table
from activebayes_cli._threads import one_intra_op_thread

app = command_group()

# what the demo writes into the folder (an earlier demo's are replaced: every demo starts afresh;
# study-config.json is an older demo's, which ran activebayes.study)
DEMO_FILES = ("study.db", "study.db-wal", "study.db-shm", "study-config.json", "digits.npz", "results.json",
              "learning-curve.png")  # fmt: skip


@dataclass(frozen=True)
class DemoConfig:
    """How much work the demo does; `fast` is a quick look, the default a fuller picture. The
    model, posterior, training and acquisitions are the CLI's defaults (see cli/_demo_runs.py)."""

    max_labels: int  # the last round is fitted on this many labels
    k: int = 10  # queries per round
    repeats: int = 3  # seeds per arm (seed, seed+1, ...); the table shows their mean
    span_trials: int = 12

    @classmethod
    def choose(cls, fast: bool) -> DemoConfig:
        return cls(max_labels=40, repeats=1, span_trials=8) if fast else cls(max_labels=80)


def prepare_folder(out: Path | None) -> Path:
    """The demo's folder: --out (created; earlier demo files in it replaced) or a new temp dir."""
    if out is None:
        return Path(tempfile.mkdtemp(prefix="activebayes-demo-"))
    if out.exists() and not out.is_dir():
        raise CliError(f"--out: {out} is a file", "pass a folder")
    out.mkdir(parents=True, exist_ok=True)
    for name in DEMO_FILES:
        (out / name).unlink(missing_ok=True)
    return out


@app.command("demo", short_help="The defaults against random on the digits, then memory span.")
def demo(
    ctx: typer.Context,
    fast: Annotated[bool, typer.Option("--fast", help="One seed and 40 labels instead of three seeds and 80 (about 10 s).")] = False,
    out: Annotated[Optional[Path], typer.Option("--out", help="Keep the database, data and plot in this folder (default: a new temp folder).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="First seed: of the split and every round of both arms (then seed+1, seed+2).")] = 0,
    device: Device = "auto",
) -> None:
    """Run the main job end to end: the tool's default strategy against random on the digits, then the memory-span design."""
    st = state(ctx)
    check_device(device)  # a bad --device fails in one line before anything is written
    config = DemoConfig.choose(fast)
    with one_intra_op_thread():
        _run_demo(st, config, out, seed, device)


def _active_learning(st: Any, config: DemoConfig, folder: Path, seed: int, device: str) -> dict[str, Any]:
    """Both arms for every seed (paired: one seed's two runs one after the other); the results
    document (also written to results.json) and the plot."""
    from activebayes.data import write_digits
    from activebayes.store import PoolStore
    from activebayes_cli import _demo_runs as runs

    arms = runs.demo_arms()
    seeds = [seed + i for i in range(config.repeats)]
    digits = write_digits(folder / "digits.npz")
    database = folder / "study.db"
    total = len(arms) * len(seeds) * runs.steps_per_run(config.max_labels, config.k)
    done = 0
    by_arm: dict[str, list[dict[str, Any]]] = {arm.label: [] for arm in arms}
    with st.out.progress("active learning on the digits", total=total) as advance, PoolStore(f"sqlite:///{database}") as store:
        for s in seeds:
            for arm in arms:
                advance(done, None, f"{arm.key}, seed {s}")  # positional: the --quiet advance names them otherwise

                def step() -> None:
                    nonlocal done
                    done += 1
                    advance(done)

                by_arm[arm.label].append(runs.run_arm(store, digits, folder, arm, s, k=config.k, max_labels=config.max_labels,
                                                      device=device, step=step))  # fmt: skip
    curves = {label: runs.summarise(points) for label, points in by_arm.items()}
    default, random = arms
    diff = runs.compare(curves[default.label], curves[random.label])
    where = "one seed" if len(seeds) == 1 else f"mean ± sd of {len(seeds)} seeds"
    plot = runs.plot_curves(curves, folder / "learning-curve.png", f"digits: CLI defaults against random ({where})")
    document = {
        "arms": {arm.label: {"key": arm.key, "acquisition": arm.acquisition, "first": arm.first, "cover_classes": arm.cover} for arm in arms},
        "settings": {"k": config.k, "max_labels": config.max_labels, "test_fraction": runs.TEST_FRACTION, "seeds": seeds,
                     "model": "mlp", "posterior": by_arm[default.label][0]["posterior"], "device": device},  # fmt: skip
        "curves": curves,
        "runs": by_arm,
        "default_vs_random": diff,
        "standing": runs.standing(diff, len(seeds)),
        "database": str(database),
        "plot": str(plot),
    }
    document["results"] = str(runs.write_results(folder / "results.json", document))
    return document


def _run_demo(st: Any, config: DemoConfig, out: Path | None, seed: int, device: str) -> None:
    folder = prepare_folder(out)
    started = time.perf_counter()
    st.out.note(f"demo folder: {folder} (database study.db, pool digits.npz)")
    result = _active_learning(st, config, folder, seed, device)
    curves = result["curves"]
    active_s = time.perf_counter() - started

    if not st.out.json:
        studies = f"mean of {config.repeats} seeds" if config.repeats > 1 else "one seed"
        title = f"digits: test accuracy against labels (the CLI's defaults and random, simulated oracle, {studies})"
        st.out.console.print(curves_table(title, curves, config.repeats))
        st.out.console.print(result["standing"])
        st.out.console.print(f"learning curve: {result['plot']}")
    console = st.out.console
    if st.out.json:  # stdout carries the JSON only: the span table goes to stderr (or nowhere)
        console = Console(file=io.StringIO()) if st.out.quiet else st.out.err
    trials = memory_span_demo(console, seed, trials=config.span_trials).trials
    span = {"trials": len(trials), "mean": float(trials[-1].mean), "sd": float(trials[-1].sd)}
    elapsed = time.perf_counter() - started
    summary = {
        "folder": str(folder),
        "database": f"sqlite:///{result['database']}",
        "plot": result["plot"],
        "results": result["results"],
        "curves": {label: [{"labels": p["labels"], "accuracy": p["mean"]} for p in points] for label, points in curves.items()},
        "arms": result["arms"],
        "default_vs_random": result["default_vs_random"],
        "standing": result["standing"],
        "studies": config.repeats,
        "seeds": result["settings"]["seeds"],
        "memory_span": span,
        "active_learning_s": round(active_s, 2),
        "total_s": round(elapsed, 2),
    }
    st.out.result(summary, lambda c: c.print(f"demo finished in {elapsed:.1f} s (active learning {active_s:.1f} s); files in {folder}"))
    st.out.note(f"Next, on your own table: {st.command_line('init', '--name', 'NAME')}, then "
                f"{st.command_line('pool', 'add', 'FILE.csv', '--label-column', 'LABEL')} (README.md, 'Quick start on the command line')")
