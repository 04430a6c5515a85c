"""`activebayes evaluate`: active testing (Kossen, Farquhar, Gal & Rainforth, ICML 2021): labels
chosen to measure the model, and an unbiased estimate of its pool accuracy from them.

    activebayes evaluate --budget 50     propose 50 items to label for evaluation, written to
                                         <project>-eval.csv (key, label to fill in, q, rank, the
                                         model's prediction, features or image)
    activebayes label --from <project>-eval.csv
    activebayes evaluate                 the estimate with its 95 % interval

`--budget N` fits the posterior the latest round used (its recorded options) on the labels now,
predicts every unlabelled pool item, and draws N of them one at a time without replacement with
probability ∝ the model's expected loss on each (1 − max_c p(c | x); regression: the predictive
variance), mixed with a 10 % uniform share (`activebayes.active_testing`). The items drawn move
to the project's evaluation set (the "eval" split): kept apart from training (neither candidates
of a round nor training labels), because an item the model trained on no longer measures it; each
keeps its draw probability. `evaluate` then weighs the answered draws with LURE weights
(`activebayes.estimates`) into accuracy and NLL (regression: RMSE and Gaussian NLL) of the model
that drew them, and each later round records the estimate for its own model (`status` shows it).

A project holds one evaluation set. `--budget M` again extends it, while the pool is the one the
first draw saw (no item labelled for training, none withdrawn, since): M more items drawn one at a
time from the items left, each with its probability among those left at its turn, so the whole
set stays one sequential draw and its estimate unbiased (`activebayes.active_testing`). The model
is refitted on the labels (unchanged) and its predictions of every item of the set are recorded:
`evaluate` then estimates that model. The new items are written to `<project>-eval-2.csv` (-3,
...). Once the pool has changed, an extension is refused: the set's estimate stays valid for the
pool it was drawn from, and later rounds' models are still measured on it.

An image folder's file points at copies of the drawn images beside it; where its keys are the
images' paths, which may name the class (`pool add FOLDER --truth`), it names each item by an
opaque id in a `query` column instead (`_task_ids`: `e-q<n>-<check>`, n its place in the draw),
which `label --from` maps back; `--json` keeps the keys.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Annotated, Any, Optional

import typer

from activebayes_cli._app import CliError, command_group
from activebayes_cli._context import check_device, state
from activebayes_cli._design_project import refuse_design
from activebayes_cli._options import Device, show_model_guess

app = command_group()
ShowModelGuess = show_model_guess("in the evaluation file (with --budget)")


def eval_csv_name(project: str, part: int = 1) -> str:
    """The default file of the evaluation items: `<project>-eval.csv`, then `-eval-2.csv`, ... for
    the items of each extension."""
    from activebayes_cli._output import safe_name

    return f"{safe_name(project)}-eval{'' if part == 1 else f'-{part}'}.csv"


@app.command("evaluate", short_help="Items to label for an unbiased estimate, or the estimate.")
def evaluate(
    ctx: typer.Context,
    budget: Annotated[Optional[int], typer.Option("--budget", help="Propose this many pool items to label for evaluation (active testing).", show_default=False)] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the fit and of the draw.")] = 0,
    device: Device = "auto",
    csv_path: Annotated[Optional[Path], typer.Option("--csv", help="Where to write the items to label (default <project>-eval.csv).", show_default=False)] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
    show_model_guess: ShowModelGuess = False,
) -> None:
    """Propose items to label for an unbiased estimate of the model (--budget N), or show it."""
    if budget is None:
        for flag, given in (("--csv", csv_path is not None), ("--force", force), ("--show-model-guess", show_model_guess)):
            if given:
                raise CliError(f"{flag}: only applies with --budget N", f"add --budget N or leave {flag} out")
        _show(ctx)
        return
    if budget < 1:
        raise CliError(f"--budget: expected a positive number of items, got {budget}", "pass e.g. --budget 50")
    check_device(device)
    _propose(ctx, budget, seed, device, csv_path, force, show_model_guess)


def _propose(ctx: typer.Context, budget: int, seed: int, device: str, csv_path: Path | None, force: bool, show_guess: bool) -> None:
    from activebayes.active_testing import SETTINGS_KEY
    from activebayes.data import load_project_data
    from activebayes.loop import ActiveLearningLoop
    from activebayes_cli._round_options import RoundOptions, recorded_options
    from activebayes_cli._model import NO_MODEL, default_acquisition, default_posterior, model_factory, posterior_factory
    from activebayes_cli._round_file import check_round_file, write_round_csv
    from activebayes_cli._task_ids import query_ids

    st = state(ctx)
    store = st.store(upgrade=True)
    name = st.project_name()
    info = store.project(name)
    refuse_design(st, name, info, "evaluate")
    existing = (info.settings or {}).get(SETTINGS_KEY) or None
    rounds = store.rounds(name)
    fitted = [r for r in rounds if r.labelled_count > 0]
    if store.count_labelled(name) == 0 or not fitted:
        raise CliError(f"project {name!r} has no fitted model to evaluate yet", f"run `{st.next_command('round')}` and label its queries first")
    _check_latest_round(store, name, st)
    n_candidates = store.count_candidates(name)
    if budget > n_candidates:
        raise CliError(f"--budget: {budget} is more than the {n_candidates} unlabelled pool items", f"pass --budget {n_candidates} or fewer")
    if existing is not None:
        _check_extension(store, name, existing, st)
    target = csv_path or Path(eval_csv_name(name, 1 + len(existing.get("parts", [0])) if existing else 1))
    data = load_project_data(store, name)
    check_round_file(target, info, data, force)
    latest = fitted[-1]
    defaults = RoundOptions(default_posterior(info.task), "mlp", None, None, default_acquisition(info.task, {}), 1)
    options = recorded_options(latest, defaults)
    regression = info.task == "regression"
    model_fn = None
    if options.posterior != "gp" and options.model != NO_MODEL:
        model_fn = model_factory(options.model, data.x.shape[1:], 1 if regression else len(info.classes or []))
    factory, settings = posterior_factory(
        options.posterior, model_fn, samples=options.samples, epochs=options.epochs, device=device,
        labelled=store.count_labelled(name), options=options.options,
    )  # fmt: skip
    loop = ActiveLearningLoop(factory, "random", store, name, None, batch_size=1, seed=seed, device=device,
                              n_samples=options.predict_samples, posterior_name=options.posterior, data=data)  # fmt: skip
    proposal = loop.propose_evaluation(budget, seed, existing)
    before = len(existing["items"]) if existing else 0
    store.record_evaluation_set(name, proposal.item_ids, proposal.record, extends=before if existing else None)
    queries = [SimpleNamespace(key=k, row=int(r), score=float(q), rank=before + m, prediction=p)
               for m, (k, r, q, p) in enumerate(zip(proposal.keys, proposal.rows, proposal.probabilities, proposal.predictions))]  # fmt: skip
    ids = query_ids(info, None, queries)  # keys that are image paths, which may name the class: opaque ids instead
    write_round_csv(target, queries, info, data, show_guess, ids)  # the model's guess would pull the answers, and so the estimate, towards it
    summary = {"project": name, "budget": budget, "pool": proposal.record["pool"], "file": str(target),
               "posterior": options.posterior, "labelled": proposal.record["labelled"], "keys": proposal.keys,
               "items": len(proposal.record["items"]), "extended": bool(existing)}  # fmt: skip
    drew = (f"Drew {budget} more of the {proposal.record['pool']} items the evaluation set's draw started from ({before} drawn before, "
            f"{len(proposal.record['items'])} now; its estimate is now of {options.posterior} refitted on the same "
            f"{proposal.record['labelled']} labels)" if existing else
            f"Drew {budget} of {proposal.record['pool']} unlabelled items for evaluation ({options.posterior} fitted on "
            f"{proposal.record['labelled']} labels, proposal ∝ its expected loss)")  # fmt: skip
    st.out.result(summary, lambda c: c.print(
        f"{drew}; they are kept apart from training.\n"
        f"Label them in {target}, then: {st.next_command('label', '--from', str(target))} "
        f"and {st.next_command('evaluate')}"))  # fmt: skip


def _check_latest_round(store: Any, name: str, st: Any) -> None:
    """Refuse while the latest round is unfinished: asking (its open queries are pool items a draw
    could take) or stopped before asking (its resume asks items it chose already). A round with
    every answer in is fine: the next round only closes it (`RoundStatus.next_step`)."""
    from activebayes.store.latest_round import latest_round_state

    latest = latest_round_state(store, name)
    if latest.asking:
        number = latest.round.number
        raise CliError(f"round {number} still waits for {latest.open} of its {len(store.queries(name, number))} answers, "
                       "and its open queries are pool items an evaluation draw could take",
                       f"answer them with {st.answer_commands(name, number)}, then run evaluate again")  # fmt: skip
    if latest.stopped:
        raise CliError(f"round {latest.round.number} stopped while {latest.round.status.value!r} and has not asked its queries yet",
                       f"run `{st.next_command('round')}` to resume it (or `{st.next_command('round', '--restart-round')}` "
                       "to discard it), then run evaluate again")  # fmt: skip


def _check_extension(store: Any, name: str, record: Any, st: Any) -> None:
    """Refuse to extend the evaluation set once the pool differs from the one its draw saw."""
    from activebayes.active_testing import EVAL_SPLIT, same_population

    problem = same_population(record, store.candidates(name)[0], store.items(name, split=EVAL_SPLIT)[0])
    if problem is not None:
        raise CliError(f"project {name!r} already has an evaluation set of {len(record['items'])} items, and more cannot be drawn: "
                       f"{problem}, so new draws would not continue one draw from one pool",
                       f"run `{st.next_command('evaluate')}` for its estimate (later rounds' models are measured on it too)")  # fmt: skip


def _show(ctx: typer.Context) -> None:
    from activebayes.active_testing import SETTINGS_KEY
    from activebayes.round_estimates import RANGES, figure_attribute, nearest_possible
    from activebayes_cli._estimates import SHOWN, estimate_fields, evaluation_estimate_of, figure_text, interval_text, triple_text

    st = state(ctx)
    store = st.store()
    name = st.project_name()
    info = store.project(name)
    refuse_design(st, name, info, "evaluate")
    record = (info.settings or {}).get(SETTINGS_KEY)
    if not record:
        raise CliError(f"project {name!r} has no evaluation set", f"propose one with `{st.next_command('evaluate', '--budget', '50')}`")
    estimate = evaluation_estimate_of(store, name, info)
    latest = next((r for r in reversed(store.rounds(name)) if isinstance((r.metrics or {}).get("active_testing"), dict)), None)
    main = "accuracy" if info.task == "classification" else "rmse"
    data: dict[str, Any] = {"project": name, "items": len(record["items"]), "pool": record["pool"], "drawn_with_labels": record["labelled"],
                            "estimate": estimate_fields(estimate)}  # fmt: skip
    recorded: dict[str, Any] = {}  # the latest round's recorded figures ([unbiased, low, high]), in range as status shows them
    if latest is not None:
        recorded = dict(latest.metrics["active_testing"])
        triples = {k: v for k, v in recorded.items() if k in ("accuracy", "rmse", "nll") and isinstance(v, list) and len(v) == 3}
        bounds = {k: RANGES[figure_attribute(k, info.task)] for k in triples}
        data["latest_round"] = {"round": latest.number, "labelled": latest.labelled_count, **recorded,
                                **{k: [nearest_possible(v[0], bounds[k]), v[1], v[2]] for k, v in triples.items()},
                                "unbiased": {k: v[0] for k, v in triples.items()},
                                **({f"test_{main}": latest.metrics[main]} if main in latest.metrics else {})}  # fmt: skip

    def render(console: Any) -> None:
        console.print(f"evaluation set of {name}: {len(record['items'])} items drawn from a pool of {record['pool']} "
                      f"by the model fitted on {record['labelled']} labels")  # fmt: skip
        if not estimate.available:
            console.print(estimate.reason or "")
            return
        figure, nll = (interval_text(getattr(estimate, a), RANGES[a]) for a in SHOWN.get(info.task, SHOWN["classification"]))
        note = f"; {estimate.note}" if estimate.note else ""
        console.print(f"that model ({estimate.labels} labels answered{note}): {main} {figure}, nll {nll} (95 % intervals)")
        if latest is not None:
            triple = recorded.get(main, [])
            shown = f"{main} {triple_text(*triple, RANGES[figure_attribute(main, info.task)]) if len(triple) == 3 else '-'}"
            test = f"; test split {main} {figure_text(latest.metrics[main])}" if isinstance(latest.metrics.get(main), (int, float)) else ""
            console.print(f"round {latest.number}'s model ({latest.labelled_count} labels): {shown}{test}")

    st.out.result(data, render)
