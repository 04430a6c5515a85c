"""Feature columns that give a classification label away: the label written another way, or
computed from the column.

A table may hold the label twice, as a name and as a code (a state and its state code, a species
and its abbreviation), or hold what the label was computed from (a car type beside the label
"is it an Accord", a state beside its region, a mother's age beside "mature mother"); a network
given such a column learns nothing else, and its accuracy says nothing of the other columns.
`leaking_columns` finds a feature column whose every value goes with one class over the labelled
rows, each value on at least two rows (a column of distinct values goes with anything, so it says
nothing), of two kinds:

* one to one: as many values as classes, each class one value (`pairs_one_to_one`);
* many to one: more values than classes (`determines`). Each value going with one class is
  then what chance does too when every value is on few rows and one class is most of the labels
  (two rows of a class of 95 % share a class 90 % of the time), so the column is named only when
  independent labels of the same class shares would go with its values so with a chance under
  MAX_CHANCE (one in a million):

      P(each value goes with one class) = ∏_v Σ_c p_c^(m_v)

  over its values v on m_v rows each, p_c the share of class c. Three car types on 30 rows each
  beside a two-class label of shares 1/3 and 2/3: P ≈ 1e-16; twenty values on 2 rows each beside a 95 %/5 % label:
  P ≈ 0.14, so no note.

`pool add` notes each (a note, not a refusal: the column may be what the user means to predict
from, and `--ignore` leaves it out).
"""

from __future__ import annotations

import math

import numpy as np

MAX_CHANCE = 1e-6  # the chance below which a many-to-one column is named


def _purity(values: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """The [V] row counts of `values`' distinct values, the [C] row counts of the classes, and
    whether every value goes with one class, each value on 2 rows or more, 2 classes or more."""
    found, which, counts = np.unique(values, return_inverse=True, return_counts=True)
    classes, label_at, sizes = np.unique(labels, return_inverse=True, return_counts=True)
    if len(classes) < 2 or counts.min() < 2:
        return counts, sizes, False
    pairs = np.unique(which.reshape(-1) * len(classes) + label_at.reshape(-1))
    return counts, sizes, len(pairs) == len(found)


def pairs_one_to_one(values: np.ndarray, labels: np.ndarray) -> bool:
    """Whether [N] `values` and [N] `labels` pair one to one: as many distinct values as labels
    and as (value, label) pairs, at least 2 of them, and every value on 2 rows or more."""
    counts, sizes, pure = _purity(values, labels)
    return pure and len(counts) == len(sizes)


def chance_of_purity(counts: np.ndarray, sizes: np.ndarray) -> float:
    """∏_v Σ_c p_c^(m_v): the chance that labels drawn independently with the class shares
    p = `sizes` / Σ `sizes` ([C]) give every value on `counts` ([V], m_v) rows one class."""
    shares = sizes / sizes.sum()
    return math.exp(sum(math.log(float(np.sum(shares ** int(m)))) for m in counts))


def determines(values: np.ndarray, labels: np.ndarray) -> bool:
    """Whether [N] `values` determine [N] `labels` many to one: more distinct values than
    classes, every value on 2 rows or more going with one class, which independent labels would
    do with a chance under MAX_CHANCE (module docstring)."""
    counts, sizes, pure = _purity(values, labels)
    return pure and len(counts) > len(sizes) and chance_of_purity(counts, sizes) < MAX_CHANCE


def leaking_columns(plan, labels: np.ndarray, rows: np.ndarray) -> list[tuple[str, bool]]:
    """`plan`'s (`activebayes.data.tabular.TablePlan`) numeric and categorical columns that give
    the [N] text `labels` away over `rows` (those labelled, without a gap in the column): (name,
    whether one to one) for each, one to one or determining them."""
    out = []
    for column in plan.columns:
        if column.kind == "numeric":
            values = column.numbers
        elif column.kind == "categorical":
            values = plan.table.category_codes(column.name)[0]
        else:
            continue
        kept = rows[~column.missing[rows]]
        if not kept.size:
            continue
        if pairs_one_to_one(np.asarray(values)[kept], labels[kept]):
            out.append((column.name, True))
        elif determines(np.asarray(values)[kept], labels[kept]):
            out.append((column.name, False))
    return out


def leak_note(name: str, label_column: str, one_to_one: bool = True) -> str:
    """The import note for a column that pairs one to one with the labels, or determines them."""
    if not one_to_one:
        return (f"column {name!r} determines the labels in {label_column!r} (each of its values goes with one class, on enough rows "
                f"that chance would not do it): if the label is computed from it, it gives the answer away; --ignore {name} leaves it out")  # fmt: skip
    return (f"column {name!r} pairs one to one with the labels in {label_column!r} (each of its values goes with one class): if it is "
            f"the label written another way, it gives the answer away; --ignore {name} leaves it out")
