"""`activebayes label`: record a person's answers, from a CSV file or typed in the terminal.

`--from FILE` reads key,label rows (FileOracle: a header `key`/`id`/`item` + `label`/`answer`/
`class` or none, `,` `;` or tab, a UTF-8 byte-order mark, `3.0` for class 3; other columns are
ignored). It also reads Label Studio's JSON and JSON-MIN exports (a `.json` file; tasks written by `activebayes
export --format label-studio`, then annotated): the key is each task's data["activebayes_key"],
or for an image folder keyed by its paths the item its opaque data["activebayes_query"] names
(`_task_ids.resolver`; an id no query of the project has is refused), the label the choice of its latest annotation not cancelled; a task without one is skipped
and counted, and the items whose annotators disagree are named (`label_studio.disputes`). Such a project's round and evaluation files name their items by those ids in a
`query` column, read back the same way. The whole file is checked before anything is written, and then one transaction
records it all:

* answers to the waiting round's queries (or --round N's) are recorded for that round; any other
  pool item is recorded outside a round and counted apart in the summary, as are the evaluation
  items `activebayes evaluate --budget N` drew (the "eval" split);
* a test-split item is refused unless --test (its labels measure the model);
* a label that differs from the item's current one is refused unless --relabel (the same label
  again is harmless and records nothing);
* either refusal fails the whole file, naming the first offending items and their lines (each
  as the file names it: its key, or the opaque id a path-keyed folder's file gave it);
* files recorded at once by several sessions end as if recorded one after another: a row whose
  label another session gave meanwhile is a repeat, one it labelled differently falls under the
  --relabel rule (checked again inside the writing transaction), and nothing else is refused.

With no file, the open queries of the waiting round are shown one by one (digit images drawn in
the terminal, table rows under the data file's column names, or `name: value` cells when the
row is wider than the terminal, cut to the screen's height for a table of thousands of columns;
an image folder's items named "query R", R their rank in the round, as the labelling page names
them, since a file's path may spell its class; so do the notes on another session's answers and
on an undo refused).
Type a label (or a class's number in the list shown), `s` to skip, `u` to undo the last answer, `q`
to stop, `a` to see every column of a cut row, `?` for help. The round's prediction for the item (`model: 7 (0.62)`) is shown under it only
with --show-model-guess: the round asks about the items its model is unsure or wrong about, and a
labeller shown its guess leans towards it (the prediction stays recorded). Each answer is committed as it is given (one transaction each), so
Ctrl-C or a killed terminal loses nothing already typed: Ctrl-C says how many answers were saved
and exits 130. Before it shows an item the prompt leases it as the labelling page does (`_prompt_turns`): an item
another labeller (the page, another prompt) has on screen, or has answered since the prompt
started, is passed over with a line saying so. `u` deletes the observation this session just wrote (see `PoolStore.
retract_observation`): the item is back to what it was, and export, status and the next round
never see the withdrawn answer.

A regression project's answer, from a file or the prompt, is read as the project writes its
numbers (`activebayes.data.number_style.answer_number`): `151,5` and `151.5` alike; `1,500`
(`1.500` where the pool had decimal commas), which could be 1500 or 1.5, is refused naming both
ways to write it. Where the pool wrote its target with a unit (`70 kg`), `12.5 kg` is 12.5 and
another unit (`12.5 lb`) is refused naming the project's.

`activebayes round` then closes a round whose queries are all answered and starts the next.
"""

from __future__ import annotations

import os
from pathlib import Path
from collections.abc import Callable
from typing import Annotated, Any, Optional

import typer

from activebayes_cli._app import CliError, command_group
from activebayes_cli._context import state
from activebayes_cli._design_project import refuse_design
from activebayes_cli._options import show_model_guess
from activebayes_cli._parse import existing_file

app = command_group()
ShowModelGuess = show_model_guess("under each item at the prompt")

SHOWN = 5  # offending keys named in a refusal, then "and N more"


def _target_round(store: Any, name: str, number: int | None) -> int | None:
    """--round N (checked), else the latest round when it waits for answers, else None."""
    rounds = store.rounds(name)
    if number is not None:
        if not any(r.number == number for r in rounds):
            known = ", ".join(str(r.number) for r in rounds) or "none yet"
            raise CliError(f"--round: project {name!r} has no round {number} (rounds: {known})", "pass one of them or leave --round out")
        return number
    if rounds and rounds[-1].status.waiting:
        return rounds[-1].number
    return None


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def _listing(entries: list[str]) -> str:
    """The first SHOWN entries, then "and N more"."""
    shown = ", ".join(entries[:SHOWN])
    return shown + (f" and {len(entries) - SHOWN} more" if len(entries) > SHOWN else "")


