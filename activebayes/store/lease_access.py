"""Item leases of the labelling page (revision 0005): which labeller is shown which item, and
until when, so that two labellers are not shown the same item at once. Each function takes an
open `Session` inside a write transaction and never commits.

A lease is advisory (an answer is never refused for the lack of one) and short: an expired lease
is as good as none, and is deleted by the next `lease_item` of its project.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from datetime import timedelta

from sqlalchemy import delete, insert, or_, select
from sqlalchemy.orm import Session

from activebayes.store.models import ItemLease, Observation, Project, utcnow

FEW_ITEMS = 100  # a list this short is looked up item by item (an IN list); a longer one reads the round's answers


def lease_item(session: Session, project_id: int, labeller: str, item_ids: Sequence[int], *, seconds: float, holders: int = 1,
               round_id: int | None = None) -> int | None:  # fmt: skip
    """Lease to `labeller` the first of `item_ids` that fewer than `holders` other labellers hold
    now, for `seconds`; their lease on any other item of the project ends. With `round_id`, an
    item already answered in that round by `labeller`, or by `holders` labellers, is passed over
    too (the caller's list may be a moment old). Returns its id, or None when every one is held
    or answered (or `item_ids` is empty; then the labeller holds nothing).

    Concurrent calls for one project serialise (PostgreSQL: the project's row is locked FOR NO
    KEY UPDATE; SQLite: write transactions are BEGIN IMMEDIATE), so two labellers never take the
    last free place on an item at once."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(select(Project.id).where(Project.id == project_id).with_for_update(key_share=True)).all()
    now = utcnow()
    expired_or_own = or_(ItemLease.expires_at <= now, ItemLease.labeller == labeller)  # the labeller's own: replaced below
    session.execute(delete(ItemLease).where(ItemLease.project_id == project_id, expired_or_own))
    others = select(ItemLease.item_id).where(ItemLease.project_id == project_id, ItemLease.labeller != labeller)
    held = collections.Counter(session.scalars(others))
    answered: dict[int, set[str]] = collections.defaultdict(set)
    if round_id is not None:
        answers = select(Observation.item_id, Observation.who).where(Observation.round_id == round_id)
        if len(item_ids) <= FEW_ITEMS:  # the prompt's one item: its answers, not the whole round's
            answers = answers.where(Observation.item_id.in_([int(i) for i in item_ids]))
        for item, who in session.execute(answers):
            answered[item].add(who)
    free = (int(i) for i in item_ids if held[int(i)] < holders and labeller not in answered[int(i)] and len(answered[int(i)]) < holders)
    chosen = next(free, None)
    if chosen is not None:
        session.execute(insert(ItemLease.__table__), {"item_id": chosen, "labeller": labeller, "project_id": project_id,
                                                     "expires_at": now + timedelta(seconds=seconds)})  # fmt: skip
    return chosen


def release_leases(session: Session, project_id: int, labeller: str) -> None:
    """End every lease `labeller` holds in the project."""
    session.execute(delete(ItemLease).where(ItemLease.project_id == project_id, ItemLease.labeller == labeller))
