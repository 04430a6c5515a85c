"""The keys that answer each class on the labelling page.

    class_keys(["cat", "dog", "owl"])   # (("cat", "1"), ("dog", "2"), ("owl", "3"))
    class_keys(["0", "1"])              # (("0", "0"), ("1", "1")): each digit answers its own class

Keys 1-9 and 0 answer the first ten classes in the project's order, except when every class is
named by a single digit (digits 0-9, a 0/1 task): then a digit answers the class of that name,
for key 1 answering class "0" is a trap a labeller falls into on the first item. Classes beyond
the tenth have no key (the page's find field reaches them).
"""

from __future__ import annotations

from collections.abc import Sequence

DIGITS = "1234567890"  # the keys of the first ten classes, in order


def digit_named(classes: Sequence[str]) -> bool:
    """Whether every class is named by one digit (so the digit keys mean those classes)."""
    return len(classes) > 0 and all(len(str(c)) == 1 and str(c) in DIGITS for c in classes)


def class_keys(classes: Sequence[str]) -> tuple[tuple[str, str | None], ...]:
    """(class, its key or None) of each class, in the project's order (class names as text)."""
    names = [str(c) for c in classes]
    if digit_named(names):
        return tuple((c, c) for c in names)
    return tuple((c, DIGITS[i] if i < len(DIGITS) else None) for i, c in enumerate(names))
