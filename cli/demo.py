"""`activebayes demo`: the main job end to end on the embedded default.

1. A fresh SQLite database and scikit-learn's handwritten digits (1797 8x8 images, bundled with
   scikit-learn) written as digits.npz, in a temporary folder (or --out DIR).
2. Two projects on the same pool and the same held-back test split: MC dropout + BALD, and
   MC dropout + random acquisition. Both start from the same 20 random labels (the loop's seeded
   cold start), then ask 10 items per round of a simulated oracle (the held-back truth). The
   pair is repeated with 3 seeds (split, cold start, training), one project each (1 with --fast).
3. A table of the mean test accuracy against the number of labels for both, and
   learning-curve.png.
4. The memory-span design demo (EIG-chosen list lengths for a simulated participant).
"""

from __future__ import annotations

import functools
import io
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Optional

import torch
import typer
from rich.console import Console
from rich.table import Table

from activebayes_cli._app import CliError
from activebayes_cli._context import state

app = typer.Typer()

DEMO_FILES = ("demo.db", "demo.db-wal", "demo.db-shm", "digits.npz", "learning-curve.png")


@dataclass(frozen=True)
class DemoConfig:
    """How much work the demo does; `fast` is a quick look, the default a fuller picture."""

    rounds: int  # acquisition rounds after the cold start
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
        return cls(rounds=3, epochs=150, samples=10, repeats=1, span_trials=8) if fast else cls(rounds=7)


STRATEGIES = (("bald", "MC dropout + BALD"), ("random", "MC dropout + random"))


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


def run_strategy(
    store: Any, name: str, digits: Path, acquisition: str, config: DemoConfig, *, seed: int, device: str, tick: Any
) -> list[tuple[int, float]]:
    """One project: cold start of `config.initial` random labels, then `config.rounds` rounds.
    Returns [(labelled items, test accuracy)] per fitted round."""
    from activebayes.data import DIGITS_CLASSES
    from activebayes.loop import ActiveLearningLoop, load_project_data
    from activebayes.nets import mlp
    from activebayes.posteriors import resolve_posterior
    from activebayes_cli.pool import register_pool
    from activebayes_cli.round_ import truth_oracle

    store.create_project(name, task="classification", classes=DIGITS_CLASSES)
    # pixels stay in [0, 1]: per-pixel standardisation blows up the rarely-inked border pixels
    register_pool(store, name, digits, test_fraction=config.test_fraction, seed=seed, standardize=False)
    data = load_project_data(store, name)
    oracle = truth_oracle(store, name, data)
    posterior = functools.partial(
        resolve_posterior("mc-dropout"), mlp(64, 10, hidden=config.hidden), n_samples=config.samples,
        epochs=config.epochs, lr=config.lr, device=device,
    )  # fmt: skip
    common = dict(seed=seed, device=device, posterior_name="mc-dropout", who="simulated", data=data)
    settings = {"n_samples": config.samples, "epochs": config.epochs, "lr": config.lr, "hidden": list(config.hidden)}
    cold = ActiveLearningLoop(posterior, acquisition, store, name, oracle, batch_size=config.initial,
                              posterior_settings=settings, **common)  # fmt: skip
    cold.step()  # no labels yet: `initial` uniformly random queries (the same for both strategies)
    tick()
    loop = ActiveLearningLoop(posterior, acquisition, store, name, oracle, batch_size=config.k,
                              posterior_settings=settings, **common)  # fmt: skip
    for _ in range(config.rounds):
        loop.step()
        tick()
    return [(r.labelled_count, float(r.metrics["accuracy"])) for r in store.rounds(name) if "accuracy" in r.metrics]


def mean_curve(runs: list[list[tuple[int, float]]]) -> list[tuple[int, float]]:
    """The mean metric at each number of labels over repeated studies (points all runs share)."""
    shared = set.intersection(*({n for n, _ in run} for run in runs)) if runs else set()
    return [(n, sum(dict(run)[n] for run in runs) / len(runs)) for n in sorted(shared)]


