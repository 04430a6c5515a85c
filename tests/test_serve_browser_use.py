"""The labelling page used as labellers use it, in headless Chromium (see test_serve_browser.py):
a double click and a held key answer one item once; an image that has not loaded cannot be
answered; by keyboard alone the focus is on the next item; a phone-sized window; a server
restarted under an open tab; the back button, a finished round and a bad URL; a page with nothing
to answer that follows the next round by itself; a long text under which the classes stay on screen;
with two answers per item, a labeller who finished waits for the others' answers."""

from __future__ import annotations

import socket
import time

import pytest

from test_serve_browser import CHROMIUM, DRIVER, ack, browser, press, served, shown_key, sqlite_db, wait, wait_for_item, web_answers  # noqa: F401

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None or DRIVER is None, reason="chromium and chromedriver are not installed (apt-get install chromium chromium-driver)"),
]

from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

from serve_pages import _csv_project, image_folder_project, table_project  # noqa: E402


def saved(driver, item: str, label: str) -> None:
    wait(driver, lambda d: ack(d) == f"saved {item} → {label}", f"{item} acknowledged as {label}")


def answer_the_first(driver, url: str, key: str) -> None:
    """Open `url` and answer its first item, `key`, with key 1 (class a)."""
    driver.get(url)
    wait_for_item(driver, key)
    press(driver, "1")
    saved(driver, key, "a")


def test_a_double_click_and_a_held_key_answer_once(sqlite_db, tmp_path, browser):
    """The second click of a double click (detail 2) that lands on the next item's button, once the
    first answer came back, and a key's auto-repeat, must not answer the next item unseen."""
    keys = table_project(sqlite_db, tmp_path, k=5)
    with served(sqlite_db, "blobs", "ann", folder=tmp_path) as (_, urls):
        driver = browser()
        driver.get(urls["ann"])
        wait_for_item(driver, keys[0])
        ActionChains(driver).double_click(driver.find_element(By.CSS_SELECTOR, '#card button[data-value="b"]')).perform()
        saved(driver, keys[0], "b")
        wait_for_item(driver, keys[1])
        second_click = "document.querySelector('#card button[data-value=\"b\"]').dispatchEvent(new MouseEvent('click', {bubbles: true, detail: 2}));"
        driver.execute_script(second_click)
        press(driver, "3")  # what the labeller meant for this item
        saved(driver, keys[1], "c")
        wait_for_item(driver, keys[2])
        driver.execute_script("document.body.dispatchEvent(new KeyboardEvent('keydown', {key: '1', repeat: true, bubbles: true}));")
        press(driver, "2")
        saved(driver, keys[2], "b")
        wait_for_item(driver, keys[3])
    assert web_answers(sqlite_db, "blobs") == [(keys[0], "b", "ann"), (keys[1], "c", "ann"), (keys[2], "b", "ann")]


def test_an_image_that_does_not_load_cannot_be_answered(sqlite_db, tmp_path, browser):
    names = image_folder_project(sqlite_db, tmp_path, k=3)
    with served(sqlite_db, "shapes", "ann", folder=tmp_path) as (_, urls):
        driver = browser()
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["*/image?*"]})  # as a slow or broken network
        driver.get(urls["ann"])
        wait(driver, lambda d: ack(d) == "the image of query 1 did not load: skip it (s), or reload the page", "the page says so")
        assert driver.find_element(By.CSS_SELECTOR, "#card p.item.missing").text == "the image of query 1 is not available"  # where the image was
        assert all(not b.is_enabled() for b in driver.find_elements(By.CSS_SELECTOR, "#card button.answer"))
        press(driver, "1")
        press(driver, "s")  # skipping still works
        wait_for_item(driver, names[1])
        wait(driver, lambda d: ack(d) == "the image of query 2 did not load: skip it (s), or reload the page", "the next one neither")
        driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})
        driver.refresh()
        wait_for_item(driver, names[1])
        wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, "#card button.answer").is_enabled(), "the image drawn: the buttons answer")
        press(driver, "2")
        saved(driver, names[1], "light")
    assert [v for _, v, _ in web_answers(sqlite_db, "shapes")] == ["light"]


