"""How a table's known labels fall among the classes, for `pool add`'s notes: a class so rare
that accuracy hides it, and a class whose every labelled row went to the test split (the pool
holds none of it to learn from).

    rare_class_note(labels[candidates])                 # "the class 'fraud' holds 1 of the 200 labels (0.5 %): ..."
    classes_only_in_test(labels, pool_rows, test_rows)  # ["fraud"]
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

RARE_SHARE = 0.02  # a class under 2 % of the labels: a model that never predicts it is 98 % accurate


def rare_class_note(labels: Sequence[str]) -> str | None:
    """A note naming the rarest class of the non-empty `labels` [L] when its share is under
    RARE_SHARE (two classes or more): the accuracy of always answering the most frequent class,
    1 − (the other classes' share), is what accuracy is to be read against; None otherwise."""
    counts = Counter(s for s in (str(v).strip() for v in labels) if s)
    if len(counts) < 2:
        return None
    total = sum(counts.values())
    (rare, n), (common, m) = min(counts.items(), key=lambda kv: (kv[1], kv[0])), counts.most_common(1)[0]
    if n / total >= RARE_SHARE:
        return None
    return (f"the class {rare!r} holds {n} of the {total} labels ({100 * n / total:.1f} %): answering {common!r} always is "
            f"{100 * m / total:.1f} % accurate, so read the accuracy against that")


def classes_only_in_test(labels: np.ndarray, pool_rows: np.ndarray, test_rows: np.ndarray) -> list[str]:
    """The classes of `labels` [N] (text; "" is no label) that occur on `test_rows` and on no row
    of `pool_rows`: every labelled row of theirs went to the test split, in sorted order."""
    pooled = {str(v).strip() for v in labels[pool_rows].tolist()}
    return sorted({str(v).strip() for v in labels[test_rows].tolist()} - pooled - {""})
