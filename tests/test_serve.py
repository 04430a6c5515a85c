"""The labelling page over HTTP (Starlette's TestClient): what each labeller is shown, answers,
skips and undos through the store, two labellers at once, the status page, and the security
list of README.md, each item a test. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("starlette", reason="the serve extra is not installed")
pytest.importorskip("httpx", reason="httpx (starlette's TestClient) is not installed")

from starlette.testclient import TestClient  # noqa: E402

from activebayes.store import PoolStore  # noqa: E402
from activebayes.web import Grant, ServeConfig, create_app  # noqa: E402
from cli_checks import db_dump  # noqa: E402
from serve_pages import image_project, regression_project, table_project, text_project  # noqa: E402


class Page:
    """One labeller's view of the app: GETs with the token, POSTs with the token and CSRF token."""

    def __init__(self, client: TestClient, grant: Grant) -> None:
        self.client, self.grant = client, grant
        self.base = f"/p/{grant.project}"
        self.csrf = client.app.state.keys.csrf_token(grant)

    def get(self, path: str, **params: str):
        return self.client.get(f"{self.base}/{path}", params={"token": self.grant.token, **params})

    def post(self, path: str, **body):
        return self.client.post(f"{self.base}/{path}", params={"token": self.grant.token}, json={"csrf": self.csrf, **body})

    def next(self, **body) -> dict:
        response = self.post("next", **body)
        assert response.status_code == 200, response.text
        return response.json()

    def answer(self, key: str, value, number: int = 1) -> dict:
        response = self.post("answer", round=number, key=key, value=value)
        assert response.status_code == 200, response.text
        return response.json()


def app_for(db: str, *grants: Grant, **options):
    return TestClient(create_app(ServeConfig(db, tuple(grants), **options)))


@pytest.fixture
def blobs(db_url, tmp_path, monkeypatch):
    """Project 'blobs' (a, b, c) whose round 1 waits for 5 answers; (db, keys in rank order)."""
    monkeypatch.chdir(tmp_path)
    return db_url, table_project(db_url, tmp_path)


def observations(db: str, project: str = "blobs") -> list[dict]:
    with PoolStore(db, create=False) as store:
        return [o for o in store.observations(project) if o["source"] == "web"]


# ---- labelling --------------------------------------------------------------------------------------
def test_a_labeller_answers_the_round_in_rank_order(blobs):
    db, keys = blobs
    alice = Grant.new("alice", "blobs")
    with app_for(db, alice) as client:
        page = Page(client, alice)
        shell = page.get("label")
        assert shell.status_code == 200 and 'data-page="label"' in shell.text
        card = page.next()
        assert (card["round"], card["shown"], card["open"]) == (1, keys[0], 5)
        assert 'data-kind="table"' in card["card"] and "<th>f0</th>" in card["card"]
        assert "model:" not in card["card"]  # the round's prediction stays hidden (test_serve_leaks.py)
        done = page.answer(keys[0], "b")
        assert (done["status"], done["key"], done["value"], done["shown"]) == ("saved", keys[0], "b", keys[1])
        assert '<span class="left">5 of 5 still open</span>' in card["card"] and "4 of 5 still open" in done["card"]  # what is left
        assert page.post("skip", round=1, key=keys[1]).json()["message"] == f"skipped {keys[1]}"
        undone = page.post("undo").json()
        assert (undone["status"], undone["key"]) == ("undone", keys[0])
        assert f'data-key="{keys[0]}"' in undone["card"]  # the item taken back is shown again
        assert observations(db) == []
        for key, value in zip([keys[0], *keys[2:]], "abca"):
            assert page.answer(key, value)["status"] == "saved"
        card = page.next()
        assert card["shown"] is None and "You skipped the 1 item" in card["card"]
        card = page.next(unskip=True)
        assert card["shown"] == keys[1]
        last = page.answer(keys[1], "c")
        assert last["unlabelled"] == 0 and "Every query of round 1 has its answer" in last["card"]
    recorded = observations(db)
    assert sorted(o["key"] for o in recorded) == sorted(keys)
    assert {o["who"] for o in recorded} == {"alice"} and {o["round_id"] for o in recorded} == {1}