def _change(item: str, was: str | None, now: str, line: int, unit: str = "line") -> str:
    """One refused row: `item` as the file names it (its key, or the opaque id that stands for a
    key that could spell the class), its current label and the file's."""
    return f"{item} {'(unlabelled)' if was is None else repr(was)} -> {now!r} ({unit} {line})"


def _open_queries(store: Any, name: str, target: int | None) -> int:
    """The queries of round `target` still waiting for an answer (none when it no longer waits:
    closed, or discarded by `round --restart-round`)."""
    from activebayes.store.latest_round import open_queries

    return open_queries(store, name, next((r for r in store.rounds(name) if r.number == target), None))


@app.command("label", short_help="Record answers: from a file, or typed in the terminal.")
def label(
    ctx: typer.Context,
    from_csv: Annotated[Optional[Path], typer.Option("--from", help="CSV of key,label rows (e.g. a filled-in <project>-round-N.csv), or a Label Studio JSON export.")] = None,
    round_number: Annotated[Optional[int], typer.Option("--round", help="Round the answers belong to (default: the waiting round).")] = None,
    who: Annotated[Optional[str], typer.Option("--who", help="Who answered (default: $USER).")] = None,
    test: Annotated[bool, typer.Option("--test", help="With --from: allow rows naming test-split items.")] = False,
    relabel: Annotated[bool, typer.Option("--relabel", help="With --from: allow rows that change an item's current label.")] = False,
    show_model_guess: ShowModelGuess = False,
) -> None:
    """Import answers from a CSV, or answer the waiting round's queries in the terminal.

    At the prompt each answer is saved as it is typed: a class by its name or its number in the
    list shown (regression: the number), s skips, u undoes the last answer, ? explains the keys,
    q (or Ctrl-C) stops. At a terminal, an item another labeller has on screen, or has answered
    meanwhile, is passed over. The round's prediction for the item is shown only with
    --show-model-guess."""
    st = state(ctx)
    who = who or os.environ.get("USER") or os.environ.get("USERNAME") or "human"
    if from_csv is not None:
        existing_file(from_csv, "--from")
    elif test or relabel:
        flag = "--test" if test else "--relabel"
        raise CliError(f"{flag}: only applies to a file of answers (--from FILE)", f"pass --from FILE, or leave {flag} out")
    if from_csv is not None and show_model_guess:
        raise CliError("--show-model-guess: only applies to the terminal prompt (no --from FILE)", "leave --show-model-guess out")
    store = st.store(upgrade=True)  # writes: an older schema is upgraded first
    name = st.project_name()
    info = store.project(name)
    refuse_design(st, name, info, "label")
    target = _target_round(store, name, round_number)
    if from_csv is not None:
        _from_file(st, store, name, info, target, from_csv, who, allow_test=test, allow_relabel=relabel, round_number=round_number)
    else:
        from activebayes_cli._label_prompt import in_terminal

        in_terminal(st, store, name, info, target, who, show_guess=show_model_guess)


