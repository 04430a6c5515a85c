"""PoolStore on SQLite and (when ACTIVEBAYES_TEST_PG_URL is set) PostgreSQL: every table round
trip, migrations, version checks, labels, changed data files, concurrency."""

from __future__ import annotations

import multiprocessing as mp
import subprocess
import sys

import numpy as np
import pytest
from alembic import command
from sqlalchemy import inspect, select, text

from activebayes.data import sha256_file
from activebayes.errors import DataError, StoreError
from activebayes.store import PoolStore, alembic_config
from activebayes.store.models import Item, Observation, Project, Query, Round
from activebayes.store.schema_version import HEAD_REVISION

TABLES = {"projects", "items", "rounds", "queries", "round_scores", "observations", "round_locks", "alembic_version"}
HEAD = "0005"


@pytest.fixture
def store_url(db_url):
    return db_url


@pytest.fixture
def store(store_url):
    s = PoolStore(store_url)
    yield s
    s.close()


@pytest.fixture
def data_file(tmp_path):
    path = tmp_path / "pool.npy"
    np.save(path, np.arange(40, dtype=np.float32).reshape(10, 4))
    return path


def _alembic(store: PoolStore, action, revision: str) -> None:
    cfg = alembic_config()
    with store._write_engine.begin() as conn:
        cfg.attributes["connection"] = conn
        action(cfg, revision)


def test_head_revision_is_the_newest_migration_and_an_open_at_head_loads_no_alembic(store_url):
    from alembic.script import ScriptDirectory

    assert HEAD_REVISION == ScriptDirectory.from_config(alembic_config()).get_current_head() == HEAD
    with PoolStore(store_url):
        pass  # the database is at the head now
    probe = "import sys; from activebayes.store import PoolStore; PoolStore(sys.argv[1]).close(); print('alembic' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe, store_url], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_migration_from_empty_creates_every_table(store_url):
    with PoolStore(store_url) as store:
        assert store.schema_revision() == HEAD
        with store.engine.connect() as conn:
            assert TABLES <= set(inspect(conn).get_table_names())
            if conn.dialect.name == "sqlite":
                assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
                assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
                assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 1000
    with PoolStore(store_url) as again:  # opening an up-to-date database changes nothing
        assert again.schema_revision() == HEAD and again.projects() == []


def test_older_schema_is_upgraded_on_open_and_newer_refused(store_url):
    store = PoolStore(store_url)
    _alembic(store, command.downgrade, "base")  # an "older" database: no tables, version base
    store.close()
    with pytest.raises(StoreError, match="older"):
        PoolStore(store_url, upgrade=False)
    with PoolStore(store_url) as store:
        assert store.schema_revision() == HEAD
        store.create_project("p", classes=["a", "b"])
        with store.transaction() as s:
            s.execute(text("UPDATE alembic_version SET version_num = 'ffff9999'"))
    with pytest.raises(StoreError, match="newer than this activebayes knows.*upgrade activebayes"):
        PoolStore(store_url)


