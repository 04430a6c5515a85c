"""The database of an activebayes study: schema (`models`), data access (`access`), and the one
class that opens and writes it, `PoolStore` (SQLite embedded default, PostgreSQL by URL)."""

from activebayes.store.models import RoundStatus, RoundStep
from activebayes.store.store import PoolStore, ProjectInfo, QueryInfo, RoundInfo, alembic_config

__all__ = ["PoolStore", "ProjectInfo", "QueryInfo", "RoundInfo", "RoundStatus", "RoundStep", "alembic_config"]