def test_by_keyboard_alone_the_focus_is_on_the_next_item(sqlite_db, tmp_path, browser):
    """After each answer the focus is on the new item (a screen reader reads its name), so Tab
    reaches its first class and Enter answers; the answers are announced by the status line."""
    keys = table_project(sqlite_db, tmp_path, k=3)
    with served(sqlite_db, "blobs", "ann", folder=tmp_path) as (_, urls):
        driver = browser()
        answer_the_first(driver, urls["ann"], keys[0])
        wait_for_item(driver, keys[1])
        focused = driver.switch_to.active_element
        assert (focused.get_attribute("role"), focused.get_attribute("aria-label")) == ("group", f"round 1, {keys[1]}")
        press(driver, "\ue004")  # Tab
        assert driver.switch_to.active_element.get_attribute("aria-keyshortcuts") == "1"
        press(driver, "\ue006")  # Enter
        saved(driver, keys[1], "a")
        assert driver.find_element(By.ID, "ack").get_attribute("role") == "status"
    assert [k for k, _, _ in web_answers(sqlite_db, "blobs")] == keys[:2]


def test_a_phone_sized_window(sqlite_db, tmp_path, browser):
    """375 x 667: a wide row with long text, gaps, units, non-ASCII text and 26 classes, one a
    single word wider than the window, fits the width (no sideways scrolling); a tap on a class
    answers, and the find field finds a class without its accents ("zur": Zürich)."""
    classes = [f"espèce-{c}" for c in "αβγδεζηθικλμνξοπρστυφχψω"] + ["Zürich", "Rhinolophusferrumequinum" * 3]
    rows = [["id", "commentaire", "Größe (cm)", "note", *[f"mesure_{j}" for j in range(12)], "label"]]
    rows += [[f"r{i}", "très " * 60 + "fin", f"{i}.5 cm", "" if i % 2 else "ok", *["1234567.891"] * 12, classes[i % 25]] for i in range(30)]
    keys = _csv_project(sqlite_db, tmp_path, "phone", rows, ("--classes", ",".join(classes)), ("--text-column", "commentaire"), k=2)
    with served(sqlite_db, "phone", "ann", folder=tmp_path) as (_, urls):
        driver = browser()
        driver.set_window_size(375, 667)
        driver.get(urls["ann"])
        wait_for_item(driver, keys[0])
        width = driver.execute_script("return [document.documentElement.scrollWidth, window.innerWidth];")
        assert width[0] <= width[1], width
        button = driver.find_element(By.CSS_SELECTOR, '#card button[data-value="Zürich"]')
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", button)
        ActionChains(driver).move_to_element(button).click().perform()
        saved(driver, keys[0], "Zürich")
        wait_for_item(driver, keys[1])
        press(driver, "/")
        press(driver, "zur\ue007")  # Enter
        saved(driver, keys[1], "Zürich")
    assert web_answers(sqlite_db, "phone") == [(keys[0], "Zürich", "ann"), (keys[1], "Zürich", "ann")]


def test_a_server_restarted_under_an_open_tab(sqlite_db, tmp_path, browser):
    """A restarted server prints new URLs: the old tab's answer is refused with that line (not the
    advice to reload, which cannot help), nothing is written, and the new URL goes on."""
    keys = table_project(sqlite_db, tmp_path, k=3)
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = ("--port", str(free.getsockname()[1]))  # the same address both times, as `serve --port 8000`
    with served(sqlite_db, "blobs", "ann", folder=tmp_path, extra=port) as (_, urls):
        driver = browser()
        driver.get(urls["ann"])
        wait_for_item(driver, keys[0])
    with served(sqlite_db, "blobs", "ann", folder=tmp_path, extra=port) as (_, urls):
        press(driver, "1")
        wait(driver, lambda d: "not saved: forbidden: open the URL that `activebayes serve` printed for you" in ack(d), "refused")
        assert "Reload the page" not in ack(driver)
        assert web_answers(sqlite_db, "blobs") == []
        answer_the_first(driver, urls["ann"], keys[0])


