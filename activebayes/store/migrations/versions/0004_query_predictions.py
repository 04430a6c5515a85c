"""Add queries.prediction: the round's posterior predictive for each queried item.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-26

An additive change: a nullable JSON column; queries recorded before it read as None (no
prediction), exactly what a cold-start round records.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("queries", sa.Column("prediction", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("queries") as batch:  # SQLite cannot drop a column in place
        batch.drop_column("prediction")
