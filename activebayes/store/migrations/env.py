"""Alembic environment for the activebayes store.

Configured programmatically by `activebayes.store.schema_version.migrate` (no alembic.ini): the caller
passes an open SQLAlchemy connection, already inside a transaction, as
`config.attributes["connection"]`; migrations run on it, so the schema change commits or rolls
back with the caller's transaction. Offline (SQL script) mode is not supported.
"""

from __future__ import annotations

from alembic import context

from activebayes.store.models import Base

config = context.config
connection = config.attributes.get("connection")
if connection is None or context.is_offline_mode():
    raise RuntimeError("activebayes migrations run only through PoolStore (an open connection is required)")

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    transactional_ddl=True,
)
with context.begin_transaction():
    context.run_migrations()
