"""A class so rare that accuracy hides it, and one whose every labelled row went to the test
split (`activebayes.data.class_balance`, `pool add`'s notes): once said nowhere, so 99.5 %
test accuracy on 200 rows with one 'rare' read as a model that works."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from activebayes.data.class_balance import classes_only_in_test, rare_class_note
from cli_checks import ok


def test_rare_class_note_rule():
    assert rare_class_note(["common"] * 199 + ["rare"]) == (
        "the class 'rare' holds 1 of the 200 labels (0.5 %): answering 'common' always is 99.5 % accurate, so read the accuracy against that")
    assert rare_class_note(["a"] * 49 + ["b"]) is None  # 2 %: not under it
    assert rare_class_note(["a"] * 98 + ["b", "", " "]) is not None  # empty labels are no labels: 1 of 99
    assert rare_class_note(["a"] * 100) is None and rare_class_note([]) is None


def test_classes_only_in_test_rule():
    labels = np.asarray(["a", "b", "a", "c", "", "c"])
    assert classes_only_in_test(labels, np.asarray([0, 2, 3, 4]), np.asarray([1, 5])) == ["b"]
    assert classes_only_in_test(labels, np.asarray([0, 1, 3]), np.asarray([2, 4])) == []


def test_pool_add_names_a_rare_class_and_one_left_to_the_test_split(cli_db):
    """The split is seeded: a seed that sends the one 'rare' row (row 3) to the test split gets the
    second note, one that keeps it in the pool does not; both get the first."""
    from activebayes_cli._pool_import import split_rows

    rows = "".join(f"k{i},{i % 7},{'rare' if i == 3 else 'common'}\n" for i in range(200))
    Path("t.csv").write_text("id,x,label\n" + rows)
    in_test = {seed: 3 in split_rows(200, 0.5, seed)[1] for seed in range(20)}
    for went in (True, False):
        seed = next(s for s, t in in_test.items() if t is went)
        ok("init", "--name", f"t{seed}")
        said = " ".join(ok("--json", "--project", f"t{seed}", "pool", "add", "t.csv", "--test-fraction", "0.5", "--seed", str(seed)).stderr.split())
        assert "the class 'rare' holds 1 of the 200 labels (0.5 %): answering 'common' always is 99.5 % accurate" in said
        assert ("every labelled row of the class 'rare' went to the test split, so the pool holds none to learn from" in said) is went
