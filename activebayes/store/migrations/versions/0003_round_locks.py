"""Add round_locks: which process runs a round of a project now (`PoolStore.round_lock`).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-26

An additive change: a new, empty table. On SQLite its row is the lock; on PostgreSQL the lock
is a session advisory lock and the row only names its holder.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "round_locks",
        sa.Column(
            "project_id", sa.Integer(), sa.ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True, nullable=False
        ),
        sa.Column("token", sa.String(32), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("heartbeat", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("round_locks")
