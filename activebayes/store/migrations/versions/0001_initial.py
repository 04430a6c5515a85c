"""Create projects, items, rounds, queries and observations.

Revision ID: 0001
Revises:
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _created_at() -> sa.Column:
    return sa.Column("created_at", sa.DateTime(timezone=True), nullable=False)


def upgrade() -> None:
    op.create_table(
        "projects",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False, unique=True),
        sa.Column("task", sa.String(32), nullable=False),
        sa.Column("classes", sa.JSON(), nullable=True),
        sa.Column("data_path", sa.Text(), nullable=True),
        sa.Column("data_format", sa.String(32), nullable=True),
        sa.Column("data_sha256", sa.String(64), nullable=True),
        _created_at(),
        sa.Column("settings", sa.JSON(), nullable=False),
    )
    op.create_table(
        "items",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("project_id", sa.Integer(), sa.ForeignKey("projects.id", ondelete="CASCADE"), nullable=False),
        sa.Column("key", sa.String(200), nullable=False),
        sa.Column("row", sa.Integer(), nullable=False),
        sa.Column("consumable", sa.Boolean(), nullable=False),
        sa.Column("split", sa.String(8), nullable=False),
        sa.UniqueConstraint("project_id", "key", name="uq_items_project_key"),
    )
    op.create_index("ix_items_project_split", "items", ["project_id", "split"])
    op.create_table(
        "rounds",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("project_id", sa.Integer(), sa.ForeignKey("projects.id", ondelete="CASCADE"), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("posterior", sa.String(200), nullable=False),
        sa.Column("posterior_settings", sa.JSON(), nullable=False),
        sa.Column("acquisition", sa.String(200), nullable=False),
        sa.Column("acquisition_settings", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("failure_reason", sa.Text(), nullable=True),
        sa.Column("labelled_count", sa.Integer(), nullable=False),
        sa.Column("metrics", sa.JSON(), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("timings", sa.JSON(), nullable=False),
        _created_at(),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("project_id", "number", name="uq_rounds_project_number"),
    )
    op.create_table(
        "queries",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("round_id", sa.Integer(), sa.ForeignKey("rounds.id", ondelete="CASCADE"), nullable=False),
        sa.Column("item_id", sa.Integer(), sa.ForeignKey("items.id", ondelete="CASCADE"), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("rank", sa.Integer(), nullable=False),
        sa.UniqueConstraint("round_id", "item_id", name="uq_queries_round_item"),
        sa.UniqueConstraint("round_id", "rank", name="uq_queries_round_rank"),
    )
    op.create_table(
        "observations",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("item_id", sa.Integer(), sa.ForeignKey("items.id", ondelete="CASCADE"), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("who", sa.String(200), nullable=False),
        sa.Column("source", sa.String(64), nullable=False),
        sa.Column("round_id", sa.Integer(), sa.ForeignKey("rounds.id", ondelete="SET NULL"), nullable=True),
        _created_at(),
    )
    op.create_index("ix_observations_item", "observations", ["item_id", "id"])


def downgrade() -> None:
    op.drop_index("ix_observations_item", table_name="observations")
    op.drop_table("observations")
    op.drop_table("queries")
    op.drop_table("rounds")
    op.drop_index("ix_items_project_split", table_name="items")
    op.drop_table("items")
    op.drop_table("projects")
