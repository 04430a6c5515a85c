"""`activebayes round`: fit on the labelled items, score the pool, record and show the queries.

One call runs one round of `activebayes.loop.ActiveLearningLoop`:

* A round with no labels yet picks K candidates uniformly at random (seeded; the loop's cold
  start, its recorded scores are 0) — there is no posterior to score with.
* With `--oracle human` (default) the round stops in "queried": the chosen keys are printed and
  written to `round-N.csv` (columns key,label; fill in the labels and run `activebayes label
  --from round-N.csv`, or `activebayes label` to answer in the terminal).
* With `--oracle truth` the labels held back from the data file answer at once and the round ends.
* A round that was interrupted (killed while fitting or scoring) is resumed, never doubled; a
  round whose answers are all in is closed first, then a new one runs.
"""

from __future__ import annotations

import csv
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.table import Table

from activebayes_cli._app import CliError
from activebayes_cli._context import state

app = typer.Typer()

STAGE_TEXT = {
    "started": "starting round",
    "fit": "fitting the posterior",
    "fitted": "fitted",
    "score": "scoring the pool",
    "scored": "queries recorded",
    "ask": "asking the oracle",
    "answered": "answers recorded",
    "done": "done",
}


class OracleKind(str, Enum):
    human = "human"
    truth = "truth"


def truth_oracle(store: Any, name: str, data: Any) -> Any:
    """A SimulatedOracle answering from the labels held back at `pool add` (the data file's
    labels, or its --truth file, checked against its recorded sha256)."""
    from activebayes.data import sha256_file
    from activebayes.errors import DataError
    from activebayes.oracles import SimulatedOracle
    from activebayes_cli.pool import label_text, truth_labels

    keys = data.keys if data.keys is not None else [str(i) for i in range(len(data))]
    settings = store.project(name).settings
    if data.y is not None:
        return SimulatedOracle({k: label_text(v) for k, v in zip(keys, data.y.tolist())})
    if settings.get("truth_path"):
        path = Path(settings["truth_path"])
        if not path.is_file() or sha256_file(path) != settings.get("truth_sha256"):
            raise DataError(f"truth file {str(path)!r} of project {name!r} is missing or changed since `pool add`; restore it")
        return SimulatedOracle(dict(zip(keys, truth_labels(path, keys, None))))
    raise CliError(
        f"--oracle truth: project {name!r} has no held-back truth (its data file has no labels)",
        "answer with `activebayes label`, or use a data file with a label column (or pool add --truth FILE)",
    )


def write_round_csv(path: Path, keys: list[str]) -> None:
    """The form a person fills in: a header `key,label` and one row per query, label empty."""
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["key", "label"])
        writer.writerows([[key, ""] for key in keys])


def queries_table(title: str, queries: list[Any], acquisition: str) -> Table:
    table = Table(title=title)
    table.add_column("rank", justify="right")
    table.add_column("key", overflow="fold")
    table.add_column("score", justify="right")
    table.add_column("label")
    for q in queries:
        table.add_row(str(q.rank + 1), q.key, f"{q.score:.4f}", q.value if q.value is not None else "")
    return table


def check_model_output(model_fn: Any, x: Any, n_classes: int, spec: str) -> None:
    """Build the network once and run two items through it: logits [2, C] expected."""
    import numpy as np
    import torch

    try:
        with torch.no_grad():
            out = model_fn().eval()(torch.from_numpy(np.ascontiguousarray(x[:2])).float())
    except Exception as exc:  # the user's network or a shape mismatch: one line
        raise CliError(
            f"--model {spec}: a forward pass on items of shape {tuple(x.shape[1:])} failed ({type(exc).__name__}: {exc})",
            "make the network accept the data's shape (for cnn: images [1, H, W], see pool add --image-layout)",
        ) from exc
    if tuple(out.shape) != (min(2, x.shape[0]), n_classes):
        raise CliError(
            f"--model {spec}: expected logits [N, {n_classes}] for the project's {n_classes} classes, got {tuple(out.shape)}",
            f"make the network output {n_classes} values per item",
        )


