"""Text columns that one-hot encoding serves badly, and what `pool add` does with them instead of
refusing the table (`activebayes.data.tabular.plan_table`, under `--categorical auto`).

An identifier-like column: at least IDENTIFIER_MIN_VALUES values present, IDENTIFIER_DISTINCT
(90 %) of them distinct (a name, a title, a timestamp). Each level is on about one row, so one
feature per level teaches a network nothing about any other row: the column is left out of the
features, with a note naming the ways in (`--key-column`, `--text-column`, `--categorical force`).

A many-level column: more levels than `level_limit(N) = max(MAX_LEVELS, MAX_LEVEL_SHARE · N)`
(50, or 5 % of the N rows). It is one-hot encoded on its frequent levels only
(`frequent_levels`), the others sharing one "other" feature, as scikit-learn's OneHotEncoder does
with `min_frequency` and `max_categories` together:

    kept = the levels with count ≥ MIN_LEVEL_ROWS, the `level_limit(N)` most frequent of them
           (ties: the level first in natural order), listed in natural order

Why this rule. A level's one-hot weight is learnt from its rows alone; a level on fewer than
MIN_LEVEL_ROWS (5) rows gives that weight a handful of examples, too few to tell a real effect
from noise, and in active learning most of them are unlabelled, so its feature mostly adds a
dimension for the acquisition's uncertainty to chase. Pooling the rare levels in one "other"
feature keeps what they share (being rare) and bounds the width at `level_limit(N) + 1`, the
same bound under which a column is encoded whole. A column none of whose levels reaches
MIN_LEVEL_ROWS rows would become one constant feature, so it is left out like an identifier.
The rule reads the whole table (as the levels themselves always have), never the labels, so
it is fixed before the pool/test split and recorded with the encoding: an appended batch's new
level falls in "other" (`activebayes.data.table_spec`).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from activebayes.data.text_tokens import words

IDENTIFIER_MIN_VALUES = 20  # fewer values than this are never called an identifier
IDENTIFIER_DISTINCT = 0.9  # share of distinct values that makes a text column an identifier
MAX_LEVELS, MAX_LEVEL_SHARE = 50, 0.05  # a categorical column is encoded whole up to max(50, 5 % of rows) levels
MIN_LEVEL_ROWS = 5  # a level on fewer rows of a many-level column joins "other"
PROSE_WORDS = 5  # a column that would be left out or pooled, whose median value has this many words or more, is free text (--text-column)
OTHER = "(other)"  # the feature name's level for the pooled levels: "city=(other)"


def median_words(texts: Sequence[str]) -> float:
    """The median number of words in `texts` (`text_tokens.words`: runs of non-space characters,
    and one for every two Chinese or Japanese characters); 0 for none."""
    return float(np.median([words(t) for t in texts])) if len(texts) else 0.0


def level_limit(n_rows: int) -> int:
    """max(MAX_LEVELS, ⌊MAX_LEVEL_SHARE · n_rows⌋): the most levels a column is one-hot encoded on."""
    return max(MAX_LEVELS, int(MAX_LEVEL_SHARE * n_rows))


def looks_like_identifier(n_levels: int, n_present: int) -> bool:
    """Whether a text column of `n_levels` distinct values among `n_present` is identifier-like."""
    return n_present >= IDENTIFIER_MIN_VALUES and n_levels >= IDENTIFIER_DISTINCT * n_present


def frequent_levels(levels: Sequence[str], counts: Sequence[int] | np.ndarray, limit: int, min_rows: int = MIN_LEVEL_ROWS) -> list[str]:
    """The levels kept by a many-level column's encoding (module docstring): of `levels` (in
    natural order) with `counts` [L] rows each, those on at least `min_rows` rows, the `limit`
    most frequent of them (a tie goes to the level earlier in `levels`), in the order of `levels`."""
    counts = np.asarray(counts, dtype=np.int64)
    eligible = np.flatnonzero(counts >= min_rows)
    by_count = eligible[np.argsort(-counts[eligible], kind="stable")][:limit]
    return [levels[i] for i in sorted(by_count.tolist())]


def identifier_note(name: str, n_levels: int, n_present: int, dates: str | None = None) -> str:
    """The note for an identifier-like column left out (`dates`: why its values are not read as dates)."""
    also = f"; since {dates}, writing them as YYYY-MM-DD reads them as dates" if dates else ""
    return (f"column {name!r} looks like an identifier ({n_levels} different values in {n_present} rows): left out of the features; "
            f"pass --key-column {name} if it names the items, --text-column {name} if it is prose, or --categorical force to one-hot "
            f"encode it{also}")  # fmt: skip


def other_note(name: str, n_levels: int, n_rows: int, kept: int, pooled_rows: int) -> str:
    """The note for a many-level column encoded on its `kept` frequent levels, the others in "other"."""
    return (f"column {name!r} has {n_levels} categories, more than max({MAX_LEVELS}, 5 % of {n_rows} rows) = {level_limit(n_rows)}: "
            f"one-hot encoded on the {kept} on at least {MIN_LEVEL_ROWS} rows (at most {level_limit(n_rows)}), the other "
            f"{n_levels - kept} ({pooled_rows} rows) sharing one '{OTHER}' feature; --categorical force encodes all {n_levels}, "
            f"--text-column {name} reads it as prose, --ignore {name} leaves it out")  # fmt: skip


def rare_note(name: str, n_levels: int, n_rows: int) -> str:
    """The note for a many-level column none of whose levels is on MIN_LEVEL_ROWS rows, left out."""
    return (f"column {name!r} has {n_levels} categories, more than max({MAX_LEVELS}, 5 % of {n_rows} rows) = {level_limit(n_rows)}, "
            f"none on {MIN_LEVEL_ROWS} rows or more: left out of the features; pass --key-column {name} if it names the items, "
            f"--text-column {name} if it is prose, or --categorical force to one-hot encode it")  # fmt: skip
