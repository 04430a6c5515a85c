"""Label Studio interchange: a round's queries as Label Studio tasks, and Label Studio's JSON
export back as (key, label) answers. Pure functions: no files, no store.

Tasks (`tasks_from_queries`) follow Label Studio's JSON task format, one task per query:

    {"data": {"activebayes_key": "12", "activebayes_project": "iris", "activebayes_round": 3,
              "score": 0.41, "rank": 1, "image": "/data/cats/001.png"},        # or "text": "..."
     "predictions": [{"model_version": "...", "score": 0.93,                   # only when asked for
                      "result": [{"from_name": "label", "to_name": "image", "type": "choices",
                                  "value": {"choices": ["cat"]}}]}]}

`score` is the query's acquisition score and `rank` its place in the round (1 = chosen first).
Where the key itself could tell the labeller the answer (an image folder keyed by its files'
paths, `dark/dark0.png`: a `--truth` pool, or one converted before `img-NNNN` keys), the task
carries no key but an opaque `data["activebayes_query"]` (`task_id`): `r<round>-q<rank>-<check>`,
the check being the first 10 hex digits of the image file's sha256, which says nothing the image
does not show. `label --from` maps it back through the store (`resolve`: round R's query of that
rank, whose file must have that hash), so a task edited by hand, or one from another project or
database, is refused instead of labelling some other item.
`predictions`, only with `pre_annotate=True`, is the round's own prediction for the item
(`QueryInfo.prediction`), a pre-annotation the labeller confirms or corrects: the most probable
class with its probability as the prediction's score, or for a regression project the predictive
mean as a `number` result. A query without one (a cold-start round, or one recorded before
predictions were kept) gets no `predictions`. It is off by default, as on the labelling page: a
round asks about the items its model is unsure or wrong about, and an answer shown already
chosen pulls the labeller towards the model's mistakes.
`labelling_config` gives the matching labelling configuration (an `<Image>` or `<Text>` object
named "image" / "text", and a `<Choices name="label">` over the classes, or `<Number>` for a
regression project).

Label Studio's JSON export (`answers_from_export`) is a list of those tasks, each with
"annotations": [{"result": [{"type": "choices", "value": {"choices": ["cat"]}}],
"was_cancelled": false, ...}]. The key is data["activebayes_key"], or what `resolve` maps
data["activebayes_query"] to (files exported before such ids existed carry the key); the label is the choice
of the latest annotation that was not cancelled (nor "skipped", as Label Studio before 1.0 said),
latest by `updated_at`, else `created_at`, else list order; an annotation marked `ground_truth`
(a reviewer's reference answer) is taken before any other. A task without such an annotation is returned with an empty label: not
answered yet; `predictions` (pre-annotations) and `drafts` (unsubmitted) are never read. Where
several annotators answered a task, the latest answer is the label, as on the labelling page with
several answers per item, and `disputes` gives the labels they disagree on. An annotation that
chose several classes, a task exported from another project (data["activebayes_project"]), and
anything else that is not such a list are a DataError naming the task.

Label Studio's JSON-MIN export is read too (`export_tasks` turns it into those tasks): one flat
record per annotation not cancelled, the task's data fields at the top with its "id", the
annotation's "annotator", "annotation_id", "created_at" and "updated_at", and the control's
answer under its name, "label": the choice as text (`"cat"`), several choices as
`{"choices": [...]}`, a number as `[{"number": 2.5}]`. A task without annotations is one record
without "label". The records of one task (its "id") are its annotations.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from xml.sax.saxutils import quoteattr

from activebayes.errors import DataError

KEY = "activebayes_key"  # the data field that carries the item key both ways
QUERY = "activebayes_query"  # instead of KEY where a key could name the class: an opaque id (`task_id`)
QUERY_COLUMN = "query"  # likewise the column of a round or evaluation file that holds those ids instead of "key"
CHECK_DIGITS = 10  # hex digits of the image file's sha256 in a task id
_TASK_ID = re.compile(r"(?:r([1-9][0-9]*)|e)-q([1-9][0-9]*)-([0-9a-f]{%d})" % CHECK_DIGITS)
CONTROL = "label"  # the <Choices>/<Number> control's name (a result's from_name)
HINT = "export the project from Label Studio as JSON or JSON-MIN (a list of tasks with their annotations)"
#: what a JSON-MIN record holds besides the task's data fields and the control's answer
_MIN_META = ("id", "annotator", "annotation_id", "created_at", "updated_at", "lead_time", "agreement", "history")


def labelling_config(classes: Sequence[Any] | None, *, kind: str = "image") -> str:
    """Label Studio's labelling configuration for these tasks: an `<Image name="image">` (kind
    "image") or `<Text name="text">` (kind "text") and a single-choice `<Choices name="label">`
    over `classes`, or a `<Number name="label">` when `classes` is None (a regression project)."""
    if kind not in ("image", "text"):
        raise ValueError(f"kind: expected 'image' or 'text', got {kind!r}")
    shown = '  <Image name="image" value="$image"/>' if kind == "image" else '  <Text name="text" value="$text"/>'
    if classes is None:
        control = [f'  <Number name="{CONTROL}" toName="{kind}" required="true"/>']
    else:
        control = [f'  <Choices name="{CONTROL}" toName="{kind}" choice="single" required="true">']
        control += [f"    <Choice value={quoteattr(str(c))}/>" for c in classes]
        control += ["  </Choices>"]
    return "\n".join(["<View>", shown, *control, "</View>"]) + "\n"


def task_id(round_number: int | None, rank: int, file_sha256: str) -> str:
    """The opaque id of round `round_number`'s query of `rank` (0 = first) whose image file has
    sha256 `file_sha256` (hex): `r3-q1-1f3a9c0d2b`; with `round_number` None, of the evaluation
    set's item drawn `rank`-th (`activebayes evaluate --budget`): `e-q12-1f3a9c0d2b`."""
    drawn = "e" if round_number is None else f"r{int(round_number)}"
    return f"{drawn}-q{int(rank) + 1}-{file_sha256[:CHECK_DIGITS].lower()}"


