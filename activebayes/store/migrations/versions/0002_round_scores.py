"""Add round_scores: every candidate's acquisition score of a round, as packed arrays.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02

An additive change: existing projects, items, rounds, queries and observations are untouched,
and rounds recorded before this revision simply have no row here.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "round_scores",
        sa.Column(
            "round_id", sa.Integer(), sa.ForeignKey("rounds.id", ondelete="CASCADE"), primary_key=True, nullable=False
        ),
        sa.Column("n_candidates", sa.Integer(), nullable=False),
        sa.Column("item_ids", sa.LargeBinary(), nullable=False),
        sa.Column("scores", sa.LargeBinary(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("round_scores")