def test_the_back_button_a_finished_round_and_a_bad_url(sqlite_db, tmp_path, browser):
    keys = table_project(sqlite_db, tmp_path, k=2)
    with served(sqlite_db, "blobs", "ann", folder=tmp_path) as (_, urls):
        driver = browser()
        answer_the_first(driver, urls["ann"], keys[0])
        driver.find_element(By.LINK_TEXT, "status").click()
        wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, ".counts"), "the status page")
        driver.back()
        wait_for_item(driver, keys[1])  # a fresh page, not a stale copy showing keys[0]
        assert driver.find_element(By.ID, "log").text == f"{keys[0]} → a change"  # the answer still listed, to change
        press(driver, "2")
        saved(driver, keys[1], "b")
        wait(driver, lambda d: "Every query of round 1 has its answer" in d.find_element(By.ID, "card").text, "the round done")
        press(driver, "1")  # nothing to answer: no request, no error
        time.sleep(0.3)
        assert ack(driver) == f"saved {keys[1]} → b"
        driver.get(urls["ann"].replace("token=", "token=x"))
        assert driver.find_element(By.TAG_NAME, "body").text.startswith("forbidden: open the URL that `activebayes serve` printed for you")
    assert [v for _, v, _ in web_answers(sqlite_db, "blobs")] == ["a", "b"]


def test_a_page_with_nothing_to_answer_follows_the_next_round(sqlite_db, tmp_path, browser):
    """Round 1 answered on this page; the next round is run elsewhere (another labeller's page, a
    terminal). Without a reload, the page shows that round's stage while it computes and its first
    query once it waits for answers; it used to say "Every query of round 1 has its answer" forever."""
    from activebayes.store import PoolStore

    keys = table_project(sqlite_db, tmp_path, k=2)
    with served(sqlite_db, "blobs", "ann", folder=tmp_path) as (_, urls):
        driver = browser()
        answer_the_first(driver, urls["ann"], keys[0])
        wait_for_item(driver, keys[1])
        press(driver, "2")
        saved(driver, keys[1], "b")
        wait(driver, lambda d: "Every query of round 1 has its answer" in d.find_element(By.ID, "card").text, "the round done")
        with PoolStore(sqlite_db) as store:
            store.advance_round("blobs", 1, "answered")
            store.advance_round("blobs", 1, "done")
            second = store.start_round("blobs", posterior="mc-dropout", acquisition="bald", seed=2)
        progress = lambda d: d.find_element(By.ID, "progress").text  # noqa: E731
        wait(driver, lambda d: progress(d) == "round 2: fitting the posterior", "the running round's stage shown")
        with PoolStore(sqlite_db) as store:
            store.advance_round("blobs", second.number, "fitted")
            asked = sorted(store.candidates("blobs")[0].tolist())[:3]
            store.record_queries("blobs", second.number, asked, [0.0] * 3, timings={})
            store.advance_round("blobs", second.number, "queried")
            first = store.queries("blobs", second.number)[0].key
        wait_for_item(driver, first)
        assert driver.find_element(By.CSS_SELECTOR, "#card .meta").text.startswith("round 2 ")
        press(driver, "3")
        saved(driver, first, "c")
    assert [v for _, v, _ in web_answers(sqlite_db, "blobs")] == ["a", "b", "c"]


def test_a_long_text_leaves_the_classes_on_screen(sqlite_db, tmp_path, browser):
    """A review of 400 words scrolls in its own box: the class buttons, skip and undo stay in the
    window (820 x 720) under it; they were pushed below the fold, a scroll away on every item."""
    words = ("quiet", "bright", "slow", "river", "engine", "paper", "garden", "signal")
    rows = [["id", "review", "stars", "label"]] + [[f"r{i:02d}", " ".join(words[(i + j) % 8] for j in range(400)), str(i % 5), ("bad", "good")[i % 2]]
                                                    for i in range(20)]  # fmt: skip
    keys = _csv_project(sqlite_db, tmp_path, "long", rows, ("--classes", "bad,good"), ("--text-column", "review"), k=2)
    with served(sqlite_db, "long", "ann", folder=tmp_path) as (_, urls):
        driver = browser()
        driver.get(urls["ann"])
        wait_for_item(driver, keys[0])
        below = "return [...document.querySelectorAll('#card button')].map(b => b.getBoundingClientRect().bottom <= window.innerHeight);"
        assert driver.execute_script(below) == [True] * 4  # bad, good, skip, undo
        text = driver.find_element(By.CSS_SELECTOR, "#card p.text")
        assert driver.execute_script("return arguments[0].scrollHeight > arguments[0].clientHeight;", text)  # the rest a scroll away in its box
        press(driver, "2")
        saved(driver, keys[0], "good")
    assert web_answers(sqlite_db, "long") == [(keys[0], "good", "ann")]


