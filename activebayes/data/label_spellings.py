"""Labels that are one answer spelled several ways ('Yes', 'yes', 'YES ', 'y es', '1' and '1.0'):
grouped by `spelling_key` (the label without spaces, case-folded, a whole number without its
'.0'), each group read as one class when
`pool add --merge-label-spellings` asks.

    merged_spellings(["Yes", "yes", "Yes", "no"])      # {"yes": "Yes"}: the most frequent spelling
    merged_spellings(["YES", "no"], classes=["Yes", "no"])   # {"YES": "Yes"}: a project's class
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np


_WHOLE_AS_FLOAT = re.compile(r"^([+-]?\d+)\.0+$")  # 1.0: a whole number as a float column writes it


def spelling_key(label: str) -> str:
    """What two spellings of one answer share: the label without spaces, case-folded, and a whole
    number without the decimals a float column gives it ('1.0' as '1', as pandas writes the
    integer labels of a column with a gap)."""
    key = "".join(label.split()).casefold()
    whole = _WHOLE_AS_FLOAT.match(key)
    return whole.group(1) if whole else key


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
