"""How many classes a project had labelled after each round: (labels, classes seen) per round.

    .venv/bin/python studies/benchmark/classes_seen.py DB_URL PROJECT [PROJECT ...]

e.g. after `activebayes demo --out DIR`: `classes_seen.py sqlite:///DIR/study.db default-s0 random-s0`.
"""

from __future__ import annotations

import sys

from activebayes.store import PoolStore


def classes_seen(store: PoolStore, project: str) -> list[tuple[int, int]]:
    """(labels, distinct labels) after each round of `project`, from its answered queries."""
    labels: list[str] = []
    seen = []
    for rnd in store.rounds(project):
        labels += [q.value for q in store.queries(project, rnd.number) if q.value is not None]
        seen.append((len(labels), len(set(labels))))
    return seen


if __name__ == "__main__":
    with PoolStore(sys.argv[1]) as db:
        for name in sys.argv[2:]:
            print(name, " ".join(f"{n}:{c}" for n, c in classes_seen(db, name)))