def test_round_trip_of_every_table(store, data_file):
    info = store.create_project("p", task="classification", classes=range(3), data_path=data_file,
                                settings={"label_column": None, "note": "é"})  # fmt: skip
    assert info.classes == ["0", "1", "2"] and info.data_format == "npy"
    assert info.data_sha256 == sha256_file(data_file) and info.settings == {"label_column": None, "note": "é"}
    assert store.project("p") == info
    assert store.add_items("p", rows=range(8), keys=[f"k{i}" for i in range(8)]) == 8
    assert store.add_items("p", rows=[8, 9], split="test", consumable=False) == 2
    assert store.count_items("p") == 10 and store.count_items("p", split="test") == 2
    ids, rows = store.candidates("p")
    assert rows.tolist() == list(range(8))
    assert store.record_observations("p", [("k0", 1), ("k1", "2")], who="ann", source="cli") == 2
    rnd = store.start_round("p", posterior="mc-dropout", acquisition="bald", seed=7,
                            posterior_settings={"epochs": 3}, acquisition_settings={"k": 2})  # fmt: skip
    assert (rnd.number, rnd.status, rnd.labelled_count, rnd.seed) == (1, "started", 2, 7)
    store.advance_round("p", 1, "fitted", metrics={"accuracy": 0.5}, timings={"fit_s": 1.5})
    store.record_queries("p", 1, ids[2:4].tolist(), [0.9, 0.4], timings={"score_s": 0.25})
    store.advance_round("p", 1, "queried")
    assert store.record_answers("p", 1, [("k2", 0), ("k3", None)], who="bob", source="oracle", complete=True) == 1
    store.advance_round("p", 1, "done")
    (got,) = store.rounds("p")
    assert (got.posterior, got.posterior_settings, got.acquisition, got.acquisition_settings) == (
        "mc-dropout", {"epochs": 3}, "bald", {"k": 2})  # fmt: skip
    assert got.status == "done" and got.metrics == {"accuracy": 0.5}
    assert got.timings == {"fit_s": 1.5, "score_s": 0.25}
    queries = store.queries("p", 1)
    assert [(q.key, q.row, q.score, q.rank, q.value) for q in queries] == [("k2", 2, 0.9, 0, "0"), ("k3", 3, 0.4, 1, None)]
    obs = store.observations("p")
    assert [(o["key"], o["value"], o["who"], o["source"], o["round_id"] is not None) for o in obs] == [
        ("k0", "1", "ann", "cli", False), ("k1", "2", "ann", "cli", False), ("k2", "0", "bob", "oracle", True)]  # fmt: skip
    assert all(o["created_at"] is not None for o in obs)
    rows, keys, values = store.labels("p")
    assert (rows.tolist(), keys, values) == ([0, 1, 2], ["k0", "k1", "k2"], ["1", "2", "0"])
    with store.transaction(write=False) as s:  # the ORM models read the same rows
        assert s.scalar(select(Project.task)) == "classification"
        assert s.scalars(select(Item.split).where(Item.row == 9)).one() == "test"
        assert s.scalars(select(Item.consumable).where(Item.row == 9)).one() is False
        assert s.scalar(select(Round.failure_reason)) is None and s.scalar(select(Query.rank).limit(1)) == 0
        assert len(s.scalars(select(Observation)).all()) == 3
    store.delete_project("p")
    assert store.projects() == []


def test_duplicate_and_conflicting_labels(store):
    store.create_project("p", classes=["cat", "dog"])
    store.add_items("p", rows=range(4))
    assert store.record_observations("p", [("0", "cat")], who="ann") == 1
    assert store.record_observations("p", [("0", "cat"), ("0", "cat")], who="ann") == 0  # same again: harmless
    assert store.record_observations("p", [("0", "cat")], who="bob") == 1  # another person's vote is kept
    assert store.record_observations("p", [("0", "dog")], who="ann") == 1  # a changed mind: latest wins
    assert store.labels("p")[2] == ["dog"]
    assert store.record_observations("p", [("0", "cat")], who="ann") == 1  # and can change back
    assert store.labels("p")[2] == ["cat"]
    before = store.observations("p")
    with pytest.raises(DataError, match="'1' was given two different labels"):
        store.record_observations("p", [("2", "cat"), ("1", "cat"), ("1", "dog")], who="ann")
    with pytest.raises(DataError, match="not items of project 'p': 'nine'"):
        store.record_observations("p", [("2", "cat"), ("nine", "cat")], who="ann")
    with pytest.raises(DataError, match="expected one of the classes.*got 'cow'"):
        store.record_observations("p", [("2", "cat"), ("3", "cow")], who="ann")
    assert store.observations("p") == before  # a refused batch writes nothing