def test_two_labellers_are_not_shown_the_same_item(blobs):
    db, keys = blobs
    alice, bob = Grant.new("alice", "blobs"), Grant.new("bob", "blobs")
    with app_for(db, alice, bob) as client:
        a, b = Page(client, alice), Page(client, bob)
        assert a.next()["shown"] == keys[0]
        assert b.next()["shown"] == keys[1]  # keys[0] is alice's for now
        assert a.next()["shown"] == keys[0]  # a view renews her lease on it
        assert a.answer(keys[0], "a")["shown"] == keys[2]  # the next free one
        assert b.answer(keys[1], "b")["shown"] == keys[3]
    assert {(o["key"], o["who"]) for o in observations(db)} == {(keys[0], "alice"), (keys[1], "bob")}


def test_an_identical_concurrent_answer_is_a_repeat_and_a_different_one_is_refused(blobs):
    """Both were shown keys[0] (bob's lease had expired): the outcome is that of some order."""
    db, keys = blobs
    alice, bob = Grant.new("alice", "blobs"), Grant.new("bob", "blobs")
    with app_for(db, alice, bob, lease_seconds=0.001) as client:
        a, b = Page(client, alice), Page(client, bob)
        assert a.next()["shown"] == b.next()["shown"] == keys[0]
        assert a.answer(keys[0], "a")["status"] == "saved"
        repeat = b.answer(keys[0], "a")
        assert repeat["status"] == "repeat" and "recorded once" in repeat["message"]
        assert b.post("undo").json()["status"] == "nothing"  # bob's repeat wrote nothing to take back
        assert a.next()["shown"] == b.next()["shown"] == keys[1]
        assert a.answer(keys[1], "b")["status"] == "saved"
        refused = b.answer(keys[1], "c")
        assert refused["status"] == "refused" and "labelled 'b' by someone else meanwhile; that label stays" in refused["message"]
    assert [(o["key"], o["value"], o["who"]) for o in observations(db)] == [(keys[0], "a", "alice"), (keys[1], "b", "alice")]


def test_two_answers_per_item(blobs):
    """Each item goes to two labellers (both at once); each answer is recorded as its own, and the
    status page lists the items whose answers disagree."""
    db, keys = blobs
    alice, bob = Grant.new("alice", "blobs"), Grant.new("bob", "blobs")
    with app_for(db, alice, bob, answers_per_item=2) as client:
        a, b = Page(client, alice), Page(client, bob)
        assert a.next()["shown"] == b.next()["shown"] == keys[0]
        assert a.answer(keys[0], "a")["shown"] == keys[1]
        assert b.answer(keys[0], "a")["status"] == "saved"  # an agreeing answer counts as bob's own
        assert a.answer(keys[1], "b")["status"] == "saved"
        assert b.next()["shown"] == keys[1]
        assert b.answer(keys[1], "c")["status"] == "saved"
        status = a.get("status").text
        assert "Answers that disagree" in status and re.search(rf"{keys[1]}</span>: alice b, bob c", status)
    assert [(o["key"], o["value"], o["who"]) for o in observations(db)] == [
        (keys[0], "a", "alice"), (keys[0], "a", "bob"), (keys[1], "b", "alice"), (keys[1], "c", "bob")]
    with PoolStore(db, create=False) as store:
        assert store.label_states("blobs", [keys[1]])[keys[1]]["label"] == "c"  # the latest answer is the label


