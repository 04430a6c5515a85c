"""What the labelling page asks, in words, above the answers: the question and a short line of
what answers it.

    asked(info)   # Question("Which class is this item?", "a, b or c")
                  # Question("What value does this item have?", "a number in kg (column weight)")

A classification lists its classes (up to `LISTED`; more are "one of N classes", the buttons
and the find field name them all). A regression says "a number", with the target's unit when
`pool add` read its cells as numbers followed by one unit ("70 kg": settings["features"]
["label_written"] "unit:kg"), "an amount" when they were amounts ("$1,200"), and the column
it was read from when that column has a name of its own (not "label", "y", "target").

    keypad(["2.5", "0"])    # "decimal"
    keypad(["2.5", "-1"])   # "text"

The number field's `inputmode`, which picks a phone's keyboard: "decimal" (digits and the decimal
mark; an iPhone's has no minus sign, so the field has a ± button beside it) while none of the
project's labels is negative, "text" (the full keyboard, whose number layer has the minus sign,
the exponent's e and a unit's letters) once one is.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from activebayes.data.number_style import project_unit

LISTED = 10  # classes named in the question; more: "one of N classes"
PLAIN_NAMES = frozenset({"label", "labels", "y", "target", "class", "value"})  # a label column that names nothing


class Question(NamedTuple):
    """`text` the question; `detail` what answers it (the classes, or the kind of number)."""

    text: str
    detail: str


def listed(names: list[str]) -> str:
    """"a", "a or b", "a, b or c"."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def asked(info: Any) -> Question:
    """The question of a project (a `ProjectInfo`: task, classes, settings)."""
    if info.task == "classification":
        classes = [str(c) for c in info.classes or ()]
        if not classes:
            return Question("Which class is this item?", "")
        return Question("Which class is this item?", listed(classes) if len(classes) <= LISTED else f"one of {len(classes)} classes")
    settings = info.settings or {}
    features = settings.get("features") if isinstance(settings.get("features"), dict) else {}
    unit = project_unit(settings)  # the one an answer may carry too (`answer_number`)
    what = f"a number in {unit}" if unit else "an amount" if features.get("label_written") == "units" else "a number"
    column = settings.get("label_column")
    if isinstance(column, str) and column.strip() and column.strip().lower() not in PLAIN_NAMES:
        what += f" (column {column.strip()})"
    return Question("What value does this item have?", what)


def negative(label: Any) -> bool:
    """Whether a stored label is a number below 0 ("-3.5"; "3.5", "nan" and "cat" are not)."""
    try:
        return float(str(label).strip()) < 0
    except ValueError:
        return False


def keypad(labels: Iterable[Any]) -> str:
    """The number field's inputmode for a project whose labels so far are `labels`: "text" when
    one is negative, else "decimal" (see the module docstring)."""
    return "text" if any(negative(label) for label in labels) else "decimal"