def test_regression_and_design_values(store):
    store.create_project("r", task="regression")
    store.add_items("r", rows=range(2))
    store.record_observations("r", [("0", 1.5), ("1", "2")])
    assert store.labels("r")[2] == ["1.5", "2.0"]
    with pytest.raises(DataError, match="finite"):
        store.record_observations("r", [("0", float("nan"))])
    store.create_project("d", task="design")
    store.add_items("d", rows=range(3), consumable=False)
    store.record_observations("d", [("1", 1)])
    assert store.candidates("d")[1].tolist() == [0, 1, 2]  # reusable designs stay candidates
    store.start_round("d", posterior="grid", acquisition="eig", seed=0)
    store.advance_round("d", 1, "fitted")
    ids = store.candidates("d")[0]
    store.record_queries("d", 1, [int(ids[1])], [0.3], timings={})
    assert store.queries("d", 1)[0].value is None  # the earlier answer to design "1" is not this round's
    store.advance_round("d", 1, "queried")
    store.record_answers("d", 1, [("1", 0)], who="p1", source="oracle", complete=True)
    assert store.queries("d", 1)[0].value == "0"
    assert store.record_observations("d", [("1", 0)], who="p1", round_number=1) == 0  # same round: once
    store.advance_round("d", 1, "done")
    store.start_round("d", posterior="grid", acquisition="eig", seed=1)
    assert store.record_observations("d", [("1", 0)], who="p1", round_number=2) == 1  # a new trial counts


def test_changed_data_file_is_refused_naming_it(store, data_file):
    store.create_project("p", classes=range(2), data_path=data_file)
    assert store.verify_data("p") == data_file.resolve()
    np.save(data_file, np.zeros((10, 4), dtype=np.float32))
    with pytest.raises(DataError, match=r"pool\.npy.*changed since project 'p'"):
        store.verify_data("p")
    data_file.unlink()
    with pytest.raises(DataError, match=r"pool\.npy.*missing"):
        store.verify_data("p")


def test_projects_names_and_errors(store):
    with pytest.raises(StoreError, match="no project named 'x'; the database has none yet"):
        store.project("x")
    store.create_project("b", classes=[0, 1])
    store.create_project("a", task="regression")
    assert store.projects() == ["a", "b"]
    with pytest.raises(StoreError, match="no project named 'x'; the database has 'a', 'b'"):
        store.add_items("x", rows=[0])
    with pytest.raises(StoreError, match="already exists"):
        store.create_project("a", task="regression")
    with pytest.raises(StoreError, match="needs its class names"):
        store.create_project("c", task="classification")
    store.add_items("a", rows=range(3))
    store.add_items("b", rows=range(3))  # the same keys in another project are fine
    with pytest.raises(StoreError, match="duplicate"):
        store.add_items("a", rows=[1])
    assert store.count_items("a") == 3


def test_round_status_rules(store):
    store.create_project("p", classes=[0, 1])
    store.add_items("p", rows=range(4))
    store.start_round("p", posterior="x", acquisition="y", seed=0)
    with pytest.raises(StoreError, match="still 'started'"):
        store.start_round("p", posterior="x", acquisition="y", seed=0)
    with pytest.raises(StoreError, match="cannot go from status 'started' to 'done'"):
        store.advance_round("p", 1, "done")
    store.advance_round("p", 1, "failed", failure_reason="boom")
    assert store.latest_round("p").failure_reason == "boom"
    assert store.start_round("p", posterior="x", acquisition="y", seed=0).number == 2
    with pytest.raises(StoreError, match="has no round 9"):
        store.queries("p", 9)


def test_round_status_enum_stores_plain_strings_and_holds_the_resume_rule(store):
    import json

    from activebayes.store import RoundStatus as S
    from activebayes.store import RoundStep

    store.create_project("p", classes=[0, 1])
    store.add_items("p", rows=range(4))
    store.start_round("p", posterior="x", acquisition="y", seed=0)
    info = store.advance_round("p", 1, S.fitted)
    assert info.status is S.fitted and info.status == "fitted" and f"{info.status}" == "fitted"
    assert json.dumps({"status": info.status}) == '{"status": "fitted"}'
    with store.transaction(write=False) as s:  # the database holds the value, as before the enum
        assert s.execute(text("SELECT status FROM rounds")).scalar_one() == "fitted"
    assert S.next_step(None) is RoundStep.new
    assert [S.next_step(s) for s in (S.done, S.failed)] == [RoundStep.new] * 2
    assert [S.next_step(s) for s in (S.started, S.fitted, S.scored)] == [RoundStep.resume] * 3
    assert S.next_step(S.queried, 2) is RoundStep.resume and S.next_step("queried", 0) is RoundStep.close
    assert S.next_step(S.answered) is RoundStep.close
    assert [s.value for s in S if s.refits] == ["started", "fitted"] and S.queried.waiting