# ---- each kind of page ------------------------------------------------------------------------------
def test_image_text_and_regression_pages(db_url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    digits = image_project(db_url, tmp_path)
    reviews = text_project(db_url, tmp_path)
    plots = regression_project(db_url, tmp_path)
    grants = {p: Grant.new("ann", p) for p in ("digits", "reviews", "yield")}
    with app_for(db_url, *grants.values()) as client:
        page = Page(client, grants["digits"])
        card = page.next()["card"]
        assert 'data-kind="image"' in card and card.count('class="answer"') == 10 and 'data-value="9" data-shortcut="9"' in card
        src = re.search(r'<img class="item"[^>]* src="([^"]+)"', card).group(1).replace("&amp;", "&")
        image = client.get(src)
        assert image.status_code == 200 and image.headers["content-type"] == "image/png" and image.content[:4] == b"\x89PNG"
        assert client.get(src.replace("token=", "token=x")).status_code == 403
        assert page.get("image", round="1", key="no-such-key").status_code == 404

        card = Page(client, grants["reviews"]).next()["card"]
        assert 'data-kind="text"' in card and '<h3 class="column">review</h3>' in card and "<th>length_cm</th>" in card

        page = Page(client, grants["yield"])
        card = page.next()["card"]
        assert 'data-kind="table"' in card and 'inputmode="decimal"' in card and "model:" not in card and "placeholder" not in card
        assert page.answer(plots[0], "3.25")["value"] == "3.25"
        before = db_dump(db_url)
        for bad in ("nan", "inf", "three", "1,500"):  # 1,500: 1500 or 1.5 where numbers are written with points
            response = page.post("answer", round=1, key=plots[1], value=bad)
            assert response.status_code == 400 and "number" in response.json()["message"]
        assert "write 1500 or 1.5" in response.json()["message"]
        assert db_dump(db_url) == before
        assert page.answer(plots[1], "0,75")["value"] == "0.75"  # a decimal comma reads one way only; shown as stored
    del digits, reviews
    with PoolStore(db_url) as store:
        states = store.label_states("yield", plots[:2])
    assert {k: s["label"] for k, s in states.items()} == {plots[0]: "3.25", plots[1]: "0.75"}


def test_a_regression_page_of_a_pool_written_with_decimal_commas(db_url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    plots = regression_project(db_url, tmp_path, name="ernte", comma=True)
    grant = Grant.new("ann", "ernte")
    with app_for(db_url, grant, show_model_guess=True) as client:
        page = Page(client, grant)
        card = page.next()["card"]
        assert "model: <strong>2,5</strong> ± 0,4" in card and 'placeholder="2,5"' in card  # as the pool writes numbers
        before = db_dump(db_url)
        response = page.post("answer", round=1, key=plots[0], value="1.500")
        assert response.status_code == 400 and response.json()["message"].startswith("'1.500' could be 1500 or 1,5")
        assert db_dump(db_url) == before
        assert page.answer(plots[0], "3,25")["value"] == "3.25" and page.answer(plots[1], "4.5")["value"] == "4.5"  # as stored
    with PoolStore(db_url) as store:
        states = store.label_states("ernte", plots[:2])
    assert {k: s["label"] for k, s in states.items()} == {plots[0]: "3.25", plots[1]: "4.5"}


def test_status_page_counts_labellers_and_learning_curve(blobs):
    db, keys = blobs
    alice = Grant.new("alice", "blobs")
    with app_for(db, alice) as client:
        page = Page(client, alice)
        for key in keys[:3]:
            page.answer(key, "a")
        status = page.get("status")
    assert status.status_code == 200
    text = status.text
    assert re.search(r'<span class="n">3</span> labelled of 30 pool items', text)
    assert re.search(r"<td>alice</td><td>3</td>", text)
    assert "No round has measured the model" in text
    with PoolStore(db) as store:  # round 1 closes with a test accuracy measured
        others = sorted(store.item_keys("blobs") - set(keys))[:2]  # labels from the data file and the simulated truth: no labeller's
        store.record_observations("blobs", [(others[0], "a")], who="ann", source="import")
        store.record_observations("blobs", [(others[1], "b")], who="truth", source="oracle")
        for key in keys[3:]:
            store.record_labels("blobs", [(key, "b", 1)], who="bob", source="prompt", expected={key: None})
        store.advance_round("blobs", 1, "answered")
        store.advance_round("blobs", 1, "done", metrics={"accuracy": 0.625})
    with app_for(db, alice) as client:
        text = Page(client, alice).get("status").text
    assert "<svg" in text and 'aria-label="accuracy against the number of labels"' in text and "<td>0.6250</td>" in text
    assert "<td>bob</td><td>2</td>" in text and "<td>ann</td>" not in text and "<td>truth</td>" not in text


# ---- security: every item of README.md's list --------------------------------------------------------
ROUTES = [("get", "label"), ("get", "status"), ("get", "summary"), ("get", "progress"), ("get", "image"), ("post", "next"), ("post", "renew"),
          ("post", "answer"), ("post", "skip"), ("post", "undo"), ("post", "round")]  # fmt: skip


def test_no_token_is_403_and_changes_nothing(blobs):
    db, keys = blobs
    alice = Grant.new("alice", "blobs")
    before = db_dump(db)
    with app_for(db, alice) as client:
        csrf = client.app.state.keys.csrf_token(alice)
        for method, path in ROUTES:
            for params in ({}, {"token": ""}, {"token": alice.token + "x"}, {"token": alice.token.upper()}):
                kwargs = {"json": {"csrf": csrf, "round": 1, "key": keys[0], "value": "a"}} if method == "post" else {}
                response = getattr(client, method)(f"/p/blobs/{path}", params=params, **kwargs)
                assert response.status_code == 403, (method, path, params, response.text)
        assert client.get("/").status_code == 403
    assert db_dump(db) == before


def test_a_token_reaches_only_its_project(blobs, tmp_path):
    db, _ = blobs
    table_project(db, tmp_path, name="other")
    alice, bob = Grant.new("alice", "blobs"), Grant.new("bob", "other")
    before = db_dump(db)
    with app_for(db, alice, bob) as client:
        a = Page(client, alice)
        assert a.get("label").status_code == 200
        for method, path in ROUTES:
            url = f"/p/other/{path}"
            response = client.get(url, params={"token": alice.token}) if method == "get" else \
                client.post(url, params={"token": alice.token}, json={"csrf": a.csrf})  # fmt: skip
            assert response.status_code == 403, (method, path)
        assert client.get("/p/nowhere/label", params={"token": alice.token}).status_code == 403
    assert db_dump(db) == before


def test_state_changes_are_posts_with_a_csrf_token(blobs):
    db, keys = blobs
    alice = Grant.new("alice", "blobs")
    before = db_dump(db)
    with app_for(db, alice) as client:
        page = Page(client, alice)
        url, params = "/p/blobs/answer", {"token": alice.token}
        for path in ("next", "renew", "answer", "skip", "undo", "round"):
            assert client.get(f"/p/blobs/{path}", params=params).status_code == 405
        body = {"round": 1, "key": keys[0], "value": "a"}
        assert client.post(url, params=params, json=body).status_code == 403  # no CSRF token
        assert client.post(url, params=params, json={**body, "csrf": "0" * 64}).status_code == 403
        other = create_app(ServeConfig(db, (alice,))).state.keys.csrf_token(alice)  # another server's
        assert client.post(url, params=params, json={**body, "csrf": other}).status_code == 403
        form = client.post(url, params=params, data={**body, "csrf": page.csrf})  # a cross-site form cannot send JSON
        assert form.status_code == 400
        headers = client.get("/p/blobs/label", params=params).headers
        assert "default-src 'none'" in headers["content-security-policy"] and headers["referrer-policy"] == "no-referrer"
    assert db_dump(db) == before


def test_item_text_and_features_are_escaped(db_url, tmp_path, monkeypatch):
    """A csv cell holding markup is shown as text, and so is a labeller's name."""
    monkeypatch.chdir(tmp_path)
    keys = table_project(db_url, tmp_path, name="hostile", hostile=True)
    grant = Grant.new("<b>ann</b>", "hostile")
    with app_for(db_url, grant) as client:
        page = Page(client, grant)
        card = page.next()
        shell = page.get("label").text
    assert card["shown"] == keys[0] == "item-000"  # the row whose note holds the markup
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; and &lt;img src=x onerror=alert(1)&gt;" in card["card"]
    assert "<script>" not in card["card"] and "<img src=x" not in card["card"]
    assert "<b>ann" not in shell and "&lt;b&gt;ann&lt;/b&gt;" in shell


def test_bad_requests_never_change_the_database(blobs):
    db, keys = blobs
    alice = Grant.new("alice", "blobs")
    with app_for(db, alice) as client:
        page = Page(client, alice)
        page.next()  # alice holds keys[0]: the only write a view makes
        before = db_dump(db)
        params = {"token": alice.token}
        bad = [
            dict(content=b"{not json", headers={"content-type": "application/json"}),
            dict(content=b"\xff\xfe", headers={"content-type": "application/json"}),
            dict(content=json.dumps({"csrf": page.csrf, "round": 1, "key": keys[0], "value": "a", "pad": "x" * 70_000}).encode(),
                 headers={"content-type": "application/json"}),
            dict(json=["a", "list"]),
            dict(json={"csrf": page.csrf, "round": 1, "key": "no-such-key", "value": "a"}),
            dict(json={"csrf": page.csrf, "round": 2, "key": keys[0], "value": "a"}),
            dict(json={"csrf": page.csrf, "round": "1", "key": keys[0], "value": "a"}),
            dict(json={"csrf": page.csrf, "round": 1, "key": keys[0], "value": "z"}),
            dict(json={"csrf": page.csrf, "round": 1, "key": keys[0], "value": True}),
            dict(json={"csrf": page.csrf, "round": 1, "key": keys[0], "value": "  "}),
            dict(json={"csrf": page.csrf, "round": 1, "key": keys[0]}),
            dict(json={"csrf": page.csrf, "round": 1, "key": ["x"], "value": "a"}),
        ]
        for kwargs in bad:
            response = client.post("/p/blobs/answer", params=params, **kwargs)
            assert response.status_code == 400, (kwargs, response.text)
        assert client.post("/p/blobs/skip", params=params, json={"csrf": page.csrf, "round": 1, "key": "nope"}).status_code == 400
        assert page.post("round").status_code == 400  # this app runs no rounds
        assert db_dump(db) == before


def test_serve_without_its_packages_says_how_to_install_them(blobs, monkeypatch):
    from cli_checks import assert_mistake, run

    import activebayes_cli.serve as serve

    monkeypatch.setattr(serve, "NEEDS", ("starlette", "activebayes_no_such_module"))
    db, _ = blobs
    before = db_dump(db)
    assert_mistake(run("--db", db, "serve"), "activebayes_no_such_module", "pip install 'activebayes[serve]'")
    assert db_dump(db) == before


def test_serve_binds_127_0_0_1_and_prints_one_url_per_labeller(blobs, monkeypatch):
    from cli_checks import assert_mistake, run

    import uvicorn

    bound = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets: bound.extend(s.getsockname() for s in sockets))
    db, _ = blobs
    result = run("--db", db, "--json", "serve", "--port", "0", "--labeller", "alice", "--labeller", "bob")
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert bound[0][0] == "127.0.0.1" and shown["host"] == "127.0.0.1" and shown["port"] == bound[0][1]
    tokens = {name: re.fullmatch(rf"http://127\.0\.0\.1:{bound[0][1]}/p/blobs/label\?token=([\w-]+)", url).group(1)
              for name, url in shown["urls"].items()}  # fmt: skip
    assert set(tokens) == {"alice", "bob"} and len(set(tokens.values())) == 2 and min(len(t) for t in tokens.values()) >= 32
    assert_mistake(run("--db", db, "serve", "--port", "70000"), "--port")
    assert_mistake(run("--db", db, "serve", "--answers-per-item", "0"), "--answers-per-item")


@pytest.mark.slow
def test_a_real_server_on_loopback(blobs, tmp_path):
    """`activebayes serve` (uvicorn in a child process): 403 without the token, the page with it."""
    import httpx

    from serve_pages import served

    db, _ = blobs
    with served(db, "blobs", "alice", folder=tmp_path) as (_, urls):
        url = urls["alice"]
        assert url.startswith("http://127.0.0.1:")
        assert httpx.get(url.split("?")[0]).status_code == 403
        page = httpx.get(url)
        assert page.status_code == 200 and "loading the next item" in page.text
        assert httpx.get(url.replace("/label?", "/status?")).status_code == 200


@pytest.mark.slow
def test_the_next_round_button_refuses_while_queries_wait(blobs):
    """Round 1 still waits for answers: the page starts no round (which would only fail), and says
    why in one line; nothing is written."""
    db, keys = blobs
    alice = Grant.new("alice", "blobs")
    before = db_dump(db)
    started = []
    with app_for(db, alice, run_round=started.append) as client:
        refused = Page(client, alice).post("round")
    assert refused.status_code == 409 and refused.text.startswith("round 1 still waits for 5 answers; answer or skip them")
    assert started == [] and db_dump(db) == before


def test_progress_names_the_next_round_before_it_records_itself(blobs):
    """Every query answered and the page's round running, but not yet recorded: the progress is
    the next round starting, not the last one 'waiting for answers'."""
    import threading

    db, keys = blobs
    alice = Grant.new("alice", "blobs")
    release = threading.Event()
    with app_for(db, alice, run_round=lambda project: release.wait(30)) as client:
        page = Page(client, alice)
        for key in keys:
            page.answer(key, "a")
        assert page.post("round").json()["started"] is True
        try:
            assert page.get("progress").json() == {"running": True, "error": None, "round": 2, "stage": "starting"}
        finally:
            release.set()


def test_the_next_round_button_refuses_in_one_line_while_a_round_runs(blobs, tmp_path):
    """The page's round takes the same lock as `activebayes round`: held elsewhere, the page says
    so in one line and nothing is written."""
    import time

    from activebayes_cli.serve import round_runner

    db, keys = blobs
    alice = Grant.new("alice", "blobs")
    with PoolStore(db) as store:
        for key in keys:
            store.record_labels("blobs", [(key, "a", 1)], who="bob", source="prompt", expected={key: None})
    runner = round_runner(db, lambda _: ["--epochs", "1", "--samples", "2", "--k", "2", "--device", "cpu"])
    def unlocked_rows() -> list[str]:  # the holder's heartbeat thread refreshes its round_locks row meanwhile
        return [row for row in db_dump(db) if "round_locks" not in row]

    with PoolStore(db) as holder, holder.round_lock("blobs"):
        before = unlocked_rows()
        with app_for(db, alice, run_round=runner) as client:
            page = Page(client, alice)
            assert "run the next round" in page.next()["card"]
            assert page.post("round").json()["started"] is True
            deadline = time.monotonic() + 120
            while (state := page.get("progress").json())["running"] and time.monotonic() < deadline:
                time.sleep(0.2)
        assert unlocked_rows() == before
    error = state["error"]
    assert "of project 'blobs' is running (started by pid" in error and "\n" not in error


@pytest.mark.slow
def test_the_next_round_button_runs_a_round_the_page_then_shows(blobs, tmp_path):
    """Every query answered: the button runs `activebayes round` in the background (progress on
    the page), and the page goes on with the new round's first query."""
    import time

    from activebayes_cli.serve import round_runner

    db, keys = blobs
    alice = Grant.new("alice", "blobs")
    runner = round_runner(db, lambda _: ["--epochs", "1", "--samples", "2", "--k", "3", "--device", "cpu", "--acquisition", "bald"])
    with app_for(db, alice, run_round=runner) as client:
        page = Page(client, alice)
        for key in keys:
            page.answer(key, "abcab"[keys.index(key)])
        assert page.post("round").json()["started"] is True
        assert page.post("round").json()["started"] is False  # one at a time
        deadline = time.monotonic() + 300
        while (state := page.get("progress").json())["running"] and time.monotonic() < deadline:
            time.sleep(0.5)
        assert state == {"running": False, "error": None, "round": 2, "stage": "waiting for answers"}
        card = page.next()
        assert card["round"] == 2 and card["shown"] not in keys and card["open"] == 3
    with PoolStore(db, create=False) as store:
        rounds = store.rounds("blobs")
        assert [(r.number, r.status.value, r.acquisition) for r in rounds] == [(1, "done", "random"), (2, "queried", "bald")]


def test_a_stale_tab_of_the_same_labeller_is_told_it_was_them(blobs):
    db, keys = blobs
    alice = Grant.new("alice", "blobs")
    with app_for(db, alice) as client:
        first, second = Page(client, alice), Page(client, alice)  # two tabs: the same item in both
        assert first.next()["shown"] == second.next()["shown"] == keys[0]
        assert first.answer(keys[0], "a")["status"] == "saved"
        stale = second.answer(keys[0], "b")
        assert (stale["status"], stale["shown"]) == ("refused", keys[1])
        assert stale["message"] == f"{keys[0]} was labelled 'a' by you, in another tab or window, meanwhile; that label stays"
    assert [(o["key"], o["value"]) for o in observations(db)] == [(keys[0], "a")]
