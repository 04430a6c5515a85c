"""Labels that are one answer spelled several ways ('Yes', 'yes', 'YES ', 'y es'): grouped by
`spelling_key` (the label without spaces, case-folded), each group read as one class when
`pool add --merge-label-spellings` asks.

    merged_spellings(["Yes", "yes", "Yes", "no"])      # {"yes": "Yes"}: the most frequent spelling
    merged_spellings(["YES", "no"], classes=["Yes", "no"])   # {"YES": "Yes"}: a project's class
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np


def spelling_key(label: str) -> str:
    """What two spellings of one answer share: the label without spaces, case-folded."""
    return "".join(label.split()).casefold()


def merged_spellings(labels: Sequence[str], classes: Sequence[str] | None = None) -> dict[str, str]:
    """{spelling: the class it is read as} for every stripped, non-empty label that has another
    spelling among `labels` (or `classes`) with the same `spelling_key`. A group's class is the
    project's class of that key when `classes` has one, else its most frequent spelling (on a
    tie, the first in sorted order). Labels without another spelling are not in the result."""
    counts = Counter(s for s in (str(v).strip() for v in labels) if s)
    groups: dict[str, list[str]] = {}
    for spelling in sorted(counts):
        groups.setdefault(spelling_key(spelling), []).append(spelling)
    named = {spelling_key(c): c for c in classes or ()}
    merged = {}
    for key, spellings in groups.items():
        target = named.get(key) or max(spellings, key=counts.__getitem__)  # sorted: a tie goes to the first
        merged.update({s: target for s in spellings if s != target})
    return merged


def spelled_as(labels: np.ndarray, spellings: Mapping[str, str]) -> np.ndarray:
    """[N] `labels` as text, each spelling in `spellings` (`merged_spellings`) read as its class."""
    return np.asarray([spellings.get(v.strip(), v) for v in labels.astype(str).tolist()])