@app.command("round")
def round_(
    ctx: typer.Context,
    posterior: Annotated[str, typer.Option("--posterior", help="mc-dropout, deep-ensemble, snapshot-ensemble, laplace, swag.")] = "mc-dropout",
    acquisition: Annotated[str, typer.Option("--acquisition", help="bald, batch-bald, entropy, variation-ratio, random, ...")] = "bald",
    k: Annotated[int, typer.Option("--k", help="Items to query this round.")] = 10,
    model: Annotated[str, typer.Option("--model", help="mlp, cnn, or pkg.mod:factory (a zero-argument callable returning an nn.Module).")] = "mlp",
    samples: Annotated[Optional[int], typer.Option("--samples", help="Posterior samples S (members for an ensemble).")] = None,
    epochs: Annotated[Optional[int], typer.Option("--epochs", help="Training epochs per fit.")] = None,
    device: Annotated[str, typer.Option("--device", help="auto (CUDA when present), cpu or cuda.")] = "auto",
    seed: Annotated[int, typer.Option("--seed", help="Study seed; round r uses a seed derived from (seed, r).")] = 0,
    oracle: Annotated[OracleKind, typer.Option("--oracle", help="human: write round-N.csv and wait; truth: the held-back labels answer.")] = OracleKind.human,
    csv_path: Annotated[Optional[Path], typer.Option("--csv", help="Where to write the queries to label (default round-N.csv).")] = None,
) -> None:
    """Fit on the labelled items, score the pool, record the round and show what to label next."""
    from activebayes.acquisition import resolve_acquisition
    from activebayes.loop import ActiveLearningLoop, load_project_data
    from activebayes_cli._model import model_factory, posterior_factory

    st = state(ctx)
    if k < 1:
        raise CliError(f"--k: expected a positive number of queries, got {k}", "pass e.g. --k 10")
    for option, value in (("--samples", samples), ("--epochs", epochs)):
        if value is not None and value < 1:
            raise CliError(f"{option}: expected a positive integer, got {value}", f"pass e.g. {option} 10")
    if csv_path is not None and not csv_path.parent.exists():
        raise CliError(f"--csv: the folder {csv_path.parent} does not exist", "create it or choose another path")
    store = st.store()
    name = st.project_name()
    info = store.project(name)
    if info.data_path is None or store.count_items(name, split="pool") == 0:
        raise CliError(f"project {name!r} has no data yet", "add a pool first with `activebayes pool add FILE`")
    if info.task != "classification":
        raise CliError(f"project {name!r} is a {info.task} project", "`activebayes round` runs classification projects")
    resolve_acquisition(acquisition)  # an unknown name fails here, before anything is written
    data = load_project_data(store, name)
    n_classes = len(info.classes or [])
    model_fn = model_factory(model, data.x.shape[1:], n_classes)
    check_model_output(model_fn, data.x, n_classes, model)
    factory, settings = posterior_factory(posterior, model_fn, samples=samples, epochs=epochs, device=device)
    answerer = truth_oracle(store, name, data) if oracle is OracleKind.truth else None

    latest = store.latest_round(name)
    pending = []
    if latest is not None and latest.status == "queried":
        pending = [q for q in store.queries(name, latest.number) if q.value is None]
        if pending and answerer is None:
            raise CliError(
                f"round {latest.number} still waits for {len(pending)} answer(s)",
                f"label them with `activebayes label --from round-{latest.number}.csv` or `activebayes label` "
                "(or pass --oracle truth)",
            )
    interrupted = latest is not None and latest.status in ("started", "fitted", "scored")
    if not interrupted and not pending and store.count_candidates(name) == 0:
        raise CliError(f"every pool item of project {name!r} is labelled; nothing is left to ask", "export them with `activebayes export FILE`")

    n_candidates = store.count_candidates(name)
    bar = st.out.bar()
    tasks: dict[str, Any] = {"stage": None}

    def hook(stage: str) -> None:
        tasks["stage"] = stage
        if bar is not None and "line" in tasks:
            bar.update(tasks["line"], description=STAGE_TEXT.get(stage, stage))
            if stage == "score":
                bar.update(tasks["score"], visible=True)

    def on_scored(done: int, total: int) -> None:
        if bar is not None and "score" in tasks:
            bar.update(tasks["score"], completed=done, total=total)

    loop = ActiveLearningLoop(
        factory, acquisition, store, name, answerer, batch_size=k, seed=seed,
        device=device, who="truth" if answerer is not None else None, posterior_name=posterior,
        posterior_settings=settings, hook=hook, progress=on_scored, data=data,
    )  # fmt: skip
    if latest is not None and (latest.status == "answered" or (latest.status == "queried" and not pending)):
        loop.step()  # every answer is in: close that round, then run a new one
        latest = store.latest_round(name)
    if interrupted or pending:
        st.out.note(f"resuming round {latest.number} (it stopped while {latest.status!r})")

    if bar is None:
        result = loop.step()
    else:
        with bar:
            tasks["line"] = bar.add_task(f"round of {posterior} + {acquisition}", total=None)
            tasks["score"] = bar.add_task(f"scoring {n_candidates} candidates", total=n_candidates, visible=False)
            result = loop.step()
    queries = store.queries(name, result.number)
    rnd = store.latest_round(name)
    written = None
    if result.waiting:
        written = csv_path or Path(f"round-{result.number}.csv")
        write_round_csv(written, [q.key for q in queries if q.value is None])

    data_out = {
        "project": name,
        "round": result.number,
        "status": result.status,
        "labelled": result.labelled,
        "metrics": result.metrics,
        "posterior": posterior,
        "acquisition": rnd.acquisition,
        "queries": [{"rank": q.rank + 1, "key": q.key, "score": q.score, "label": q.value} for q in queries],
        "csv": str(written) if written else None,
        "recorded": result.recorded,
    }

    def render(console) -> None:
        first = " (no labels yet: a random first batch)" if result.labelled == 0 else ""
        title = f"round {result.number}: {len(queries)} queries by {rnd.acquisition}{first}"
        console.print(queries_table(title, queries, rnd.acquisition))
        if result.metrics:
            parts = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in result.metrics.items())
            console.print(f"fitted on {result.labelled} labels: {parts}")
        if written:
            console.print(f"Wrote {written}: fill in the labels, then `activebayes label --from {written}` (or `activebayes label`).")
        else:
            console.print(f"round {result.number} {result.status}: {result.recorded} answers recorded. Next: activebayes round")

    st.out.result(data_out, render)