def parse_task_id(text: str) -> tuple[int | None, int, str] | None:
    """(round number, or None for the evaluation set; rank from 0; check) of a `task_id`; None
    for any other text."""
    found = _TASK_ID.fullmatch(text.strip())
    if found is None:
        return None
    return (int(found.group(1)) if found.group(1) else None), int(found.group(2)) - 1, found.group(3)


def tasks_from_queries(
    queries: Sequence[Any],
    *,
    project: str,
    round_number: int,
    images: Mapping[str, str] | None = None,
    texts: Mapping[str, str] | None = None,
    model_version: str | None = None,
    pre_annotate: bool = False,
    ids: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """One Label Studio task per query (objects with `key`, `score`, `rank` (0 = first) and
    `prediction`, like the store's QueryInfo), in rank order.

    Args:
        project, round_number: written into each task's data, to tell exports apart.
        images: key -> the image's path or URL (`data["image"]`), for an image pool.
        texts: key -> the item as text (`data["text"]`), for any other pool.
        model_version: the predictions' `model_version` (default "activebayes").
        pre_annotate: add each query's prediction as the task's `predictions` (module docstring).
        ids: key -> the task's opaque id (`task_id`), written as data["activebayes_query"]
            instead of the key, for a pool whose keys could name the class.
    """
    to_name = "image" if images is not None else "text"
    tasks = []
    for q in sorted(queries, key=lambda q: q.rank):
        score = float(q.score)
        data: dict[str, Any] = {
            **({QUERY: ids[q.key]} if ids is not None else {KEY: q.key}),
            "activebayes_project": project,
            "activebayes_round": round_number,
            "score": score if math.isfinite(score) else None,
            "rank": int(q.rank) + 1,
        }
        if images is not None:
            data["image"] = images[q.key]
        elif texts is not None:
            data["text"] = texts[q.key]
        task: dict[str, Any] = {"data": data}
        prediction = _prediction(getattr(q, "prediction", None), to_name, model_version or "activebayes") if pre_annotate else None
        if prediction is not None:
            task["predictions"] = [prediction]
        tasks.append(task)
    return tasks


def _prediction(prediction: Mapping[str, Any] | None, to_name: str, model_version: str) -> dict[str, Any] | None:
    """A query's prediction as one Label Studio prediction: a `choices` result scored by the
    class's probability, or a `number` result (the predictive mean); None without one."""
    if not prediction:
        return None
    if "label" in prediction:
        result = {"from_name": CONTROL, "to_name": to_name, "type": "choices", "value": {"choices": [str(prediction["label"])]}}
        return {"model_version": model_version, "score": float(prediction["probability"]), "result": [result]}
    result = {"from_name": CONTROL, "to_name": to_name, "type": "number", "value": {"number": float(prediction["mean"])}}
    return {"model_version": model_version, "result": [result]}


def _value(result: Any) -> str | None:
    """The label of one annotation result: its choice (or its number, its rating, its one line of
    text); None when it has none."""
    if not isinstance(result, Mapping):
        return None
    value = result.get("value")
    if not isinstance(value, Mapping):
        return None
    choices = value.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], (str, int, float)) and not isinstance(choices[0], bool):
        return str(choices[0]).strip() or None
    number = value.get("number", value.get("rating"))  # a <Number>'s, or a <Rating>'s stars
    if isinstance(number, (int, float)) and not isinstance(number, bool):
        return repr(number) if isinstance(number, float) else str(number)
    if isinstance(number, str):  # a number sent as text (an annotation made through the API): read as typed text is
        return number.strip() or None
    text = value.get("text")  # a <TextArea>'s: one line typed, read as a CSV's label would be
    if isinstance(text, list) and len(text) == 1 and isinstance(text[0], str):
        return text[0].strip() or None
    return None


