"""What the labelling and status pages say, over HTTP (Starlette's TestClient): the question the
card asks, a regression answer shown as the store keeps it (one written with the target's unit
too), the number field's keyboard (a phone's decimal keypad has no minus sign), the status page's version (what the
page asks every few seconds to follow the project), and its warning before a round that goes
without second answers still to come; and that every file the pages name ships in the package.
On SQLite and PostgreSQL."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

pytest.importorskip("starlette", reason="the serve extra is not installed")
pytest.importorskip("httpx", reason="httpx (starlette's TestClient) is not installed")

from activebayes.store import PoolStore  # noqa: E402
from activebayes.web import Grant  # noqa: E402
from activebayes.web.question import Question, asked, keypad, negative  # noqa: E402
from serve_pages import _csv_project, regression_project  # noqa: E402
from test_serve import Page, app_for, blobs  # noqa: E402,F401


def test_the_question_names_the_classes_or_the_kind_of_number():
    def info(task, classes=None, **settings):
        return SimpleNamespace(task=task, classes=classes, settings=settings)

    assert asked(info("classification", ["cat"])) == Question("Which class is this item?", "cat")
    assert asked(info("classification", ["a", "b", "c"])) == Question("Which class is this item?", "a, b or c")
    assert asked(info("classification", [str(c) for c in range(11)])).detail == "one of 11 classes"  # the buttons list them
    assert asked(info("regression")) == Question("What value does this item have?", "a number")
    assert asked(info("regression", label_column="label")).detail == "a number"  # a column that names nothing
    assert asked(info("regression", label_column="price", features={"label_written": "units"})).detail == "an amount (column price)"
    assert asked(info("regression", label_column="weight", features={"label_written": "unit:kg"})).detail == "a number in kg (column weight)"


def test_the_card_says_what_is_asked(blobs, tmp_path):
    """The first thing the card says is the question, which labels the answers (the class buttons'
    group, the number field) for a screen reader; the classes, or the target's unit and column."""
    db, keys = blobs
    rows = [["id", "rain_mm", "weight"]] + [[f"p{i:02d}", f"{i * 1.5:.1f}", f"{2 + i % 7}.5 kg"] for i in range(30)]
    plots = _csv_project(db, tmp_path, "sacks", rows, ("--task", "regression"), ("--label-column", "weight"), k=2)
    alice, ann = Grant.new("alice", "blobs"), Grant.new("ann", "sacks")
    with app_for(db, alice, ann) as client:
        card = Page(client, alice).next()["card"]
        assert '<h2 class="question" id="question">Which class is this item? <span class="detail">a, b or c</span></h2>' in card
        assert 'aria-describedby="question"' in card and '<div class="answers" role="group" aria-labelledby="question">' in card
        assert card.index('class="question"') < card.index('<table class="row">')  # said before the item
        card = Page(client, ann).next()
        assert card["shown"] == plots[0]
        assert '<h2 class="question" id="question">What value does this item have? <span class="detail">a number in kg (column weight)</span></h2>' in card["card"]
        assert re.search(r'<input type="text" inputmode="decimal" id="number"[^>]* aria-labelledby="question"', card["card"])


def test_a_regression_answer_is_shown_as_the_store_keeps_it(db_url, tmp_path, monkeypatch):
    """"1e3" and " 3,5 " are saved as 1000.0 and 3.5: the page's "saved" line and its log show
    those, the labels in the database, not the text as typed."""
    monkeypatch.chdir(tmp_path)
    plots = regression_project(db_url, tmp_path)
    ann = Grant.new("ann", "yield")
    with app_for(db_url, ann) as client:
        page = Page(client, ann)
        shown = {plots[0]: page.answer(plots[0], "1e3")["value"], plots[1]: page.answer(plots[1], " 3,5 ")["value"]}
    assert shown == {plots[0]: "1000.0", plots[1]: "3.5"}
    with PoolStore(db_url) as store:
        assert {k: s["label"] for k, s in store.label_states("yield", plots[:2]).items()} == shown
        assert [(o["key"], o["value"]) for o in store.observations("yield") if o["source"] == "web"] == list(shown.items())


