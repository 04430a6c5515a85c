"""The store's bulk reads (`activebayes.store.bulk_sql.column_arrays`: whole columns joined by
the database and parsed by numpy) on SQLite and (when ACTIVEBAYES_TEST_PG_URL is set)
PostgreSQL, against the same selects row by row."""

from __future__ import annotations

import numpy as np
from sqlalchemy import select

from activebayes.store import PoolStore
from activebayes.store.models import Item, Observation, Project


def test_bulk_reads_in_spans_match_a_row_by_row_select(db_url, monkeypatch):
    """candidates, items and the counts read in bulk (`column_arrays`, several spans here) equal
    the same selects row by row: labelled consumable items dropped, reusable ones kept, another
    project's and the test split's items left out, a key holding the text separator read whole."""
    from activebayes.store import bulk_sql

    monkeypatch.setattr(bulk_sql, "SPAN", 7)
    with PoolStore(db_url) as store:
        store.create_project("other", classes=[0, 1])
        store.add_items("other", rows=np.arange(5))
        store.create_project("p", classes=[0, 1])
        keys = [f"k{i}" for i in range(40)]
        keys[13] = "k13\x1fwith a separator"
        store.add_items("p", rows=np.arange(30)[::-1].copy(), keys=keys[:30])
        store.add_items("p", rows=np.arange(10)[::-1].copy(), keys=keys[30:], split="test")
        store.add_items("p", rows=[100, 101], keys=["reuse-a", "reuse-b"], consumable=False)
        store.record_observations("p", [(keys[3], 1), (keys[13], 0), ("reuse-a", 1), (keys[31], 0)], who="t", source="t")
        with store.transaction(write=False) as s:
            pid = s.scalar(select(Project.id).where(Project.name == "p"))
            every = s.execute(select(Item.id, Item.row, Item.key, Item.split, Item.consumable).where(Item.project_id == pid).order_by(Item.id)).all()
            labelled = set(s.scalars(select(Observation.item_id)))
        pool = [r for r in every if r.split == "pool"]
        expected = [(r.id, r.row) for r in pool if not r.consumable or r.id not in labelled]
        ids, rows = store.candidates("p")
        assert list(zip(ids.tolist(), rows.tolist())) == expected and ids.dtype == rows.dtype == np.int64
        assert store.count_candidates("p") == len(expected) == 30
        assert store.count_labelled("p") == 3 and store.count_labelled("p", split="test") == 1
        ids, rows, found = store.items("p")
        assert (ids.tolist(), rows.tolist(), found) == ([r.id for r in every], [r.row for r in every], [r.key for r in every])
        ids, rows, found = store.items("p", split="test", keys=[keys[35], "nope", keys[3], keys[31]])
        assert found == [keys[31], keys[35]] and rows.tolist() == [8, 4]
        ids, rows, none = store.items("p", with_keys=False)
        assert (ids.tolist(), rows.tolist(), none) == ([r.id for r in every], [r.row for r in every], [])
        assert store.items("p", split="eval")[0].shape == (0,)


def test_a_bulk_import_leaves_postgresql_statistics_of_its_rows(pg_url, tmp_path):
    """PostgreSQL plans by its statistics: a pool imported and not yet analysed reads as empty, and
    the labels' join then runs as a nested loop (minutes on a 200,000-row table). `import_pool`
    and `add_items` refresh them (ANALYZE): the planner's row counts are the rows written."""
    from sqlalchemy import text

    (tmp_path / "pool.csv").write_text("x\n")
    with PoolStore(pg_url) as store:
        store.create_project("p", classes=[0, 1])
        store.import_pool("p", tmp_path / "pool.csv", pool_rows=np.arange(300), test_rows=np.arange(300, 400),
                          test_keys=[str(i) for i in range(300, 400)], observations=[(str(i), i % 2) for i in range(300, 400)])  # fmt: skip
        tuples = "SELECT reltuples FROM pg_class WHERE oid = to_regclass(:t)"
        with store.transaction(write=False) as s:
            assert [s.scalar(text(tuples), {"t": t}) for t in ("items", "observations")] == [400, 100]
        store.add_items("p", rows=np.arange(400, 450))
        with store.transaction(write=False) as s:
            assert s.scalar(text(tuples), {"t": "items"}) == 450


def test_migrate_analyses_a_postgresql_database_filled_without_statistics(pg_url, monkeypatch, tmp_path):
    """A pool imported before imports ran ANALYZE reads as empty to the planner until autovacuum
    (kept off here) gets to it; `activebayes migrate` refreshes every table's statistics, also on
    a database whose schema is up to date."""
    import json

    from sqlalchemy import text

    from activebayes.store import bulk_sql, pool_append, project_methods
    from activebayes_cli.main import app
    from cli_checks import run

    for module in (bulk_sql, pool_append, project_methods):
        monkeypatch.setattr(module, "analyze", lambda session, *tables: None)  # as imports were before
    stats = "SELECT c.reltuples, s.last_analyze FROM pg_class c JOIN pg_stat_user_tables s ON s.relid = c.oid WHERE c.oid = to_regclass(:t)"
    (tmp_path / "pool.csv").write_text("x\n")
    with PoolStore(pg_url) as store:
        with store.transaction() as s:
            for table in ("items", "observations"):
                s.execute(text(f"ALTER TABLE {table} SET (autovacuum_enabled = false)"))
        store.create_project("p", classes=[0, 1])
        store.import_pool("p", tmp_path / "pool.csv", pool_rows=np.arange(300), test_rows=np.arange(300, 400),
                          test_keys=[str(i) for i in range(300, 400)], observations=[(str(i), i % 2) for i in range(300, 400)])  # fmt: skip
        with store.transaction(write=False) as s:
            before = [tuple(s.execute(text(stats), {"t": t}).one()) for t in ("items", "observations")]
    assert all(tuples <= 0 and analysed is None for tuples, analysed in before)  # never analysed: -1 (or 0) rows to the planner
    monkeypatch.undo()
    result = run("--db", pg_url, "--json", "migrate")
    assert result.exit_code == 0, result.output
    with PoolStore(pg_url) as store, store.transaction(write=False) as s:
        after = [tuple(s.execute(text(stats), {"t": t}).one()) for t in ("items", "observations")]
    assert [tuples for tuples, _ in after] == [400, 100] and all(analysed is not None for _, analysed in after)
    done = json.loads(result.stdout)
    assert not done["upgraded"] and {"items", "observations", "projects"} <= set(done["analyzed"])
    assert "Refreshed the planner's statistics of its" in run("--db", pg_url, "migrate").stdout