def test_a_large_image_fits_the_window_above_its_classes(sqlite_db, tmp_path, browser):
    """A 1000 x 1000 photo is drawn whole (scaled down, not cropped) within the window, the class
    buttons on screen under it, in a laptop's window and a tall one; it was 360 pixels high in
    any window, small on a large screen."""
    names = image_folder_project(sqlite_db, tmp_path, k=1, side=1000)
    fits = ("const i = document.querySelector('img.item'), r = i.getBoundingClientRect();"
            "const buttons = [...document.querySelectorAll('#card button')].map(b => b.getBoundingClientRect().bottom <= innerHeight);"
            "return [i.naturalWidth, Math.round(r.width), Math.round(r.height), r.right <= innerWidth, buttons, innerHeight];")  # fmt: skip
    with served(sqlite_db, "shapes", "ann", folder=tmp_path) as (_, urls):
        driver = browser()
        driver.get(urls["ann"])
        wait_for_item(driver, names[0])
        wait(driver, lambda d: d.execute_script(fits)[0] == 1000, "the image loaded")
        for size in ((820, 720), (1200, 1300)):
            driver.set_window_size(*size)
            natural, width, height, inside, buttons, window_height = driver.execute_script(fits)
            assert width == height and inside and buttons == [True] * 4, (size, width, height, buttons)
            assert 0.5 * window_height <= height <= 0.55 * window_height + 1  # dark, light, skip, undo under it
        assert height > 600


def test_a_finished_round_s_tab_says_when_the_server_restarted(sqlite_db, tmp_path, browser):
    """A page with nothing to answer asks the server for the next round: while the server is down
    it says so and asks again; once a restart changed the tokens it says so in the server's one line
    (not a JSON parse error), and stops asking."""
    keys = table_project(sqlite_db, tmp_path, k=1)
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = ("--port", str(free.getsockname()[1]))
    with served(sqlite_db, "blobs", "ann", folder=tmp_path, extra=port) as (_, urls):
        driver = browser()
        answer_the_first(driver, urls["ann"], keys[0])
        wait(driver, lambda d: "Every query of round 1 has its answer" in d.find_element(By.ID, "card").text, "the round done")
    wait(driver, lambda d: ack(d).startswith("no answer from the server: "), "the stopped server said")
    with served(sqlite_db, "blobs", "ann", folder=tmp_path, extra=port):
        wait(driver, lambda d: ack(d).startswith("forbidden: open the URL that `activebayes serve` printed for you"), "the restart said")


def test_with_two_answers_per_item_a_fast_labeller_waits_for_the_second_answers(sqlite_db, tmp_path, browser):
    """`--answers-per-item 2`: once alice answered every query, each has a label, but not yet bob's
    answer. Her page says so, and that the next round run now goes without them, rather than
    "Every query has its answer" and a plain "run the next round" that ended bob's round; it looks
    again by itself, and says the round is complete once bob's answers are in."""
    from activebayes.store import PoolStore

    keys = table_project(sqlite_db, tmp_path, k=2)
    with served(sqlite_db, "blobs", "alice", "bob", folder=tmp_path, extra=("--answers-per-item", "2")) as (_, urls):
        driver = browser()
        answer_the_first(driver, urls["alice"], keys[0])
        wait_for_item(driver, keys[1])
        press(driver, "2")
        saved(driver, keys[1], "b")
        card = lambda d: d.find_element(By.ID, "card").text  # noqa: E731
        wait(driver, lambda d: "You answered every query of round 1; 2 of them still wait for another labeller's answer" in card(d), "waits for bob")
        assert driver.find_element(By.ID, "next-round").text == "run the next round now, without the answers still to come"
        with PoolStore(sqlite_db) as store:
            for key in keys:
                store.record_labels("blobs", [(key, "c", 1)], who="bob", source="web", expected={key: None}, relabel=True, per_labeller=True)
        wait(driver, lambda d: "Every query of round 1 has its answer" in card(d), "bob's answers in: the round complete")
        assert driver.find_element(By.ID, "next-round").text == "run the next round"
    assert sorted((k, v, who) for k, v, who in web_answers(sqlite_db, "blobs")) == sorted(
        [(keys[0], "a", "alice"), (keys[1], "b", "alice"), (keys[0], "c", "bob"), (keys[1], "c", "bob")])
