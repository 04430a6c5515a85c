"""`PoolStore`'s methods for labelling (`activebayes label` and the labelling page): checked
appends of labels, undo, who answered what, and item leases (the class that opens the database is
`activebayes.store.store.PoolStore`; it inherits these).

Each method is one transaction (`PoolStore.transaction`); the work inside it is done by the access
functions of `label_access` and `lease_access`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from sqlalchemy.orm import Session

from activebayes.store import label_access, lease_access, project_access, round_access


class LabellingMethods:
    """Checked label appends and undo, answers per round and labeller, and item leases."""

    transaction: Callable[..., AbstractContextManager[Session]]  # `PoolStore.transaction`

    # ---- labelling: checked appends and undo (`activebayes label`) ------------------------
    def label_states(self, name: str, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """For each of `keys` that is an item: {"item_id", "split" ("pool"|"test"), "consumable",
        "label" (its current label, None when unlabelled)}; unknown keys are left out."""
        with self.transaction(write=False) as s:
            return label_access.label_states(s, project_access.get_project(s, name).id, keys)

    def record_labels(
        self,
        name: str,
        rows: Sequence[tuple[str, Any, int | None]],
        *,
        who: str,
        source: str,
        expected: dict[str, str | None],
        return_ids: bool = True,
        relabel: bool = False,
        per_labeller: bool = False,
    ) -> tuple[list[int | None], dict[str, tuple[str | None, str | None]]]:
        """Append `(key, label, round number or None)` rows in ONE transaction, as if after every
        writer that changed a label since the caller read `expected[key]` (with `label_states`):
        a row whose label the item has already is a repeat and is not written; a row whose item
        another writer relabelled meanwhile is refused unless `relabel` (`per_labeller`: each
        labeller's answer is their own). See `label_access.append_checked`.

        Returns (per row its new observation's id, None for a repeat — [] with `return_ids=False`
        — and {}); or ([], {key: (expected, now)}) having written nothing.
        """
        with self.transaction() as s:
            project = project_access.get_project(s, name)
            round_ids: dict[int, int] = {}
            resolved = []
            for key, value, number in rows:
                if number is not None and number not in round_ids:
                    round_ids[number] = round_access.get_round(s, project, number).id
                resolved.append((key, value, round_ids[number] if number is not None else None))
            return label_access.append_checked(s, project, resolved, expected=expected, who=who, source=source,
                                               return_ids=return_ids, relabel=relabel, per_labeller=per_labeller)  # fmt: skip

    def retract_observation(self, name: str, observation_id: int) -> str:
        """Take back an answer just given (the prompt's `u`): delete observation `observation_id`,
        returning its item's key, so the item's label is what it was before. Refused (StoreError)
        once the answer's round is no longer waiting for answers. See `label_access.delete_observation`."""
        with self.transaction() as s:
            return label_access.delete_observation(s, project_access.get_project(s, name), int(observation_id))

    def round_answers(self, name: str, number: int) -> dict[str, list[tuple[str, str]]]:
        """{key: [(who, value)] in recording order} of the answers recorded for round `number`."""
        with self.transaction(write=False) as s:
            return label_access.round_answers(s, round_access.get_round(s, project_access.get_project(s, name), number).id)

    def answer_counts(self, name: str) -> list[tuple[str, int, Any, Any]]:
        """(who, answers, first, last) of each labeller of the project, most answers first."""
        with self.transaction(write=False) as s:
            return label_access.answer_counts(s, project_access.get_project(s, name).id)

    # ---- item leases of the labelling page (revision 0005; see `lease_access`) -------------------
    def lease_item(self, name: str, labeller: str, item_ids: Sequence[int], *, seconds: float, holders: int = 1,
                   round_number: int | None = None, waiting: bool = False) -> int | None:  # fmt: skip
        """Lease `labeller` the first of `item_ids` that fewer than `holders` others hold and that
        is still open in round `round_number` (its id; see `lease_access.lease_item`). With
        `waiting`, RoundNotWaitingError, nothing leased, when that round waits no longer."""
        with self.transaction() as s:
            project = project_access.get_project(s, name)
            find = round_access.waiting_round if waiting else round_access.get_round
            round_id = find(s, project, round_number).id if round_number is not None else None
            return lease_access.lease_item(s, project.id, labeller, item_ids, seconds=seconds, holders=holders, round_id=round_id)

    def release_leases(self, name: str, labeller: str) -> None:
        """End every lease `labeller` holds on the project's items (a page or prompt that stops)."""
        with self.transaction() as s:
            lease_access.release_leases(s, project_access.get_project(s, name).id, labeller)
