"""The database of an activebayes study: schema (`models`), data access (`project_access`,
`item_access`, `label_access`, `round_access`, `query_access`), opening (`engine`), schema
versions (`schema_version`), round locks (`round_lock`), and the one class that opens and writes
it, `PoolStore` (`store`; SQLite embedded default, PostgreSQL by URL), whose reading and writing
methods are grouped by area in `project_methods`, `round_methods` and `labelling_methods`."""

from activebayes.store.models import RoundStatus, RoundStep
from activebayes.store.store import PoolStore, ProjectInfo, QueryInfo, RoundInfo, alembic_config

__all__ = ["PoolStore", "ProjectInfo", "QueryInfo", "RoundInfo", "RoundStatus", "RoundStep", "alembic_config"]