def test_bulk_import_in_one_transaction(store):
    store.create_project("big", classes=[0, 1])
    n = 30_000
    store.add_items("big", rows=np.arange(n))
    ids, rows = store.candidates("big")
    assert len(ids) == n and rows[-1] == n - 1 and np.all(np.diff(ids) > 0)
    with pytest.raises(StoreError):  # the last row clashes: nothing of this batch stays
        store.add_items("big", rows=np.r_[np.arange(n, n + 100), 0])
    assert store.count_items("big") == n


def _submit(url: str, worker: int, per_worker: int) -> None:
    store = PoolStore(url)
    for i in range(per_worker):
        key = str(worker * per_worker + i)
        store.record_observations("p", [(key, (worker + i) % 2)], who=f"w{worker}", source="test")
    store.close()


def test_eight_processes_label_one_sqlite_file_at_once(tmp_path):
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    per_worker = 25
    with PoolStore(url) as store:
        store.create_project("p", classes=[0, 1])
        store.add_items("p", rows=range(8 * per_worker))
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_submit, args=(url, w, per_worker)) for w in range(8)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * 8
    with PoolStore(url) as store:
        rows, keys, values = store.labels("p")
        assert len(keys) == 8 * per_worker
        expected = {str(w * per_worker + i): str((w + i) % 2) for w in range(8) for i in range(per_worker)}
        assert dict(zip(keys, values)) == expected
        assert len(store.observations("p")) == 8 * per_worker


def test_bare_path_and_missing_folder(tmp_path):
    with PoolStore(tmp_path / "plain.db") as store:
        assert store.url.startswith("sqlite:///") and store.projects() == []
    with pytest.raises(StoreError, match="does not exist"):
        PoolStore(f"sqlite:///{tmp_path / 'nope' / 'x.db'}")


def test_import_pool_is_one_transaction(store, data_file):
    store.create_project("p", classes=["0", "1"])
    with pytest.raises(DataError, match="not items of project 'p': 'zz'"):
        store.import_pool("p", data_file, pool_rows=range(8), test_rows=[8, 9], observations=[("8", 1), ("zz", 0)])
    info = store.project("p")
    assert info.data_path is None and store.count_items("p") == 0  # nothing of the failed import stays
    added = store.import_pool("p", data_file, pool_rows=range(8), test_rows=[8, 9], observations=[("8", 1), ("9", 0)],
                              who="truth", settings={"image_layout": "flat"})  # fmt: skip
    assert added == 10 and store.count_items("p", split="test") == 2 and store.count_labelled("p", split="test") == 2
    assert store.project("p").settings == {"image_layout": "flat"} and store.count_candidates("p") == 8
    with pytest.raises(StoreError, match="already has items"):
        store.attach_data("p", data_file)