def test_a_regression_answer_may_carry_the_target_s_unit(db_url, tmp_path, monkeypatch):
    """In a project whose target was written "3.5 kg", "12.5 kg" is saved as 12.5 (the card asks
    "a number in kg"); "12.5 lb" is refused in one line naming kg, and nothing is saved for it."""
    monkeypatch.chdir(tmp_path)
    rows = [["id", "rain_mm", "weight"]] + [[f"p{i:02d}", f"{i * 1.5:.1f}", f"{2 + i % 7}.5 kg"] for i in range(30)]
    plots = _csv_project(db_url, tmp_path, "sacks", rows, ("--task", "regression"), ("--label-column", "weight"), k=2)
    ann = Grant.new("ann", "sacks")
    with app_for(db_url, ann) as client:
        page = Page(client, ann)
        refused = page.post("answer", round=1, key=plots[1], value="12.5 lb")
        assert refused.status_code == 400
        assert refused.json()["message"] == ("'12.5 lb' is in lb, but this project's numbers are in kg; "
                                             "write the value converted to kg, with or without the unit after it")  # fmt: skip
        assert page.answer(plots[0], "12.5 kg")["value"] == "12.5"
    with PoolStore(db_url) as store:
        assert [(o["key"], o["value"]) for o in store.observations("sacks") if o["source"] == "web"] == [(plots[0], "12.5")]
        assert store.label_states("sacks", plots)[plots[1]]["label"] is None


def test_the_keypad_is_decimal_until_a_label_is_negative():
    assert keypad([]) == keypad(["2.5", "0", "-0.0", "1e3", "nan", "cat"]) == "decimal"
    assert keypad(["2.5", " -1 "]) == keypad(["-1e-3"]) == "text"
    assert [negative(v) for v in ("-3.5", "3.5", "-0.0", "nan", "-inf", "", None)] == [True, False, False, False, True, False, False]


def test_a_project_with_negative_labels_asks_for_the_full_keyboard(db_url, tmp_path, monkeypatch):
    """An iPhone's decimal keypad has no minus sign. Temperatures below zero (the test split's
    labels, recorded at `pool add`): the field asks for the full keyboard, and "-3.5" is saved.
    A project whose labels are all positive keeps the decimal keypad, with a ± button beside it,
    until an answer on the page is negative."""
    monkeypatch.chdir(tmp_path)
    rows = [["id", "altitude_m", "celsius"]] + [[f"s{i:02d}", str(100 * i), f"-{i}.5"] for i in range(30)]
    frozen = _csv_project(db_url, tmp_path, "frost", rows, ("--task", "regression"), ("--label-column", "celsius", "--test-fraction", "0.3"), k=2)
    plots = regression_project(db_url, tmp_path)
    ann, bob = Grant.new("ann", "frost"), Grant.new("bob", "yield")
    with app_for(db_url, ann, bob) as client:
        page = Page(client, ann)
        card = page.next()["card"]
        assert re.search(r'<input type="text" inputmode="text" id="number"', card) and 'id="sign"' not in card
        assert page.answer(frozen[0], "-3.5")["value"] == "-3.5"
        page = Page(client, bob)
        card = page.next()["card"]
        assert re.search(r'<input type="text" inputmode="decimal" id="number"', card) and '<button type="button" id="sign"' in card
        assert page.answer(plots[0], "-0.25")["value"] == "-0.25"
        card = page.next()["card"]
        assert 'inputmode="text"' in card and 'id="sign"' not in card
    with PoolStore(db_url) as store:
        assert [(o["key"], o["value"]) for o in store.observations("frost") if o["source"] == "web"] == [(frozen[0], "-3.5")]