# ---- --from FILE ------------------------------------------------------------------------------
def _from_file(st: Any, store: Any, name: str, info: Any, target: int | None, path: Path, who: str, *,
               allow_test: bool, allow_relabel: bool, round_number: int | None = None) -> None:  # fmt: skip
    from activebayes.oracles import FileOracle
    from activebayes_cli._task_ids import resolver

    classes = info.classes if info.task == "classification" else None
    settings = info.settings or {}
    oracle = FileOracle(  # the whole file, checked row by row, before anything else
        path, classes=classes, keys=store.item_keys(name),
        key_names=[settings.get("key_column") or ""], label_names=[settings.get("label_column") or ""],
        resolve=resolver(store, name, info),  # round files and Label Studio tasks that carry an opaque id instead of a key
        project=name,  # a Label Studio task exported from another project is refused
    )  # fmt: skip
    answers = dict(oracle.labels)
    if not answers:
        if oracle.unit == "task":
            raise CliError(f"--from: {path} holds no annotated task ({_plural(len(oracle.unanswered), 'task')} without an annotation)",
                           "annotate the tasks in Label Studio (skipped or cancelled ones do not count) and export again")  # fmt: skip
        raise CliError(f"--from: {path} holds no answers", "fill in the label column (rows of key,label)")
    if info.task == "regression":  # 151,5 and 151.5 alike, as the project writes its numbers
        from activebayes.data.number_style import AnswerError, answer_number, project_unit, project_writing

        writing, unit = project_writing(settings), project_unit(settings)
        for key, value in answers.items():
            try:
                number = answer_number(value, writing, unit)
            except AnswerError as exc:
                raise CliError(f"--from: {path} {oracle.unit} {oracle.lines[key]}: label {value!r} of {oracle.name_of(key)!r} {exc.what}",
                               f"{exc.fix}; correct that {oracle.unit}") from None  # fmt: skip
            answers[key] = repr(number)  # as the store keeps it, to compare with the current label

    states = store.label_states(name, list(answers))
    queries = {q.key: q for q in store.queries(name, target)} if target is not None else {}
    rows: list[tuple[str, str, int | None]] = []
    test_changes: list[tuple[str, str | None]] = []
    changes: list[tuple[str, str | None]] = []
    unchanged = 0
    for key, value in answers.items():
        item = states[key]
        current = item["label"]
        if not item["consumable"] and key in queries:  # a reusable item: its answer in this round
            current = queries[key].value
        if current == value:
            unchanged += 1  # the same label again: harmless, nothing to record
            continue
        if item["split"] == "test":
            test_changes.append((key, current))
        if current is not None:
            changes.append((key, current))
        rows.append((key, value, target if key in queries and item["split"] == "pool" else None))

    def described(entries: list[tuple[str, str | None]]) -> str:
        return _listing([_change(oracle.name_of(k), was, answers[k], oracle.lines[k], oracle.unit) for k, was in entries])

    if test_changes and not allow_test:
        flags = "--test --relabel" if any(was is not None for _, was in test_changes) and not allow_relabel else "--test"
        raise CliError(
            f"--from: {path} would change the labels of {_plural(len(test_changes), 'test-split item')}, "
            f"which measure the model rather than answer a query: {described(test_changes)}",
            f"remove those rows, or pass {flags} to change test labels on purpose",
        )
    if changes and not allow_relabel:
        raise CliError(
            f"--from: {path} would replace the current labels of {_plural(len(changes), 'item')}: {described(changes)}",
            "pass --relabel to replace them, or remove those rows (the same label again is fine)",
        )

    expected = {key: states[key]["label"] for key, _, _ in rows}
    if round_number is None and rows and _target_round(store, name, None) != target:
        raise CliError(f"--from: the waiting round changed while {path} was read (another session's `round` closed, discarded or "
                       "started one); nothing was recorded", "run the same command again: it records them for the round waiting now")  # fmt: skip
    if rows:  # one transaction, as if after any session that labelled these items meanwhile
        ids, conflicts = store.record_labels(name, rows, who=who, source="file", expected=expected, relabel=allow_relabel)
        if conflicts:  # a different label given meanwhile: this file would now replace it
            moved = [_change(oracle.name_of(k), now, answers[k], oracle.lines[k], oracle.unit) for k, (_, now) in conflicts.items()]
            raise CliError(
                f"--from: {path} would replace the current labels of {_plural(len(conflicts), 'item')}, given by another "
                f"session while the file was checked: {_listing(moved)}; nothing was recorded",
                "pass --relabel to replace them, or remove those rows (the same label again is fine)",
            )
        unchanged += sum(i is None for i in ids)  # the same label, given meanwhile by another session
        rows = [row for row, i in zip(rows, ids) if i is not None]
        written = {key for key, _, _ in rows}
        changes = [(k, was) for k, was in changes if k in written]

    far = _far_outside(_known_labels(store, name, info.task), {key: value for key, value, _ in rows})
    in_round = sum(r is not None for _, _, r in rows)
    in_test = sum(states[k]["split"] == "test" for k, _, _ in rows)
    in_eval = sum(states[k]["split"] == "eval" for k, _, _ in rows)
    other = len(rows) - in_round - in_test - in_eval
    relabelled = len(changes)
    remaining = _open_queries(store, name, target)
    summary = {
        "project": name,
        "round": target,
        "recorded": len(rows),
        "round_answers": in_round,
        "other_pool": other,
        "test": in_test,
        "evaluation": in_eval,
        "relabelled": relabelled,
        "unchanged": unchanged,
        "skipped": len(oracle.unanswered),
        # {item: [label, ...]}: the Label Studio annotators' differing answers (the latest one recorded), when any
        **({"disagreements": {oracle.name_of(k): v for k, v in oracle.disputes.items()}} if oracle.disputes else {}),
        "remaining": remaining,
        # {"answers": {item: value}, "others": [lowest, highest]}, each item named as the file names it (its key, or its opaque id)
        **({"far_outside": {**far, "answers": {oracle.name_of(k): v for k, v in far["answers"].items()}}} if far else {}),
    }

    def render(console: Any) -> None:
        parts = []
        if target is not None and (in_round or not (other or in_eval or in_test)):  # no "0 to round 2's queries"
            parts.append(f"{in_round} to round {target}'s queries")
        if target is None and (other or not (in_eval or in_test)):
            parts.append(_plural(other, "pool item") + " (no round waits for answers)")
        elif other:
            parts.append(_plural(other, "other pool item"))
        if in_eval:
            parts.append(_plural(in_eval, "evaluation item"))
        if in_test:
            parts.append(_plural(in_test, "test item"))
        if rows:
            console.print(f"Recorded {_plural(len(rows), 'answer')}: {', '.join(parts)}.")
        if relabelled:
            console.print(f"{relabelled} of them replaced an earlier label (--relabel).")
        if unchanged:
            console.print(f"{_plural(unchanged, 'row')} repeated an item's current label: nothing to record for "
                          + ("them." if rows else "the whole file."))
        if oracle.unanswered and oracle.unit == "task":
            console.print(f"{_plural(len(oracle.unanswered), 'task')} without an annotation (none, or cancelled) skipped.")
        elif oracle.unanswered:
            console.print(f"{_plural(len(oracle.unanswered), 'row')} without a label skipped.")
        if oracle.disputes:
            console.print(_disputes_note(st, oracle.disputes, oracle.name_of))
        if far:
            console.print(_far_note(st, far, oracle.name_of))
        _next(st, console, target, remaining, evaluation=bool(in_eval))

    st.out.result(summary, render)