# ---- every candidate's score of a round (revision 0002) -------------------------------------------
def test_round_scores_round_trip(store):
    store.create_project("p", classes=[0, 1])
    store.add_items("p", rows=range(60))
    ids, _ = store.candidates("p")
    scores = np.random.default_rng(0).random(60).astype(np.float32)
    scores[3] = np.inf  # stored as given; a report leaves it out
    store.start_round("p", posterior="x", acquisition="bald", seed=0)
    store.advance_round("p", 1, "fitted")
    top = np.argsort(-scores)[1:4]
    store.record_queries_and_scores("p", 1, ids[top].tolist(), scores[top].tolist(), timings={"score_s": 0.5},
                                    candidate_ids=ids, candidate_scores=scores)  # fmt: skip
    got_ids, got_scores = store.round_scores("p", 1)
    np.testing.assert_array_equal(got_ids, ids)
    np.testing.assert_array_equal(got_scores, scores)  # float32 exactly
    assert store.rounds("p")[0].status == "scored" and store.rounds("p")[0].timings == {"score_s": 0.5}
    assert [q.item_id for q in store.queries("p", 1)] == ids[top].tolist()
    store.advance_round("p", 1, "failed", failure_reason="stop")
    store.start_round("p", posterior="x", acquisition="random", seed=0)
    store.advance_round("p", 2, "fitted")
    store.record_queries_and_scores("p", 2, ids[:2].tolist(), [0.0, 0.0], timings={})  # no scores: none stored
    assert store.round_scores("p", 2) is None and store.scored_rounds("p") == [1]
    with pytest.raises(StoreError, match="has no round 9"):
        store.round_scores("p", 9)
    with store.transaction(write=False) as s:
        assert s.execute(text("SELECT n_candidates, length(scores) FROM round_scores")).one() == (60, 240)
    store.delete_project("p")
    with store.transaction(write=False) as s:  # deleting the project deletes its rounds' scores
        assert s.execute(text("SELECT count(*) FROM round_scores")).scalar() == 0


def test_round_scores_refused_write_nothing(store):
    store.create_project("p", classes=[0, 1])
    store.add_items("p", rows=range(5))
    ids, _ = store.candidates("p")
    store.start_round("p", posterior="x", acquisition="bald", seed=0)
    store.advance_round("p", 1, "fitted")
    with pytest.raises(DataError, match="one score per item id"):
        store.record_queries_and_scores("p", 1, [int(ids[0])], [1.0], timings={}, candidate_ids=ids, candidate_scores=[1.0])
    with pytest.raises(DataError, match="fit int32"):
        store.record_queries_and_scores("p", 1, [int(ids[0])], [1.0], timings={}, candidate_ids=[2**31], candidate_scores=[1.0])
    with pytest.raises(DataError, match="both or neither"):
        store.record_queries_and_scores("p", 1, [int(ids[0])], [1.0], timings={}, candidate_ids=ids)
    assert store.rounds("p")[0].status == "fitted" and store.queries("p", 1) == []  # one transaction: nothing stayed
    assert store.scored_rounds("p") == []


def test_queries_outside_the_round_s_pool_are_refused_and_write_nothing(store):
    """A round may query only its own project's pool items, each once, one score apiece."""
    store.create_project("p", classes=[0, 1])
    store.add_items("p", rows=range(5))
    store.add_items("p", rows=range(5, 8), keys=["t5", "t6", "t7"], split="test")
    store.create_project("other", classes=[0, 1])
    store.add_items("other", rows=range(3))
    pool, _ = store.candidates("p")
    foreign, _ = store.candidates("other")
    with store.transaction(write=False) as s:
        test_id = s.scalars(select(Item.id).where(Item.key == "t5")).one()
    store.start_round("p", posterior="x", acquisition="bald", seed=0)
    store.advance_round("p", 1, "fitted")
    first = int(pool[0])
    refused = [
        ([first, int(foreign[0])], [1.0, 0.5], f"item id {int(foreign[0])} is not in this project's pool"),
        ([first, int(test_id)], [1.0, 0.5], f"item id {int(test_id)} is not in this project's pool"),
        ([first, 10**6, 10**6 + 1], [1.0, 0.5, 0.2], "item id 1000000 is not in this project's pool \\(2 of the 3 ids"),
        ([first, first], [1.0, 0.5], f"item id {first} is queried twice"),
        ([first, int(pool[1])], [1.0], "2 item ids but 1 scores"),
    ]
    for ids, scores, message in refused:
        error = DataError if "scores" in message else StoreError
        with pytest.raises(error, match=message):
            store.record_queries("p", 1, ids, scores, timings={})
        with pytest.raises(error, match=message):
            store.record_queries_and_scores("p", 1, ids, scores, timings={}, candidate_ids=pool, candidate_scores=np.zeros(5))
    assert store.rounds("p")[0].status == "fitted" and store.queries("p", 1) == [] and store.scored_rounds("p") == []
    store.record_queries("p", 1, [int(pool[2]), first], [0.9, 0.1], timings={})  # the pool's own items: fine
    assert [q.item_id for q in store.queries("p", 1)] == [int(pool[2]), first]