def accuracy_table(curves: dict[str, list[tuple[int, float]]], repeats: int) -> Table:
    studies = f"mean of {repeats} studies" if repeats > 1 else "one study"
    table = Table(title=f"digits: test accuracy against labels (MC dropout, simulated oracle, {studies})")
    table.add_column("labels", justify="right")
    for label in curves:
        table.add_column(label, justify="right")
    by_label = [dict(points) for points in curves.values()]
    for n in sorted({n for points in curves.values() for n, _ in points}):
        table.add_row(str(n), *[f"{d[n]:.3f}" if n in d else "" for d in by_label])
    return table


@app.command("demo")
def demo(
    ctx: typer.Context,
    fast: Annotated[bool, typer.Option("--fast", help="Fewer rounds, epochs and samples (about 20 s).")] = False,
    out: Annotated[Optional[Path], typer.Option("--out", help="Keep the database, data and plot in this folder (default: a new temp folder).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the split, the cold start and every round.")] = 0,
    device: Annotated[str, typer.Option("--device", help="auto (CUDA when present), cpu or cuda.")] = "auto",
) -> None:
    """Run the main job end to end: BALD against random on the digits, then the memory-span design."""
    from activebayes._device import resolve_device

    st = state(ctx)
    resolve_device(device)  # a bad --device fails before anything is written
    config = DemoConfig.choose(fast)
    threads = torch.get_num_threads()
    if "OMP_NUM_THREADS" not in os.environ:
        # The demo's networks are tiny: one intra-op thread is as fast on an idle machine and
        # several times faster on a busy one (measured on 2 shared cores: 17 s vs 61 s, --fast).
        torch.set_num_threads(1)
    try:
        _run_demo(st, config, out, seed, device)
    finally:
        torch.set_num_threads(threads)


def _run_demo(st: Any, config: DemoConfig, out: Path | None, seed: int, device: str) -> None:
    from activebayes.data import write_digits
    from activebayes.report import plot_learning_curves
    from activebayes.store import PoolStore

    folder = prepare_folder(out)
    started = time.perf_counter()
    digits = write_digits(folder / "digits.npz")
    db = folder / "demo.db"
    st.out.note(f"demo folder: {folder} (database {db.name}, pool {digits.name})")
    runs: dict[str, list[list[tuple[int, float]]]] = {label: [] for _, label in STRATEGIES}
    with PoolStore(f"sqlite:///{db}") as store:
        total = config.repeats * len(STRATEGIES) * (1 + config.rounds)
        with st.out.progress("active learning on the digits", total=total) as advance:
            done = 0
            for repeat in range(config.repeats):
                for acquisition, label in STRATEGIES:

                    def tick(text: str = f"{label}, study {repeat + 1}/{config.repeats}") -> None:
                        nonlocal done
                        done += 1
                        advance(done, None, text)

                    runs[label].append(
                        run_strategy(
                            store, f"digits-{acquisition}-{repeat + 1}", digits, acquisition, config,
                            seed=seed + repeat, device=device, tick=tick,
                        )  # fmt: skip
                    )
    curves = {label: mean_curve(points) for label, points in runs.items()}
    active_s = time.perf_counter() - started
    plot = plot_learning_curves(curves, folder / "learning-curve.png", title="digits: MC dropout, BALD vs random")

    if not st.out.json:
        st.out.console.print(accuracy_table(curves, config.repeats))
        st.out.console.print(f"learning curve: {plot}")
    from activebayes_cli.design import memory_span_demo

    console = st.out.console
    if st.out.json:  # stdout carries the JSON only: the span table goes to stderr (or nowhere)
        console = Console(file=io.StringIO()) if st.out.quiet else st.out.err
    trials = memory_span_demo(console, seed, trials=config.span_trials).trials
    span = {"trials": len(trials), "mean": float(trials[-1].mean), "sd": float(trials[-1].sd)}
    elapsed = time.perf_counter() - started
    summary = {
        "folder": str(folder),
        "database": f"sqlite:///{db}",
        "plot": str(plot),
        "curves": {label: [{"labels": n, "accuracy": a} for n, a in points] for label, points in curves.items()},
        "studies": config.repeats,
        "memory_span": span,
        "active_learning_s": round(active_s, 2),
        "total_s": round(elapsed, 2),
    }
    st.out.result(summary, lambda c: c.print(f"demo finished in {elapsed:.1f} s (active learning {active_s:.1f} s); files in {folder}"))

