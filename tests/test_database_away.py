"""A database that is away for a moment (its server restarted, the connection dropped, a SQLite
file locked past the busy timeout) while people label: the prompt says the answer was not saved
and asks it again, the labelling page answers 503 with a line to show and keeps the item, and
nothing is half-written. The failure is injected at the store call, one call, so that the
sequence is exact."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import OperationalError

from activebayes.errors import DatabaseAwayError
from activebayes.store import PoolStore
from activebayes.store.engine import database_gone, make_engine, session_factories, session_transaction
from test_cli_label import blobs, run  # noqa: F401  (blobs: the fixture)

DROPPED = "server closed the connection unexpectedly"


def fail_once(monkeypatch, method: str) -> None:
    """PoolStore.<method> raises as a dropped connection does, once; then works again."""
    real = getattr(PoolStore, method)
    calls = {"n": 0}

    def flaky(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            raise DatabaseAwayError(f"database error: {DROPPED}") from OperationalError("COMMIT", {}, Exception(DROPPED))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(PoolStore, method, flaky)


def test_a_dropped_connection_inside_a_transaction_is_database_away(tmp_path):
    url = f"sqlite:///{tmp_path / 'x.db'}"
    write, _ = session_factories(make_engine(url))
    with pytest.raises(DatabaseAwayError) as raised:
        with session_transaction(write, url):
            raise OperationalError("SELECT 1", {}, Exception(DROPPED))
    assert database_gone(raised.value) == f"the database cannot be reached ({DROPPED})"


def test_the_prompt_asks_again_an_answer_the_database_did_not_take(blobs, monkeypatch):
    q = blobs.queries
    fail_once(monkeypatch, "record_labels")
    result = run("--db", blobs.db, "label", "--who", "ann", input="a\nb\nq\n")
    assert result.exit_code == 0, result.output
    assert f"not saved: the database cannot be reached ({DROPPED}); type it again once it is back, or q to stop" in result.stdout
    assert result.stdout.count(f"item 1/5: {q[0]}") == 1 and "Recorded 1 answer for round 1." in result.stdout
    assert blobs.labels() == {q[0]: "b"}  # the answer typed again, once the database was back


def test_the_page_answers_503_and_keeps_the_item_when_the_database_is_away(blobs, monkeypatch):
    pytest.importorskip("httpx", reason="httpx (starlette's TestClient) is not installed")
    from activebayes.web import Grant
    from test_serve import Page, app_for, observations

    q = blobs.queries
    ann = Grant.new("ann", "blobs")
    with app_for(blobs.db, ann) as client:
        page = Page(client, ann)
        assert page.next()["shown"] == q[0]
        fail_once(monkeypatch, "record_labels")
        refused = page.post("answer", round=1, key=q[0], value="a")
        assert refused.status_code == 503 and refused.json() == {
            "status": "unavailable", "message": f"the database cannot be reached ({DROPPED}); try again in a moment"}
        assert observations(blobs.db) == []
        assert page.answer(q[0], "a")["status"] == "saved"  # the same again, the database back

        fail_once(monkeypatch, "lease_item")  # committed, then the next item does not load
        done = page.answer(q[1], "b")
        assert (done["status"], done["key"], "card" in done) == ("saved", q[1], False)
        assert done["next"] == f"the next item did not load: the database cannot be reached ({DROPPED}); it comes once the database is back"
        assert page.next()["shown"] == q[2]
    assert [(o["key"], o["value"]) for o in observations(blobs.db)] == [(q[0], "a"), (q[1], "b")]
