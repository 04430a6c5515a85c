"""`activebayes label` without --from: the waiting round's open queries asked one by one in the
terminal (`activebayes.oracles.PromptOracle`), each answer committed as it is typed; the command's
module docstring (`cli/label.py`) describes what the person sees and types."""

from __future__ import annotations

import sys
from typing import Any

import typer

from activebayes_cli._app import INTERRUPTED, CliError
from activebayes_cli.label import _far_outside, _known_labels, _next, _open_queries, _plural, _target_round

REPEAT = "repeat"  # an answer the prompt gave that another session had given already


def in_terminal(st: Any, store: Any, name: str, info: Any, target: int | None, who: str, *, show_guess: bool = False) -> None:
    """Ask round `target`'s open queries at the prompt, as `who`; the summary as `label --from` prints one."""
    from activebayes.errors import StoreError
    from activebayes.data import load_project_data
    from activebayes.store.engine import DATABASE_AWAY, database_gone
    from activebayes.oracles import PromptOracle
    from activebayes.data.number_style import AnswerError, answer_number, project_unit, project_writing
    from activebayes_cli._prompt_turns import PromptTurns, RoundGone, holder_name
    from activebayes_cli._round_file import prediction_text

    if target is None:
        raise CliError(
            f"nothing to label: no round of project {name!r} waits for answers",
            "run `activebayes round` first, or import answers with --from CSV",
        )
    pending = [q for q in store.queries(name, target) if q.value is None]
    if not pending:
        st.out.note(f"round {target} has all its answers. Next: {st.next_command('round')}")
        st.out.result({"project": name, "round": target, "recorded": 0, "skipped": 0, "remaining": 0, "not_saved": 0})
        return
    data = load_project_data(store, name)
    keys = [q.key for q in pending]
    states = store.label_states(name, keys)
    stream = sys.stderr if st.out.json else sys.stdout
    saved = {"answers": 0, "not_saved": 0}

    writing, unit = project_writing(info.settings), project_unit(info.settings)  # decimal commas, 12.5 kg, where the pool had them

    known = _known_labels(store, name, info.task)  # read once: a typed answer is checked against the labels before the session
    # an image folder's keys may be its files' paths, which can spell the class: named as on the labelling page
    names = {q.key: f"query {q.rank + 1}" for q in pending} if getattr(data, "folder", None) is not None else {}

    def on_answer(key: str, value: str) -> int | str | None:
        """Commit one answer now (its own transaction); the observation's id, for `u` (REPEAT:
        another session gave the same label meanwhile, so nothing was written). A regression
        answer is read as the project writes its numbers (ValueError: asked again)."""
        if info.task == "regression":
            try:
                value = repr(answer_number(value, writing, unit))
            except AnswerError as exc:
                raise ValueError(f"{value!r} {exc}") from None
        try:
            number = turns.round_for_answer(key)  # the round may have closed while the person thought
            ids, conflicts = store.record_labels(
                name, [(key, value, number)], who=who, source="prompt", expected={key: states[key]["label"]}
            )
        except DATABASE_AWAY as exc:  # asked again: the same answer later is a repeat if it did commit
            raise ValueError(f"not saved: {database_gone(exc)}; type it again once it is back, or q to stop") from None
        if number != target:
            asks = "it" if key in names else key  # "query R" is its place in round `target`, not in round `number`
            stream.write(f"  round {target} no longer waits for answers: recorded "
                         + (f"for round {number}, which asks {asks} too\n" if number is not None else "outside a round\n"))
        if conflicts:
            stream.write(f"  not saved: another session labelled {names.get(key, key)} {conflicts[key][1]!r} meanwhile; that label stays\n")
            saved["not_saved"] += 1
            return None
        if ids[0] is None:
            stream.write(f"  {names.get(key, key)} was labelled the same by another session meanwhile: recorded once\n")
            return REPEAT
        saved["answers"] += 1
        far = _far_outside(known, {key: value})
        if far:
            low, high = far["others"]
            stream.write(f"  note: {float(value):.6g} is far outside the other labels ({low:.6g} to {high:.6g}); `u` takes it back\n")
        return ids[0]

    def on_undo(key: str, observation_id: int | str | None) -> bool:
        if observation_id is None:  # that answer was never written
            saved["not_saved"] -= 1
            return True
        if observation_id == REPEAT:
            stream.write(f"  cannot undo: the label of {names.get(key, key)} was given by another session\n")
            return False
        try:
            store.retract_observation(name, int(observation_id))
        except StoreError as exc:  # taken back already, or its round closed meanwhile (the library's fix: relabel)
            what, fixable, _ = str(exc).partition("; ")
            what = what.replace(repr(key), names[key]) if key in names else what  # the store names the item by its key
            fix = "; correct it with `activebayes label --from FILE --relabel`" if fixable else ""
            stream.write(f"  cannot undo: {what}{fix}\n")
            return False
        saved["answers"] -= 1
        return True

    classes = info.classes if info.task == "classification" else None
    hints = {q.key: prediction_text(q.prediction, writing) for q in pending if q.prediction and show_guess}  # the round's predictions, when asked for
    turns = PromptTurns(store, name, target, holder_name(who), {q.key: q.item_id for q in pending},  # the page's leases
                        pass_over=_at_a_terminal())  # fmt: skip
    oracle = PromptOracle(classes=classes, feature_names=data.raw_columns if getattr(data, "raw_columns", None) is not None else data.feature_names, output=stream, on_answer=on_answer, on_undo=on_undo,
                          hints=hints, on_show=turns.take, names=names)  # fmt: skip
    try:
        with turns:
            oracle.ask(keys, (data.raw if getattr(data, "raw", None) is not None else data.x)[[q.row for q in pending]])
    except RoundGone as exc:  # another session's `round` closed or discarded it: nothing more to ask here
        stream.write(f"{exc}\n")
    except KeyboardInterrupt:  # Ctrl-C while an item was drawn or an answer written
        _interrupted(st, store, name, target, saved["answers"])
    if oracle.interrupted:
        _interrupted(st, store, name, target, saved["answers"])

    waiting = _target_round(store, name, None) or target  # the round waiting now: another session may have started the next one
    remaining = _open_queries(store, name, waiting)
    recorded = saved["answers"]
    skipped = len(oracle.skipped)  # items shown and skipped; those after a `q` were not shown
    passed = len(oracle.passed)  # items another labeller had: answered, or held on their screen
    summary = {"project": name, "round": target, "recorded": recorded, "skipped": skipped, "remaining": remaining,
               "not_saved": saved["not_saved"], "with_others": passed}  # fmt: skip

    def render(console: Any) -> None:
        console.print(f"Recorded {_plural(recorded, 'answer')} for round {target}" + (f", skipped {skipped}" if skipped else "")
                      + (f", passed over {passed} another labeller had" if passed else "") + ".")
        _next(st, console, waiting, remaining)

    st.out.result(summary, render)


def _at_a_terminal() -> bool:
    """Whether the answers come from a person at a terminal (not piped in)."""
    return sys.stdin.isatty()


def _interrupted(st: Any, store: Any, name: str, target: int, answers: int) -> None:
    """Ctrl-C: say what was kept, exit 130."""
    remaining = _open_queries(store, name, target)
    print(
        f"interrupted: {_plural(answers, 'answer')} saved for round {target}; "
        f"{_plural(remaining, 'query', 'queries')} still open (`{st.next_command('label')}` continues)",
        file=sys.stderr,
        flush=True,
    )
    raise typer.Exit(INTERRUPTED)