def _known_labels(store: Any, name: str, task: str) -> dict[str, float]:
    """{key: label} of a regression project's labelled pool and test items ({} otherwise)."""
    if task != "regression":
        return {}
    return {k: float(v) for split in ("pool", "test") for k, v in zip(*store.labels(name, split=split)[1:])}


def _far_outside(known: dict[str, float], answers: dict[str, str]) -> dict[str, Any]:
    """The answers far outside the `known` labels of other items (`data.plausible`):
    {"answers": {key: value}, "others": [lowest, highest]}, or {}."""
    from activebayes.data.plausible import far_outside

    others = [v for k, v in known.items() if k not in answers]
    far = far_outside({k: float(v) for k, v in answers.items()}, others) if known and answers else {}
    return {"answers": far, "others": [min(others), max(others)]} if far else {}


def _far_note(st: Any, far: dict[str, Any], name_of: Callable[[str], str]) -> str:
    """The note under a file's summary on its answers `far` outside the other labels, each item
    named as the file names it (`name_of`: its key, or its opaque id)."""
    (low, high), named = far["others"], list(far["answers"].items())
    shown = ", ".join(f"{name_of(k)} {v:.6g}" for k, v in named[:5]) + (f" and {len(named) - 5} more" if len(named) > 5 else "")
    return (f"note: {_plural(len(named), 'answer')} far outside the other labels ({low:.6g} to {high:.6g}): {shown}; "
            f"a typo can be corrected with `{st.next_command('label', '--from', 'FILE', '--relabel')}`")


def _disputes_note(st: Any, disputes: dict[str, list[str]], name_of: Callable[[str], str]) -> str:
    """The note under a Label Studio export's summary on the items whose annotators disagree
    (each item named as the file names it, with their labels in time order)."""
    named = list(disputes.items())
    shown = ", ".join(f"{name_of(k)} ({' then '.join(v)})" for k, v in named[:5]) + (f" and {len(named) - 5} more" if len(named) > 5 else "")
    return (f"note: the annotators disagree on {_plural(len(named), 'item')}, recorded with the latest answer: {shown}; "
            f"settle them with `{st.next_command('label', '--from', 'FILE', '--relabel')}`")


def _next(st: Any, console: Any, target: int | None, remaining: int, evaluation: bool = False) -> None:
    """The hint after a file's answers: the open queries, else `evaluate` when evaluation items
    were answered (their estimate), else the next round."""
    if target is not None and remaining:
        console.print(f"{_plural(remaining, 'query', 'queries')} of round {target} still open: "
                      f"`{st.next_command('label')}` to continue.")
    elif evaluation:
        console.print(f"Next: {st.next_command('evaluate')} (the estimate from the evaluation set), or {st.next_command('round')}")
    elif st.store().count_candidates(st.project_name()) == 0:
        console.print(f"Every pool item is labelled now: `{st.next_command('export', 'labels.csv')}` writes them out.")
    else:
        console.print(f"Next: {st.next_command('round')}")
