"""Add queries.probability and item_leases.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-27

Two additive changes:
- `queries.probability`: the probability with which a stochastic acquisition drew the item at
  its draw (power, softmax, softrank, a random share, a random round); NULL for a deterministic
  top-k query and for queries recorded before this revision. The unbiased (LURE) estimates of
  pool accuracy are built from it.
- `item_leases`: which labeller holds an item for a short while, so that two labellers of the
  labelling page are not shown the same item at once. A lease is advisory: answers are never
  refused for the lack of one.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("queries", sa.Column("probability", sa.Float(), nullable=True))
    op.create_table(
        "item_leases",
        sa.Column("item_id", sa.Integer(), sa.ForeignKey("items.id", ondelete="CASCADE"), primary_key=True, nullable=False),
        sa.Column("labeller", sa.String(200), primary_key=True, nullable=False),
        sa.Column("project_id", sa.Integer(), sa.ForeignKey("projects.id", ondelete="CASCADE"), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_item_leases_project", "item_leases", ["project_id", "expires_at"])


def downgrade() -> None:
    op.drop_index("ix_item_leases_project", table_name="item_leases")
    op.drop_table("item_leases")
    with op.batch_alter_table("queries") as batch:  # SQLite cannot drop a column in place
        batch.drop_column("probability")