def _without(dump: list[str], *tables: str) -> list[str]:
    """A `db_dump` less the lines of `tables`: SQLite's CREATE TABLE and INSERT INTO, PostgreSQL's
    TABLE header and rows."""
    heads = [f"CREATE TABLE {t} (" for t in tables] + [f'CREATE TABLE "{t}" (' for t in tables]
    heads += [f'INSERT INTO "{t}" ' for t in tables]
    heads += [f"TABLE {t} (" for t in tables] + [f"{t}: " for t in tables]
    heads += [f"CREATE INDEX ix_{t}_" for t in tables]
    return [line for line in dump if not line.startswith(tuple(heads))]


def test_a_0001_database_with_data_is_upgraded_in_place(store_url, data_file):
    from cli_checks import db_dump

    store = PoolStore(store_url)
    _alembic(store, command.downgrade, "0001")  # a database written by the previous activebayes
    assert store.schema_revision() == "0001"
    with store.engine.connect() as conn:
        assert "round_scores" not in inspect(conn).get_table_names()
    store.create_project("p", classes=["a", "b"], data_path=data_file)
    store.add_items("p", rows=range(8))
    store.record_observations("p", [("0", "a")], who="ann")
    store.start_round("p", posterior="mc", acquisition="bald", seed=3)
    store.advance_round("p", 1, "fitted", metrics={"accuracy": 0.5})
    ids, _ = store.candidates("p")
    with store.transaction() as s:  # the queries as revision 0001 wrote them (no prediction column)
        round_id = s.scalar(text("SELECT id FROM rounds"))
        for rank, (item, score) in enumerate(zip(ids[:2].tolist(), [0.7, 0.6])):
            s.execute(text("INSERT INTO queries (round_id, item_id, score, rank) VALUES (:r, :i, :s, :k)"),
                      {"r": round_id, "i": item, "s": score, "k": rank})  # fmt: skip
    store.advance_round("p", 1, "scored", timings={"score_s": 0.1})
    store.advance_round("p", 1, "queried")
    store.record_answers("p", 1, [("1", "b"), ("2", "a")], who="ann", source="cli", complete=True)
    store.advance_round("p", 1, "done")
    store.close()
    before = db_dump(store_url)
    with pytest.raises(StoreError, match=f"'0001' is older than '{HEAD}'"):
        PoolStore(store_url, upgrade=False)
    assert db_dump(store_url) == before  # refusing to upgrade changes nothing
    with PoolStore(store_url) as upgraded:
        assert upgraded.schema_revision() == HEAD
        with upgraded.engine.connect() as conn:
            assert {c["name"] for c in inspect(conn).get_columns("round_scores")} == {
                "round_id", "n_candidates", "item_ids", "scores"}  # fmt: skip
        after = db_dump(store_url)
        assert len(_without(before, "alembic_version")) >= 6  # the projects, items, rounds, ... rows
        with upgraded.engine.connect() as conn:
            assert "prediction" in {c["name"] for c in inspect(conn).get_columns("queries")}  # revision 0004
            assert "probability" in {c["name"] for c in inspect(conn).get_columns("queries")}  # revision 0005
        unchanged = ("round_scores", "round_locks", "item_leases", "alembic_version", "queries")  # queries: + NULL columns
        assert _without(after, *unchanged) == _without(before, *unchanged)
        tables = lambda dump: [line for line in dump if line.startswith(("CREATE TABLE", "TABLE "))]  # noqa: E731
        assert len(tables(after)) == len(tables(before)) + 3  # + the new, empty round_scores, round_locks, item_leases
        (old,) = upgraded.rounds("p")
        assert (old.status, old.metrics, old.timings) == ("done", {"accuracy": 0.5}, {"score_s": 0.1})
        assert [(q.key, q.score, q.value, q.prediction) for q in upgraded.queries("p", 1)] == [
            ("1", 0.7, "b", None), ("2", 0.6, "a", None)]  # fmt: skip
        assert upgraded.round_scores("p", 1) is None and upgraded.scored_rounds("p") == []  # an old round has none
        upgraded.start_round("p", posterior="mc", acquisition="bald", seed=4)
        upgraded.advance_round("p", 2, "fitted")
        ids, _ = upgraded.candidates("p")
        upgraded.record_queries_and_scores("p", 2, [int(ids[0])], [0.9], timings={}, candidate_ids=ids,
                                           candidate_scores=np.linspace(0.9, 0.1, len(ids)))  # fmt: skip
        assert upgraded.scored_rounds("p") == [2] and len(upgraded.round_scores("p", 2)[0]) == 5


