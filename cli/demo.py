"""`activebayes demo`: the main job end to end on the embedded default.

1. A simulated study (`activebayes.study.run_study`) in a temporary folder (or --out DIR): a
   fresh SQLite database study.db and scikit-learn's handwritten digits (1797 8x8 images, bundled
   with scikit-learn) written as digits.npz.
2. Two acquisitions on the same pool and the same held-back test split: MC dropout + BALD, and
   MC dropout + random acquisition. Both start from the same 20 random labels, then ask 10 items
   per round of a simulated oracle (the held-back truth) until a round has been fitted on 80
   labels (40 with --fast). The pair is repeated with 3 seeds (split, initial labels, training),
   one project each (1 with --fast).
3. A table of the mean (± sd) test accuracy against the number of labels for both,
   learning-curve.png and results.json.
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

from activebayes_cli._app import CliError
from activebayes_cli._context import check_device, state
from activebayes_cli._memory_span import memory_span_demo
from activebayes_cli._options import Device
from activebayes_cli._output import curves_table
from activebayes_cli._threads import one_intra_op_thread

app = typer.Typer()

# what run_study writes into the folder (an earlier demo's are replaced: every demo starts afresh)
DEMO_FILES = ("study.db", "study.db-wal", "study.db-shm", "study-config.json", "digits.npz", "results.json",
              "learning-curve.png")  # fmt: skip
STRATEGIES = (("bald", "MC dropout + BALD"), ("random", "MC dropout + random"))  # acquisition, label


@dataclass(frozen=True)
class DemoConfig:
    """How much work the demo does; `fast` is a quick look, the default a fuller picture."""

    max_labels: int  # the last round is fitted on this many labels
    initial: int = 20  # random labels to start from
    k: int = 10  # queries per round
    epochs: int = 200
    lr: float = 3e-3
    samples: int = 20  # MC dropout masks S
    hidden: tuple[int, ...] = (128,)
    test_fraction: float = 0.3
    repeats: int = 3  # studies per strategy (seeds seed, seed+1, ...); the table shows their mean
    span_trials: int = 12

    @classmethod
    def choose(cls, fast: bool) -> DemoConfig:
        return cls(max_labels=40, epochs=150, samples=10, repeats=1, span_trials=8) if fast else cls(max_labels=80)

    def study(self, seed: int) -> Any:
        """The `StudyConfig` of the active-learning part: BALD and random, uniformly random
        initial labels, pixels left in [0, 1] (per-pixel standardisation blows up the rarely
        inked border pixels)."""
        from activebayes.study import StudyConfig

        config = StudyConfig(
            acquisitions=tuple(acquisition for acquisition, _ in STRATEGIES), name="digits-demo", seed=seed,
            repeats=self.repeats, dataset="digits", test_fraction=self.test_fraction, initial=self.initial,
            balanced_initial=False, batch_size=self.k, max_labels=self.max_labels, posterior="mc-dropout",
            network="mlp", hidden=self.hidden, epochs=self.epochs, lr=self.lr, n_samples=self.samples,
        )  # fmt: skip
        config.validate()
        return config


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


@app.command("demo")
def demo(
    ctx: typer.Context,
    fast: Annotated[bool, typer.Option("--fast", help="Fewer rounds, epochs and samples (about 20 s).")] = False,
    out: Annotated[Optional[Path], typer.Option("--out", help="Keep the database, data and plot in this folder (default: a new temp folder).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the split, the initial labels and every round.")] = 0,
    device: Device = "auto",
) -> None:
    """Run the main job end to end: BALD against random on the digits, then the memory-span design."""
    st = state(ctx)
    check_device(device)  # a bad --device fails in one line before anything is written
    config = DemoConfig.choose(fast)
    with one_intra_op_thread():
        _run_demo(st, config, out, seed, device)


def _run_demo(st: Any, config: DemoConfig, out: Path | None, seed: int, device: str) -> None:
    from activebayes.study import run_study

    folder = prepare_folder(out)
    started = time.perf_counter()
    st.out.note(f"demo folder: {folder} (database study.db, pool digits.npz)")
    with st.out.progress("active learning on the digits") as advance:
        result = run_study(config.study(seed), folder, device=device, progress=advance)
    labels = dict(STRATEGIES)
    curves = {labels[acquisition]: points for acquisition, points in result.curves.items()}
    active_s = time.perf_counter() - started

    if not st.out.json:
        studies = f"mean of {config.repeats} studies" if config.repeats > 1 else "one study"
        title = f"digits: test accuracy against labels (MC dropout, simulated oracle, {studies})"
        st.out.console.print(curves_table(title, curves, config.repeats))
        st.out.console.print(f"learning curve: {result.plot}")
    console = st.out.console
    if st.out.json:  # stdout carries the JSON only: the span table goes to stderr (or nowhere)
        console = Console(file=io.StringIO()) if st.out.quiet else st.out.err
    trials = memory_span_demo(console, seed, trials=config.span_trials).trials
    span = {"trials": len(trials), "mean": float(trials[-1].mean), "sd": float(trials[-1].sd)}
    elapsed = time.perf_counter() - started
    summary = {
        "folder": str(folder),
        "database": f"sqlite:///{result.database}",
        "plot": str(result.plot),
        "results": str(result.results),
        "curves": {label: [{"labels": p["labels"], "accuracy": p["mean"]} for p in points] for label, points in curves.items()},
        "studies": config.repeats,
        "memory_span": span,
        "active_learning_s": round(active_s, 2),
        "total_s": round(elapsed, 2),
    }
    st.out.result(summary, lambda c: c.print(f"demo finished in {elapsed:.1f} s (active learning {active_s:.1f} s); files in {folder}"))
