"""`activebayes round`: fit on the labelled items, score the pool, record and show the queries.

One call runs one round of `activebayes.loop.ActiveLearningLoop`:

* Before a round is created, the model and the posterior are checked on two items (the
  network's output shape and class count, a dropout layer for mc-dropout, a one-epoch trial fit
  scored by the acquisition): a mistake there leaves the database unchanged. A failure later,
  while fitting or scoring the pool, is recorded as a failed round (its reason in `status`).
* A round with no labels yet has no posterior to score with: `--first random` asks for K
  uniformly random items (seeded), `--first typical` for the most typical item of each of K
  clusters of the pool (TypiClust); the recorded scores are 0. `--first auto` (the default) takes
  TypiClust's batch in every round that keeps the labels within two a class (the first on 5-9
  classes with K = 10, the first two on 10), uniform otherwise (`activebayes._selection`). With
  `--cover-classes`, later rounds draw uniformly while a class has no label (under 5 labels a class).
* With no --acquisition, a round uses the default of its task (`_model.DEFAULT_ACQUISITION`,
  chosen on the real-data benchmark in studies/benchmark). `--acquisition auto` lets a bandit
  choose among strategies each round, with a random share of each batch to check the choice
  (`activebayes.acquisition.auto`); `status` shows the choice.
* With `--oracle human` (default) the round stops in "queried": the chosen items are printed and
  written to `<project>-round-<N>.csv` (or --csv PATH), one row per query: key, label (empty:
  fill it in), score, rank, then the item's features under their own names, or for an image
  pool the path of a PNG of the item (an image folder's: a copy of its file) written next to the
  CSV. Where the keys are an image folder's paths, which may name the class (`pool add FOLDER
  --truth`), the file and the queries table name each query by an opaque id instead
  (`_task_ids`: a `query` column, `r<round>-q<rank>-<check>`), the copies are named after it, and
  `label --from` maps it back; `--json` keeps the keys. An existing file is never
  overwritten (refused before anything is recorded; --force overwrites it). Then
  `activebayes label --from FILE`, or `activebayes label` to answer in the terminal.
* With `--oracle truth` the labels held back from the data file answer at once and the round ends.
* `--option KEY=VALUE` (repeatable) passes one of the posterior's own constructor options
  (its `options`: e.g. masks=independent for mc-dropout, predictive=analytic for mfvi, laplace
  or swag, warm_start=true for snapshot-ensemble); VALUE is a TOML literal, or a bare word taken
  as a string. Keys and values are checked before anything is recorded (one the CLI sets through
  its own flag, such as n_samples or epochs, is refused naming the flag), and the round records
  them in its posterior_settings under "options".
* A regression project (`init --task regression`) fits `--posterior gp` by default (a Gaussian
  process, no network; a network posterior once it fits float targets), takes the acquisitions
  variance, eig, bald, random, nipv, epig and power-epig, and records the test split's rmse and
  Gaussian nll. `--likelihood heteroscedastic` (mc-dropout, deep-ensemble, snapshot-ensemble,
  swag, laplace) builds the network with two outputs, the natural parameters of a Gaussian whose mean and
  variance both vary with x (`activebayes.likelihoods`); it is recorded with the round's options.
* `--acquisition epig` / `power-epig` score the candidates by what their labels tell about the
  predictions at target inputs: 1000 items drawn from the whole pool by default, or `--target
  FILE`, either a data file of inputs with the pool's columns (.csv read with the project's
  recorded feature encoding, .npz, .npy) or a .txt of item keys of the data file, one per line.
  A round started with --target is resumed only with a --target file (the same one, to repeat it).
* A round that was interrupted (killed while fitting or scoring) is resumed, never doubled, with
  the options it recorded (posterior and its settings, model, acquisition, k, seed); an option
  given explicitly that differs is refused. `--restart-round` instead marks the unfinished round
  failed ("discarded"; its queries and any answers stay recorded) and starts a new one.
  A round whose answers are all in is closed first, then a new one runs. A round waiting for
  answers whose round file is missing (killed after recording its queries, before the file was
  written; the file is written whole or not at all) gets its file written for the open queries.
* One `round` at a time per project: the call holds the project's round lock
  (`PoolStore.round_lock`) from before it reads the latest round until it exits; a second call
  meanwhile exits 2 with one line naming the running round and its process (pid, host, start).
  A lock left by a killed `round` is taken over by the next one, which says so.
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from activebayes_cli._app import INTERRUPTED, CliError, command_group
from activebayes_cli._context import check_device, state
from activebayes_cli._design_project import refuse_design
from activebayes_cli._model import DEFAULT_COVER_CLASSES
from activebayes_cli._options import Address, Device, Engine, EngineName, show_model_guess
from activebayes_cli._options import given as option_given
from activebayes_cli._output import early_round_note, round_csv_name
from activebayes_cli._round_options import RoundOptions, differences, recorded_options
from activebayes_cli._targets import check_targets
from activebayes_cli._queries_table import queries_table
from activebayes_cli._round_file import check_round_file, write_round_csv
from activebayes_cli._task_ids import query_ids

app = command_group()
ShowModelGuess = show_model_guess("in the round file and the queries table")


def stage_texts() -> dict[str, str]:
    """What the progress line says at each stage of the loop (`activebayes.loop.STAGES`)."""
    from activebayes.store import RoundStatus as S  # imported on use: the store is heavy

    return {
        S.started.value: "starting round", "fit": "fitting the posterior", S.fitted.value: "fitted",
        "score": "scoring the pool", S.scored.value: "queries recorded", "ask": "asking the oracle",
        S.answered.value: "answers recorded", S.done.value: "done",
    }  # fmt: skip


DISCARDED = "discarded by `activebayes round --restart-round`"


class FirstBatch(str, Enum):
    auto = "auto"
    typical = "typical"
    random = "random"


class OracleKind(str, Enum):
    human = "human"
    truth = "truth"


# ---- output ------------------------------------------------------------------------------------
def command(st: Any, *words: str) -> str:
    """The command line a hint suggests (with --project when the database holds several)."""
    suggest = getattr(st, "next_command", None)
    return suggest(*words) if suggest is not None else " ".join(["activebayes", *words])


# ---- the command -------------------------------------------------------------------------------
@app.command("round", short_help="Fit, score the pool, and write what to label next.")
def round_(
    ctx: typer.Context,
    posterior: Annotated[Optional[str], typer.Option("--posterior", help="mc-dropout (classification default), deep-ensemble, snapshot-ensemble, laplace, swag, mfvi, batch-ensemble; gp (regression default).", show_default=False)] = None,
    acquisition: Annotated[Optional[str], typer.Option("--acquisition", help="power-margin, margin, auto, epig, power-epig, bald, batch-bald, power-bald, entropy, variation-ratio, random, ...; regression: auto, epig, power-epig, variance, eig, bald, random, nipv (default: power-margin; regression: auto; the benchmark's choices, see README).", show_default=False)] = None,
    first: Annotated[Optional[FirstBatch], typer.Option("--first", help="The first batches: auto (default: TypiClust's typical items while the labels stay within two a class, else random), typical (TypiClust, first batch only) or random.", show_default=False)] = None,
    cover: Annotated[bool, typer.Option("--cover-classes", help="While a class has no label (and under 5 labels a class), draw uniformly at random: no acquisition can ask for a class the model has never seen (see README).")] = DEFAULT_COVER_CLASSES,
    k: Annotated[int, typer.Option("--k", help="Items to query this round.")] = 10,
    model: Annotated[str, typer.Option("--model", help="mlp, cnn, auto (each round, the MLP of highest Laplace evidence: 1x64, 2x64, 2x128, 1x256), pkg.module:factory or path/to/file.py:factory (a zero-argument callable returning an nn.Module).")] = "mlp",
    samples: Annotated[Optional[int], typer.Option("--samples", help="Posterior samples S (members for an ensemble); default: the posterior's own (mc-dropout 20, deep-ensemble 5, laplace 100, swag 30, ...).")] = None,
    epochs: Annotated[Optional[int], typer.Option("--epochs", help="Training epochs per fit; default: sized to the labels (at least 50 epochs and 500 optimiser steps).")] = None,
    device: Device = "auto",
    seed: Annotated[int, typer.Option("--seed", help="Study seed; round r uses a seed derived from (seed, r).")] = 0,
    oracle: Annotated[OracleKind, typer.Option("--oracle", help="human: write <project>-round-N.csv and wait; truth: the held-back labels answer a waiting round's open queries, else a new round's.")] = OracleKind.human,
    csv_path: Annotated[Optional[Path], typer.Option("--csv", help="Where to write the queries to label (default <project>-round-N.csv).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing round file.")] = False,
    restart_round: Annotated[bool, typer.Option("--restart-round", help="Discard an unfinished round (recorded as failed) and start a new one.")] = False,
    posterior_options: Annotated[Optional[list[str]], typer.Option(
        "--option", metavar="KEY=VALUE", show_default=False,
        help="One of the posterior's own constructor options, repeatable; VALUE is a TOML literal or a bare word, "
             "e.g. mfvi: predictive=analytic; mc-dropout: masks=independent; snapshot-ensemble: warm_start=true; "
             "laplace: prior_precision=100 --option hessian=diag.",
    )] = None,  # fmt: skip
    engine: Engine = EngineName.local,
    address: Address = None,
    target: Annotated[Optional[Path], typer.Option("--target", help="epig / power-epig: target inputs (.csv/.npz/.npy with the pool's columns, or a .txt of item keys, one per line); default: 1000 pool items.", show_default=False)] = None,
    likelihood: Annotated[Optional[str], typer.Option("--likelihood", help="Regression with a network posterior: gaussian (one output, one noise level; the default) or heteroscedastic (two outputs: the noise varies with x).", show_default=False)] = None,
    debias: Annotated[bool, typer.Option("--debias", help="Train on the LURE-weighted loss of the labels drawn by stochastic acquisitions (activebayes.debias).")] = False,
    show_model_guess: ShowModelGuess = False,
) -> None:
    """Fit on the labelled items, score the pool, record the round and show what to label next."""
    from activebayes.acquisition import resolve_acquisition
    from activebayes.errors import ActiveBayesError, RoundBusyError, StoreError
    from activebayes.data import load_project_data
    from activebayes.loop import ActiveLearningLoop, round_seed
    from activebayes_cli._model_auto import choice_text, round_model
    from activebayes.oracles import NoTruthError, truth_oracle
    from activebayes.store import RoundStatus, RoundStep
    from activebayes_cli._user_network import check_model_output
    from activebayes_cli._trial import check_posterior, check_regression_posterior
    from activebayes_cli._model import (
        NO_MODEL,
        check_acquisition_name,
        check_posterior_name,
        check_posterior_options,
        check_task_options,
        auto_arms, default_acquisition, default_first, default_posterior,
        likelihood_options,
        model_factory,
        network_outputs,
        normalize_model_spec,
        parse_posterior_options,
        posterior_factory,
    )

    st = state(ctx)
    if k < 1:
        raise CliError(f"--k: expected a positive number of queries, got {k}", "pass e.g. --k 10")
    for option, value in (("--samples", samples), ("--epochs", epochs)):
        if value is not None and value < 1:
            raise CliError(f"{option}: expected a positive integer, got {value}", f"pass e.g. {option} 10")
    option_values = parse_posterior_options(posterior_options or [])
    if csv_path is not None and not csv_path.parent.exists():
        raise CliError(f"--csv: the folder {csv_path.parent} does not exist", "create it or choose another path")
    check_device(device)
    from activebayes.distributed import check_engine_store

    check_engine_store(engine.value, address, st.db)  # a cluster cannot share a SQLite file: before anything is written
    if acquisition is not None:
        check_acquisition_name(acquisition)  # an unknown name is refused before the database is opened
    model_spec = normalize_model_spec(model)
    store = st.store(upgrade=True)  # writes: an older schema is upgraded first
    name = st.project_name()
    info = store.project(name)
    refuse_design(st, name, info, "round")
    if info.data_path is None or store.count_items(name, split="pool") == 0:
        raise CliError(f"project {name!r} has no data yet", "add a pool first with `activebayes pool add FILE`")
    try:  # held until this command exits (released by its context), before the latest round is read
        lock = ctx.with_resource(store.round_lock(name))
    except RoundBusyError as exc:
        what = str(exc).partition("; ")[0]
        raise CliError(what, f"wait for it to finish, then run `{command(st, 'round')}` again (a lock left by a killed process is taken over)") from exc
    if lock.taken_over is not None:
        st.out.note(f"took over the round lock of project {name!r} left by {lock.taken_over.text()} ({lock.stale_reason})")
    posterior = posterior or default_posterior(info.task)
    acquisition_name = resolve_acquisition(acquisition or default_acquisition(info.task, option_values)).name
    check_posterior_name(posterior, info.task)
    if posterior == "gp":
        if option_given(ctx, "model"):
            raise CliError("--model: the gp posterior has no network", "leave --model out, or pass a network --posterior such as mc-dropout")
        model_spec = NO_MODEL
    option_values = likelihood_options(likelihood, info.task, posterior, option_values)
    call = RoundOptions(posterior, model_spec, samples, epochs, acquisition_name, k, options=option_values)
    data = load_project_data(store, name)
    answerer = None
    if oracle is OracleKind.truth:  # the labels held back at `pool add` (the data file's, or --truth FILE's)
        try:
            answerer = truth_oracle(store, name, data)
        except NoTruthError as exc:
            raise CliError(
                f"--oracle truth: {exc}",
                "answer with `activebayes label` or `activebayes label --from FILE`; simulated answers need a project "
                "whose `pool add` was given the labels (a label column, or --truth FILE)",
            ) from exc

    # What this call continues: an unfinished round (resumed with its recorded options, or
    # discarded by --restart-round), a round whose answers are all in (closed), or nothing.
    latest = store.latest_round(name)
    pending = []
    if latest is not None and latest.status.waiting:
        pending = [q for q in store.queries(name, latest.number) if q.value is None]
    step = RoundStatus.next_step(latest.status if latest is not None else None, len(pending))
    unfinished, to_close = step is RoundStep.resume, step is RoundStep.close
    if restart_round and not unfinished:
        where = "it has no rounds yet" if latest is None else f"its latest round {latest.number} is {latest.status.value!r}"
        if to_close:
            where = f"round {latest.number} has all its answers; the next round closes it"
        raise CliError(f"--restart-round: project {name!r} has no unfinished round to discard ({where})", "leave --restart-round out")
    resuming = unfinished and not restart_round
    file_missing = False  # a waiting round without its round file: killed before writing it, so written now
    if resuming and pending and answerer is None:
        waiting_file = csv_path or Path(round_csv_name(name, latest.number))
        file_missing = not waiting_file.exists()
        if not file_missing:
            raise CliError(
                f"round {latest.number} still waits for {len(pending)} answer(s)",
                f"label them with `{command(st, 'label', '--from', str(waiting_file))}` or "
                f"`{command(st, 'label')}` (or pass --oracle truth, or --restart-round to discard the round)",
            )
    options = call
    if resuming:
        options = recorded_options(latest, call)
        changed = differences(ctx, call, options, seed, latest)
        if changed:
            raise CliError(
                f"round {latest.number} stopped while {latest.status.value!r} and is resumed with the options it was started with, "
                f"but this call asks for {', '.join(changed)}",
                "leave those options out to resume it, or pass --restart-round to discard it and start a new round",
            )
    elif store.count_candidates(name) == 0:
        if to_close:  # its answers are all in: closed as the loop closes one before a new round
            store.advance_round(name, latest.number, RoundStatus.answered)
            store.advance_round(name, latest.number, RoundStatus.done)
            st.out.result({"project": name, "round": latest.number, "status": "done", "closed": True, "candidates": 0},
                          lambda console: console.print(f"round {latest.number} is closed with all its answers; every pool item is "
                                                        f"labelled, so no new round starts. Next: {command(st, 'export', 'FILE')}"))  # fmt: skip
            return
        raise CliError(f"every pool item of project {name!r} is labelled; nothing is left to ask", "export them with `activebayes export FILE`")

    try:
        check_posterior_options(options.posterior, options.options)
    except CliError as exc:
        if not resuming or option_given(ctx, "posterior_options"):
            raise
        raise CliError(f"{exc.what} (an option round {latest.number} was started with)", f"{exc.fix}, or pass --restart-round to discard the round") from exc

    # Check the model and the posterior on two items before anything is recorded.
    regression = info.task == "regression"
    n_classes = len(info.classes or [])
    check_task_options(info.task, options.posterior, options.acquisition)
    acq = resolve_acquisition(options.acquisition)
    if acq.name == "auto":  # the trial fit checks the first strategy auto may choose
        trial_acq = resolve_acquisition(auto_arms(info.task, options.options)[0])
    else:
        trial_acq = acq
    target_x = check_targets(target, acq, info, data, latest if resuming else None)
    model_fn = None
    shown = options.model if resuming else model  # as typed; a file's path is recorded absolute
    if options.posterior != "gp":
        try:
            model_fn = model_factory(options.model, data.x.shape[1:], network_outputs(info.task, n_classes, options.options))
        except CliError as exc:
            if not resuming:
                raise
            raise CliError(f"{exc.what} (the model round {latest.number} was started with)", f"{exc.fix}, or pass --restart-round to discard the round") from exc
    if regression:
        check_regression_posterior(options.posterior, model_fn, data.x, trial_acq, device=device, spec=shown, options=options.options)
    else:
        check_model_output(model_fn, data.x, n_classes, shown)
        check_posterior(options.posterior, model_fn, data.x, n_classes, trial_acq, device=device, spec=shown, options=options.options)
    number = latest.number if resuming else (latest.number + 1 if latest is not None else 1)
    model_fn, choice = round_model(options, store, name, data, info, seed=round_seed(seed, number), device=device, model_fn=model_fn)
    factory, settings = posterior_factory(
        options.posterior, model_fn, samples=options.samples, epochs=options.epochs, device=device,
        labelled=store.count_labelled(name),  # the training sized to it is recorded
        options=options.options,
    )
    settings = {"model": options.model, **settings, **choice}  # choice: --model auto's (cli/_model_auto.py)

    target = csv_path or Path(round_csv_name(name, number))
    if answerer is None and not file_missing:  # a missing file's images are this round's own: rewritten
        check_round_file(target, info, data, force)

    n_candidates = store.count_candidates(name)
    if not resuming and options.k > n_candidates:
        st.out.note(f"--k {options.k} is more than the {n_candidates} unlabelled pool items: this round asks for all of them")
    bar = st.out.bar()
    tasks: dict[str, Any] = {"stage": None}
    stage_text = stage_texts()

    def hook(stage: str) -> None:
        tasks["stage"] = stage
        if bar is not None and "line" in tasks:
            bar.update(tasks["line"], description=stage_text.get(stage, stage))
            if stage == "score":
                bar.update(tasks["score"], visible=True)

    def on_scored(done: int, total: int) -> None:
        if bar is not None and "score" in tasks:
            bar.update(tasks["score"], completed=done, total=total)

    loop = ActiveLearningLoop(
        factory, options.acquisition, store, name, answerer, batch_size=options.k, seed=seed,
        device=device, n_samples=options.predict_samples, who="truth" if answerer is not None else None,
        posterior_name=options.posterior, posterior_settings=settings, hook=hook, progress=on_scored, data=data,
        engine=engine.value, address=address, target_x=target_x, first=(first.value if first is not None else default_first()),
        cover_classes=cover,
        auto_arms=auto_arms(info.task, options.options),
        debias=debias or bool(resuming and (latest.acquisition_settings or {}).get("debias")),
    )  # fmt: skip
    if restart_round:
        loop.discard(DISCARDED)
        st.out.note(f"discarded round {latest.number} (it stopped while {latest.status.value!r}); starting round {number}")
    elif to_close:
        loop.step()  # every answer is in: close that round, then run a new one
    if resuming and latest.status.waiting and pending:  # a person's round, answered now by the truth: nothing had stopped
        st.out.note(f"answering round {number}'s {len(pending)} open queries from the truth (--oracle truth) and closing it; "
                    f"`{command(st, 'round')}` then runs the next round")  # fmt: skip
    elif resuming:
        st.out.note(f"resuming round {number} (it stopped while {latest.status.value!r}) with its recorded options: {options.text()}")

    try:
        if bar is None:
            result = loop.step()
        else:
            with bar:
                tasks["line"] = bar.add_task(f"round of {options.posterior} + {options.acquisition}", total=None)
                tasks["score"] = bar.add_task(f"scoring {n_candidates} candidates", total=n_candidates, visible=False)
                result = loop.step()
    except KeyboardInterrupt:  # Ctrl-C: nothing recorded is lost; the round resumes where it stopped
        stage = stage_text.get(tasks["stage"] or "", "starting")
        print(f"interrupted: round {number} stopped while {stage}; `{command(st, 'round')}` resumes it "
              f"(`{command(st, 'round', '--restart-round')}` discards it)", file=sys.stderr, flush=True)  # fmt: skip
        raise typer.Exit(INTERRUPTED) from None
    except Exception as exc:
        failed = store.latest_round(name)
        if failed is None or failed.number != number or failed.status is not RoundStatus.failed:
            raise  # not this round's failure (e.g. a StoreError, a KeyboardInterrupt: resumable)
        stage = stage_text.get(tasks["stage"] or "", "running")
        if isinstance(exc, ActiveBayesError) and not isinstance(exc, StoreError):
            raise CliError(
                f"round {failed.number} failed while {stage} ({type(exc).__name__}: {exc}) and is recorded as failed",
                "fix the cause (see `activebayes status`) and run `activebayes round` again for a new round",
            ) from exc
        st.out.note(f"round {failed.number} failed while {stage} and is recorded as failed")
        raise
    queries = store.queries(name, result.number)
    rnd = store.latest_round(name)
    ids = query_ids(info, result.number, queries)  # keys that are image paths, which may name the class: opaque ids instead
    written = images = None
    if result.waiting:
        written = csv_path or Path(round_csv_name(name, result.number))
        images = write_round_csv(written, [q for q in queries if q.value is None], info, data, show_model_guess, ids)

    data_out = {
        "project": name,
        "round": result.number,
        "status": result.status,
        "resumed": resuming,
        "labelled": result.labelled,
        "metrics": result.metrics,
        "posterior": rnd.posterior,
        "posterior_settings": rnd.posterior_settings,
        "acquisition": rnd.acquisition,
        "k": options.k,
        "queries": [{"rank": q.rank + 1, "key": q.key, "score": q.score, "prediction": q.prediction, "label": q.value}
                    for q in queries],
        "csv": str(written) if written else None,
        "images": str(images) if images else None,
        "recorded": result.recorded,
    }

    from activebayes.data.number_style import project_writing

    def render(console) -> None:
        title = f"round {result.number}: {len(queries)} queries by {rnd.acquisition}{early_round_note(rnd.acquisition_settings)}"
        console.print(title)  # a line of its own: as the table's title, rich wraps it to the table's width
        console.print(queries_table(None, queries, info.task, project_writing(info.settings), show_model_guess, ids))
        if result.metrics:
            scalars = {k: v for k, v in result.metrics.items() if isinstance(v, (int, float, str))}  # not the packed stop set
            parts = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in scalars.items())
            console.print(f"fitted on {result.labelled} labels" + (f": {parts}" if parts else ""))
        if choice_text(rnd.posterior_settings):
            console.print(choice_text(rnd.posterior_settings))
        if written:
            pictures = f" (the items' images are in {images})" if images else ""
            console.print(
                f"Wrote {written}{pictures}: fill in the labels, then `{command(st, 'label', '--from', str(written))}` "
                f"(or `{command(st, 'label')}`)."
            )  # fmt: skip
        else:
            after = (f"Next: {command(st, 'round')}" if store.count_candidates(name) else
                     f"Every pool item is labelled now: `{command(st, 'export', 'labels.csv')}` writes them out")  # fmt: skip
            console.print(f"round {result.number} {result.status}: {result.recorded} answers recorded. {after}")

    st.out.result(data_out, render)