def test_query_predictions_round_trip_and_bad_ones_write_nothing(store):
    """Each query keeps the round's prediction for its item (revision 0004): a flat mapping of
    finite numbers and strings, or None; anything else is refused before a row is written."""
    store.create_project("p", classes=["cat", "dog"])
    store.add_items("p", rows=range(5))
    pool, _ = store.candidates("p")
    store.start_round("p", posterior="x", acquisition="bald", seed=0)
    store.advance_round("p", 1, "fitted")
    ids = [int(pool[3]), int(pool[0]), int(pool[1])]
    refused = [
        ([{"label": "cat", "probability": 0.9}], DataError, "3 item ids but 1 predictions"),
        ([{"label": "cat", "probability": float("nan")}, None, None], DataError, "'probability' must be a finite number"),
        ([{"mean": float("inf")}, None, None], DataError, "'mean' must be a finite number"),
        ([{"label": ["cat"]}, None, None], DataError, "'label' must be a finite number or a string"),
        (["cat", None, None], DataError, "a prediction must be a mapping or None"),
    ]
    for predictions, error, message in refused:
        with pytest.raises(error, match=message):
            store.record_queries("p", 1, ids, [0.9, 0.5, 0.1], timings={}, predictions=predictions)
        with pytest.raises(error, match=message):
            store.record_queries_and_scores("p", 1, ids, [0.9, 0.5, 0.1], timings={}, predictions=predictions,
                                            candidate_ids=pool, candidate_scores=np.zeros(5))  # fmt: skip
    assert store.rounds("p")[0].status == "fitted" and store.queries("p", 1) == [] and store.scored_rounds("p") == []
    given = [{"label": "dog", "probability": 0.625}, None, {"label": "cat", "probability": 1}]
    store.record_queries_and_scores("p", 1, ids, [0.9, 0.5, 0.1], timings={}, predictions=given,
                                    candidate_ids=pool, candidate_scores=np.zeros(5))  # fmt: skip
    got = store.queries("p", 1)
    assert [(q.item_id, q.prediction) for q in got] == [
        (ids[0], {"label": "dog", "probability": 0.625}), (ids[1], None), (ids[2], {"label": "cat", "probability": 1.0})]  # fmt: skip
    store.advance_round("p", 1, "failed", failure_reason="stop")
    store.start_round("p", posterior="x", acquisition="random", seed=1)
    store.advance_round("p", 2, "fitted")
    store.record_queries("p", 2, [int(pool[2])], [0.0], timings={})  # a cold start: no predictions at all
    store.advance_round("p", 2, "failed", failure_reason="stop")
    store.start_round("p", posterior="gp", acquisition="variance", seed=2)
    store.advance_round("p", 3, "fitted")
    store.record_queries("p", 3, [int(pool[4])], [0.3], timings={}, predictions=[{"mean": -1.5, "sd": 0.25}])
    assert [q.prediction for q in store.queries("p", 2)] == [None]
    assert [q.prediction for q in store.queries("p", 3)] == [{"mean": -1.5, "sd": 0.25}]
    with store.transaction(write=False) as s:  # no prediction is SQL NULL, not the JSON text 'null'
        assert s.execute(text("SELECT count(*) FROM queries WHERE prediction IS NULL")).scalar() == 2