def test_the_status_version_changes_when_the_page_would(blobs):
    """/summary is the status page's cheap question "has anything changed?": the same version
    while nothing did; a new one after an answer, an answer given again after an undo, labels from
    elsewhere, a round's step; the first one again once an undo put the page back as it was."""
    db, keys = blobs
    alice = Grant.new("alice", "blobs")
    with app_for(db, alice) as client:
        page = Page(client, alice)
        version = lambda: page.get("summary").json()["version"]  # noqa: E731
        seen = [version()]
        assert version() == seen[0] and f'data-version="{seen[0]}"' in page.get("status").text
        page.answer(keys[0], "a")
        seen.append(version())
        page.post("undo")
        seen.append(version())
        page.answer(keys[0], "b")
        seen.append(version())
        with PoolStore(db) as store:
            store.record_labels("blobs", [(keys[1], "c", 1)], who="bob", source="prompt", expected={keys[1]: None})
            seen.append(version())
            for key in keys[2:]:
                store.record_labels("blobs", [(key, "a", 1)], who="bob", source="prompt", expected={key: None})
            seen.append(version())
            store.advance_round("blobs", 1, "answered")
            seen.append(version())
        assert version() == seen[-1]
    assert seen[2] == seen[0]  # the answer taken back: the page as it was
    assert len(set(seen)) == len(seen) - 1, seen


def test_the_status_page_warns_before_a_round_without_the_second_answers(blobs):
    """With two answers per item, once each query has alice's answer but not yet bob's, the status
    page says so, and its button, the labelling page's own (`_next_round.html`), asks first
    (data-confirm, page.js); once bob's answers are in it is the plain button."""
    db, keys = blobs
    alice, bob = Grant.new("alice", "blobs"), Grant.new("bob", "blobs")
    with app_for(db, alice, bob, answers_per_item=2, run_round=lambda project: None) as client:
        a, b = Page(client, alice), Page(client, bob)
        assert "next-round" not in a.get("status").text  # round 1 waits for its first answers
        for key in keys:
            last = a.answer(key, "a")
        button = re.search(r'<button type="button" id="next-round"[^>]*>[^<]*</button>', last["card"]).group(0)
        assert button == ("<button type=\"button\" id=\"next-round\" data-confirm=\"5 queries of round 1 still wait for another labeller's "
                          'answer. Run the next round now, without them?">run the next round now, without the answers still to come</button>')
        status = a.get("status").text
        assert button in status  # the same button, made by the same macro
        assert "5 queries of round 1 still wait for another labeller's answer (<code>--answers-per-item 2</code>)." in status
        for key in keys[:4]:
            b.answer(key, "a")
        assert "data-confirm=\"1 query of round 1 still waits for another labeller's answer. Run the next round now, without it?\"" in a.get("status").text
        b.answer(keys[4], "b")
        status = a.get("status").text
        assert '<button type="button" id="next-round">run the next round</button>' in status
        assert "data-confirm" not in status and "still wait" not in status


def test_every_file_the_pages_serve_ships_in_the_package():
    """The templates and the static files are package data (pyproject.toml): a file added to
    either folder that the globs miss would be absent from an installed `activebayes serve`."""
    import tomllib
    from pathlib import Path, PurePosixPath

    root = Path(__file__).resolve().parent.parent
    globs = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["activebayes"]
    package = root / "activebayes"
    served = [p.relative_to(package).as_posix() for folder in ("web/templates", "web/static") for p in (package / folder).rglob("*") if p.is_file()]
    assert {"web/templates/_next_round.html", "web/static/page.js", "web/static/page.css"} <= set(served)
    shipped = lambda f: any(PurePosixPath(f).match(g) and len(PurePosixPath(f).parts) == len(PurePosixPath(g).parts) for g in globs)  # noqa: E731
    assert [f for f in served if not shipped(f)] == []


def test_every_file_the_pages_name_is_there():
    """Each /static/ file the templates link and each template the code or a template renders
    (extends, imports) is a file of web/static or web/templates: one named but absent, or spelt
    otherwise, would be a 404 or a 500 only on the page that uses it."""
    import re
    from pathlib import Path

    web = Path(__file__).resolve().parent.parent / "activebayes" / "web"
    texts = [p.read_text() for p in (*web.glob("*.py"), *(web / "templates").glob("*.html"))]
    linked = {name for text in texts for name in re.findall(r'"/static/([\w.-]+)"', text)}
    rendered = {name for text in texts for name in re.findall(r'"([\w-]+\.html)"', text)}
    assert {"page.css", "page.js"} <= linked and {"label.html", "_card.html", "base.html"} <= rendered
    assert sorted(n for n in linked if not (web / "static" / n).is_file()) == []
    assert sorted(n for n in rendered if not (web / "templates" / n).is_file()) == []