def _label(annotation: Mapping[str, Any], where: str = "the task") -> str | None:
    """An annotation's label: the result from the "label" control first, else the first result
    that holds a choice (or a number). DataError naming `where` for a result that holds several
    choices (a multi-label answer: an item has one class)."""
    results = annotation.get("result")
    if not isinstance(results, list):
        return None
    ordered = sorted(results, key=lambda r: not (isinstance(r, Mapping) and r.get("from_name") == CONTROL))
    chosen, label = next(((r, v) for r in ordered if (v := _value(r)) is not None), (None, None))
    choices = chosen["value"].get("choices") if chosen is not None else None
    if isinstance(choices, list) and len(choices) > 1:
        shown = ", ".join(repr(str(c)) for c in choices)
        raise DataError(f"{where}: the annotation chose {len(choices)} classes ({shown}) where an item has one; "
                        f"choose one in Label Studio (the config's Choices choice=\"single\") and export again")  # fmt: skip
    return label


def _annotator(annotation: Mapping[str, Any]) -> str:
    """Who gave an annotation: its `completed_by` (a user id, or an object with an email)."""
    who = annotation.get("completed_by")
    if isinstance(who, Mapping):
        who = who.get("email", who.get("id"))
    return str(who)


def disputes(task: Mapping[str, Any], where: str = "the task") -> list[str]:
    """The labels on which a task's annotators disagree (each annotator's latest annotation not
    cancelled, in time order), or [] when they agree (or one annotator answered). An annotator's
    own earlier annotation, updated since, is no disagreement. DataError naming `where` for an
    annotation that chose several classes."""
    annotations = task.get("annotations", task.get("completions")) or []
    if not isinstance(annotations, list):
        return []
    latest: dict[str, Mapping[str, Any]] = {}
    for annotation in sorted((a for a in annotations if isinstance(a, Mapping) and not _cancelled(a)), key=_when):
        latest[_annotator(annotation)] = annotation
    labels = [label for a in sorted(latest.values(), key=_when) if (label := _label(a, where)) is not None]
    distinct = list(dict.fromkeys(labels))
    return distinct if len(distinct) > 1 else []


def _when(annotation: Mapping[str, Any]) -> str:
    return str(annotation.get("updated_at") or annotation.get("created_at") or "")


def _cancelled(annotation: Mapping[str, Any]) -> bool:
    """Whether an annotation was cancelled ("skipped" in Label Studio before 1.0)."""
    return bool(annotation.get("was_cancelled") or annotation.get("skipped"))


def _latest(annotations: list[Any]) -> Mapping[str, Any] | None:
    """The annotation that labels a task: of those not cancelled, the latest marked ground truth,
    else the latest (by updated_at, else created_at, else list order)."""
    kept = [(a.get("ground_truth") is True, _when(a), i, a)
            for i, a in enumerate(annotations) if isinstance(a, Mapping) and not _cancelled(a)]  # fmt: skip
    if not kept:
        return None
    return max(kept, key=lambda t: t[:3])[3]


def _min_value(answer: Any) -> Mapping[str, Any] | None:
    """A JSON-MIN record's answer as a result's "value" (module docstring); None when it holds none."""
    if isinstance(answer, list) and len(answer) == 1 and isinstance(answer[0], Mapping):
        answer = answer[0]  # a number or a rating: [{"number": 2.5}]
    if isinstance(answer, str):
        return {"choices": [answer]}
    if isinstance(answer, (int, float)) and not isinstance(answer, bool):
        return {"number": answer}
    if isinstance(answer, list) and answer and all(isinstance(a, str) for a in answer):
        return {"choices": answer}
    return answer if isinstance(answer, Mapping) else None


def _is_min_record(record: Any) -> bool:
    return isinstance(record, Mapping) and "data" not in record and (KEY in record or QUERY in record)


