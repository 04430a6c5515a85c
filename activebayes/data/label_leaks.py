"""Feature columns that copy a classification label: the label written another way.

A table may hold the label twice, as a name and as a code (a state and its state code, a species
and its abbreviation); a network given the copy learns nothing else, and its accuracy says
nothing of the other columns. `one_to_one_columns` finds a feature column whose values and the
labels pair one to one over the labelled rows, each value on at least two rows (a column of
distinct values pairs one to one with anything, so it says nothing); `pool add` notes each.
"""

from __future__ import annotations

import numpy as np


def pairs_one_to_one(values: np.ndarray, labels: np.ndarray) -> bool:
    """Whether [N] `values` and [N] `labels` pair one to one: as many distinct values as labels
    and as (value, label) pairs, at least 2 of them, and every value on 2 rows or more."""
    found, which, counts = np.unique(values, return_inverse=True, return_counts=True)
    classes, label_at = np.unique(labels, return_inverse=True)
    if not 2 <= len(found) == len(classes) or counts.min() < 2:
        return False
    return len(np.unique(which.reshape(-1) * len(classes) + label_at.reshape(-1))) == len(found)


def one_to_one_columns(plan, labels: np.ndarray, rows: np.ndarray) -> list[str]:
    """The names of `plan`'s (`activebayes.data.tabular.TablePlan`) numeric and categorical
    columns that pair one to one with the [N] text `labels` over `rows` (those labelled, without
    a gap in the column)."""
    out = []
    for column in plan.columns:
        if column.kind == "numeric":
            values = column.numbers
        elif column.kind == "categorical":
            values = plan.table.category_codes(column.name)[0]
        else:
            continue
        kept = rows[~column.missing[rows]]
        if kept.size and pairs_one_to_one(np.asarray(values)[kept], labels[kept]):
            out.append(column.name)
    return out


def leak_note(name: str, label_column: str) -> str:
    """The import note for a column that pairs one to one with the labels."""
    return (f"column {name!r} pairs one to one with the labels in {label_column!r} (each of its values goes with one class): if it is "
            f"the label written another way, it gives the answer away; --ignore {name} leaves it out")
