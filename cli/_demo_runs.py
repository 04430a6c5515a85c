"""The active-learning part of `activebayes demo`: the CLI's defaults against random on the digits.

Each arm × seed is what a user of `pool add` + `round --oracle truth` gets (the pattern of
`run_one` in studies/benchmark/run.py): a project in the demo's study.db, the digits imported by
`register_pool` (test split 0.3, split seed = the seed), the model and posterior of a round that
names none (`--model mlp`, `default_posterior`, the training sized to the labels) and rounds of k
items answered by the held-back truth. The default arm takes `default_acquisition` and
`default_first` and `DEFAULT_COVER_CLASSES`; random is uniform throughout (its first batch too).
Arms with the same seed share the split and the rounds' seeds, so the comparison is paired.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from activebayes.atomic_files import write_json_atomic
from activebayes.figures import save_png

TASK = "classification"
TEST_FRACTION = 0.3
RANDOM_LABEL = "random"


@dataclass(frozen=True)
class Arm:
    """One strategy: a short key (project names `<key>-s<seed>`), its label and its loop options."""

    key: str
    label: str
    acquisition: str
    first: str
    cover: bool = False  # the loop's cover_classes


def demo_arms() -> tuple[Arm, Arm]:
    """The default (named after what `activebayes round` picks today) and random."""
    from activebayes_cli._model import DEFAULT_COVER_CLASSES, default_acquisition, default_first

    acquisition, first, cover = default_acquisition(TASK), default_first(), DEFAULT_COVER_CLASSES
    covered = ", uniform while a class is unlabelled" if cover else ""
    batches = "typical items while ≤ 2 labels a class" if first == "auto" else f"first batch: {first}"
    default = Arm("default", f"default ({acquisition}, {batches}{covered})", acquisition, first, cover)
    return default, Arm("random", RANDOM_LABEL, "random", "random")


def steps_per_run(max_labels: int, k: int) -> int:
    """loop.step() calls of one run: the cold start, then one per fit on k, 2k, ..., max_labels."""
    return max_labels // k + 1


def run_arm(store: Any, digits: Path, folder: Path, arm: Arm, seed: int, *, k: int, max_labels: int,
            device: str, step: Callable[[], None] | None = None) -> dict[str, Any]:  # fmt: skip
    """One run: a new project `<arm>-s<seed>`, its pool, rounds until a round has been fitted
    on `max_labels` labels. Returns {"project", "curve": [{"labels", "accuracy", "seconds"}], ...}."""
    from activebayes.data import load_project_data
    from activebayes.loop import ActiveLearningLoop
    from activebayes.oracles import truth_oracle
    from activebayes_cli._model import default_posterior, model_factory, posterior_factory
    from activebayes_cli._pool_import import register_pool

    project = f"{arm.key}-s{seed}"
    started = time.perf_counter()
    store.create_project(project, task=TASK, classes_from_data=True)
    register_pool(store, project, digits, test_fraction=TEST_FRACTION, seed=seed, text_folder=folder / "text-models")
    info = store.project(project)
    data = load_project_data(store, project)
    posterior = default_posterior(TASK)
    model_fn = model_factory("mlp", data.x.shape[1:], len(info.classes))
    factory, settings = posterior_factory(posterior, model_fn, samples=None, epochs=None, device=device)
    loop = ActiveLearningLoop(
        factory, arm.acquisition, store, project, truth_oracle(store, project, data), batch_size=k, seed=seed,
        device=device, who="truth", posterior_name=posterior, posterior_settings={"model": "mlp", **settings},
        data=data, first=arm.first, cover_classes=arm.cover,
    )  # fmt: skip
    curve: list[dict[str, Any]] = []
    while (labelled := store.count_labelled(project)) <= max_labels:
        t0 = time.perf_counter()
        result = loop.step()
        if step is not None:
            step()
        if labelled:  # the cold start fits nothing
            curve.append({"labels": labelled, "accuracy": float(result.metrics["accuracy"]), "seconds": round(time.perf_counter() - t0, 3)})
    return {"project": project, "arm": arm.key, "seed": seed, "posterior": posterior, "model": "mlp", "curve": curve,
            "seconds": round(time.perf_counter() - started, 2)}  # fmt: skip


def summarise(runs: Sequence[dict[str, Any]]) -> list[dict[str, float]]:
    """Mean and sd (ddof=1; 0 for one run) of the accuracy at each label count all runs reached."""
    from activebayes.study import summarise_curves

    return summarise_curves([[(p["labels"], p["accuracy"]) for p in run["curve"]] for run in runs])


def compare(default: Sequence[dict[str, Any]], random: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The default's mean accuracy minus random's: averaged over the label counts both reached,
    and at the last of them (None when they share none)."""
    by_labels = {p["labels"]: p["mean"] for p in random}
    shared = [(p["labels"], p["mean"] - by_labels[p["labels"]]) for p in default if p["labels"] in by_labels]
    if not shared:
        return None
    gaps = [gap for _, gap in shared]
    return {"first_labels": shared[0][0], "last_labels": shared[-1][0], "mean": sum(gaps) / len(gaps), "last": gaps[-1]}


def _gap(gap: float, against: str) -> str:
    """'0.021 above random', '0.004 below random' or 'level with random' (`against` = ' random'),
    and without the name when `against` is ''."""
    if round(abs(gap), 3) == 0:
        return f"level{' with' + against if against else ''}"
    return f"{abs(gap):.3f} {'above' if gap > 0 else 'below'}{against}"


def standing(diff: dict[str, Any] | None, seeds: int) -> str:
    """One plain line on where the default stands against random; below random is said as such."""
    if diff is None:
        return "the default and random share no label count: no comparison"
    mean, last = diff["mean"], diff["last"]
    where = "one seed" if seeds == 1 else f"mean of {seeds} seeds"
    text = (f"the default is {_gap(mean, ' random')} on average over {diff['first_labels']}–{diff['last_labels']} labels "
            f"({_gap(last, '')} at {diff['last_labels']}; test accuracy, {where})")  # fmt: skip
    if round(mean, 3) < 0:
        text += ": random did better on these digits"
    return text


def plot_curves(curves: dict[str, list[dict[str, float]]], path: Path, title: str) -> Path:
    """Mean ± sd band per arm against the number of labels, as a PNG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.4, 4.2), dpi=110, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    for label, points in curves.items():
        if not points:
            continue
        xs = [p["labels"] for p in points]
        mean = [p["mean"] for p in points]
        (line,) = axes.plot(xs, mean, marker="o", markersize=3.5, linewidth=1.6, label=label)
        low = [p["mean"] - p["sd"] for p in points]
        high = [p["mean"] + p["sd"] for p in points]
        axes.fill_between(xs, low, high, color=line.get_color(), alpha=0.2, linewidth=0)
    axes.set_xlabel("labelled items")
    axes.set_ylabel("test accuracy")
    axes.grid(True, alpha=0.3)
    axes.legend()
    axes.set_title(title)
    return save_png(figure, path)


def write_results(path: Path, document: dict[str, Any]) -> Path:
    return write_json_atomic(path, document)