def export_tasks(exported: Any) -> Any:
    """A Label Studio export as the list of tasks `answers_from_export` reads: one task on its
    own as a list of it, a JSON-MIN export's records gathered into tasks (module docstring),
    anything else as it is."""
    if isinstance(exported, Mapping) and isinstance(exported.get("data"), Mapping):
        return [exported]
    if not isinstance(exported, list) or not exported or not all(_is_min_record(r) for r in exported):
        return exported
    tasks: dict[Any, dict[str, Any]] = {}
    for number, record in enumerate(exported):
        data = {k: v for k, v in record.items() if k not in _MIN_META and k != CONTROL}
        group = (record.get("id", f"record {number}"), str(data.get(KEY, data.get(QUERY))))
        task = tasks.setdefault(group, {"data": data, "annotations": []})
        if CONTROL in record or record.get("annotation_id") is not None:
            value = _min_value(record.get(CONTROL))
            result = [{"from_name": CONTROL, "value": value}] if value is not None else []
            meta = {"completed_by": record.get("annotator"), "created_at": record.get("created_at"), "updated_at": record.get("updated_at")}
            task["annotations"].append({"result": result, **meta})
    return list(tasks.values())


def answers_from_export(tasks: Any, source: str = "the file", resolve: Callable[[str], str | None] | None = None,
                        project: str | None = None) -> list[tuple[int, str, str]]:  # fmt: skip
    """(task number from 1, item key, label) for each task of a Label Studio JSON export, in
    file order; the label is "" for a task without a usable annotation (none, all cancelled, or
    the latest one without a choice). The key is data["activebayes_key"], or `resolve` of
    data["activebayes_query"] (an opaque id: its key, None for an id no query has). DataError
    naming `source` and the task for anything that is not a list of tasks each with one of them,
    and for an id that `resolve` does not know (or with no `resolve`)."""
    tasks = export_tasks(tasks)  # one task on its own, or JSON-MIN's records
    if not isinstance(tasks, list):
        kind = {dict: "object", str: "string", bool: "true/false", type(None): "null"}.get(type(tasks), "number")
        raise DataError(f"{source}: expected a JSON list of Label Studio tasks, got a JSON {kind}; {HINT}")
    rows = []
    for number, task in enumerate(tasks, start=1):
        where = f"{source} task {number}"
        if not isinstance(task, Mapping) or not isinstance(task.get("data"), Mapping):
            flat = _is_min_record(task)  # a JSON-MIN record among tasks: the file mixes the two exports
            raise DataError(f"{where}: expected an object with a \"data\" object{' (a JSON-MIN record among JSON tasks)' if flat else ''}; "
                            f"{HINT}, the whole file in one of them")  # fmt: skip
        exported_from = task["data"].get("activebayes_project")
        if project is not None and exported_from is not None and str(exported_from) != project:
            raise DataError(f"{where}: the task was exported from project {str(exported_from)!r}, not {project!r}; "
                            f"label the tasks `activebayes export --format label-studio` wrote for project {project!r}")  # fmt: skip
        key = _task_key(task["data"], where, resolve)
        annotations = task.get("annotations", task.get("completions", []))  # "completions": Label Studio before 1.0
        if annotations is None:
            annotations = []
        if not isinstance(annotations, list):
            raise DataError(f"{where}: \"annotations\" is not a list; {HINT}")
        latest = _latest(annotations)
        label = _label(latest, where) if latest is not None else None
        rows.append((number, key, label or ""))
    return rows


def _task_key(data: Mapping[str, Any], where: str, resolve: Callable[[str], str | None] | None) -> str:
    """The item key of one task's data: its opaque id resolved, else its key (module docstring)."""
    exported = "import tasks written by `activebayes export --format label-studio` into Label Studio and export those"
    if QUERY in data:
        task = data[QUERY]
        key = resolve(task.strip()) if isinstance(task, str) and resolve is not None else None
        if key is None:
            raise DataError(f"{where}: {QUERY} {task!r} is no query of this project's rounds (edited, or exported from "
                            f"another project or database); {exported} of this project")  # fmt: skip
        if KEY in data and str(data[KEY]).strip() != key:
            raise DataError(f"{where}: {KEY} {data[KEY]!r} is not the item of {QUERY} {task!r}; {exported}, unedited")
        return key
    key = data.get(KEY)
    if isinstance(key, bool) or not isinstance(key, (str, int)) or not str(key).strip():
        raise DataError(f"{where}: data has no {KEY!r} or {QUERY!r}; {exported}")
    return str(key).strip()
