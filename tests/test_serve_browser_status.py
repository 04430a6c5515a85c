"""The status page and the card's words in headless Chromium (see test_serve_browser.py): the
status page follows the project by itself, without a reload and without taking away a selection
or the focus; it asks before a round that goes without the second answers still to come; a
regression answer is acknowledged as the number stored, in a field labelled by the question."""

from __future__ import annotations

import pytest

from test_serve_browser import CHROMIUM, DRIVER, ack, browser, served, sqlite_db, wait, wait_for_item, web_answers  # noqa: F401

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None or DRIVER is None, reason="chromium and chromedriver are not installed (apt-get install chromium chromium-driver)"),
]

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from activebayes.store import PoolStore  # noqa: E402
from serve_pages import regression_project, table_project  # noqa: E402
from test_serve_browser import WAIT_S  # noqa: E402


def status_url(urls: dict[str, str], who: str) -> str:
    return urls[who].replace("/label?", "/status?")


def answered(db: str, key: str, label: str, who: str, *, several: bool = False) -> None:
    """`who`'s answer to `key` in round 1, as another labeller's page or the prompt records it."""
    with PoolStore(db) as store:
        store.record_labels("blobs", [(key, label, 1)], who=who, source="web", expected={key: None}, relabel=several, per_labeller=several)


def counts(driver) -> str:
    return " ".join(driver.find_element(By.CSS_SELECTOR, ".counts").text.split())


def first_labeller(driver) -> str:
    return driver.execute_script("const r = document.querySelector('[data-live=details] table.grid tbody tr'); return r ? r.innerText : '';")


def test_the_status_page_follows_the_project_without_a_reload(sqlite_db, tmp_path, browser):
    """Answers given elsewhere show on an open status page within seconds; it is never reloaded.
    A part holding a selection (a key being copied) waits until the selection ends, the others
    follow meanwhile; the focus on the next-round button stays where it was."""
    keys = table_project(sqlite_db, tmp_path, k=3)
    with served(sqlite_db, "blobs", "ann", folder=tmp_path) as (_, urls):
        driver = browser()
        driver.get(status_url(urls, "ann"))
        assert "0 labelled of 30 pool items" in counts(driver)
        driver.execute_script("window.notReloaded = true;")
        answered(sqlite_db, keys[0], "a", "bob")
        wait(driver, lambda d: "1 labelled of 30 pool items" in counts(d), "the answer counted")
        wait(driver, lambda d: first_labeller(d).split()[:2] == ["bob", "1"], "bob's answer listed")

        select = "const td = document.querySelector('[data-live=details] table.grid tbody td'); window.getSelection().selectAllChildren(td);"
        driver.execute_script(select)
        answered(sqlite_db, keys[1], "b", "bob")
        wait(driver, lambda d: "2 labelled of 30 pool items" in counts(d), "the counts follow")
        wait(driver, lambda d: d.execute_script("return document.querySelector('[data-live=details]').dataset.stale === '1';"), "the selected part waits")
        assert driver.execute_script("return window.getSelection().toString();") == "bob"
        assert first_labeller(driver).split()[:2] == ["bob", "1"]
        driver.execute_script("window.getSelection().removeAllRanges();")
        wait(driver, lambda d: first_labeller(d).split()[:2] == ["bob", "2"], "the selection ended: the part follows")

        answered(sqlite_db, keys[2], "c", "bob")
        wait(driver, lambda d: d.find_elements(By.ID, "next-round"), "every answer in: the button offered")
        driver.execute_script("document.getElementById('next-round').focus();")
        with PoolStore(sqlite_db) as store:  # a label given outside the round: the counts change, the button does not
            other = sorted(set(store.item_keys("blobs")) - set(keys))[0]
            store.record_observations("blobs", [(other, "a")], who="carl", source="prompt")
        wait(driver, lambda d: "4 labelled of 30 pool items" in counts(d), "the label counted")
        assert driver.switch_to.active_element.get_attribute("id") == "next-round"
        assert driver.execute_script("return window.notReloaded === true;")


def test_the_status_page_asks_before_a_round_without_the_second_answers(sqlite_db, tmp_path, browser):
    """`--answers-per-item 2`: alice answered both queries, bob not yet. The status page says so,
    and its button asks first: dismissed, nothing is sent; accepted, the round is asked for. Once
    bob's answers are in, the page shows the plain button by itself."""
    keys = table_project(sqlite_db, tmp_path, k=2)
    with served(sqlite_db, "blobs", "alice", "bob", folder=tmp_path, extra=("--answers-per-item", "2")) as (_, urls):
        for key in keys:
            answered(sqlite_db, key, "a", "alice", several=True)
        driver = browser()
        driver.get(status_url(urls, "alice"))
        said = "2 queries of round 1 still wait for another labeller's answer (--answers-per-item 2)."
        assert driver.find_element(By.CSS_SELECTOR, ".wanting").text == said
        button = driver.find_element(By.ID, "next-round")
        assert button.text == "run the next round now, without the answers still to come"
        spy = ("window.posted = []; const send = window.fetch; window.fetch = (url, options) => {"
               " if (options && options.method === 'POST') { window.posted.push(String(url)); return Promise.reject(new Error('held by the test')); }"
               " return send(url, options); };")  # fmt: skip
        driver.execute_script(spy)
        question = "2 queries of round 1 still wait for another labeller's answer. Run the next round now, without them?"
        button.click()
        alert = WebDriverWait(driver, WAIT_S).until(expected_conditions.alert_is_present(), "the page asks")
        assert alert.text == question
        alert.dismiss()
        assert driver.execute_script("return window.posted;") == [] and button.is_enabled()
        button.click()
        WebDriverWait(driver, WAIT_S).until(expected_conditions.alert_is_present(), "the page asks again").accept()
        wait(driver, lambda d: ack(d) == "the round did not start: held by the test", "the round asked for")
        assert [url.split("?")[0].rsplit("/", 2)[1:] for url in driver.execute_script("return window.posted;")] == [["blobs", "round"]]
        for key in keys:
            answered(sqlite_db, key, "b", "bob", several=True)
        wait(driver, lambda d: d.find_element(By.ID, "next-round").text == "run the next round", "bob's answers in: the plain button")
        assert not driver.find_elements(By.CSS_SELECTOR, ".wanting") and driver.find_element(By.ID, "next-round").get_attribute("data-confirm") is None


def test_a_regression_answer_is_acknowledged_as_the_number_stored(sqlite_db, tmp_path, browser):
    """The card asks "What value does this item have?", which names the number field for a screen
    reader; "1e3" is acknowledged and logged as 1000.0 and " 3,5 " as 3.5, the labels in the database."""
    plots = regression_project(sqlite_db, tmp_path)
    with served(sqlite_db, "yield", "ann", folder=tmp_path) as (_, urls):
        driver = browser()
        driver.get(urls["ann"])
        wait_for_item(driver, plots[0])
        assert driver.find_element(By.ID, "question").text == "What value does this item have? a number"
        assert driver.find_element(By.ID, "number").accessible_name == "What value does this item have? a number"
        driver.find_element(By.ID, "number").send_keys("1e3\n")
        wait(driver, lambda d: ack(d) == f"saved {plots[0]} → 1000.0", "1e3 acknowledged as stored")
        wait_for_item(driver, plots[1])
        driver.find_element(By.ID, "number").send_keys(" 3,5 \n")
        wait(driver, lambda d: ack(d) == f"saved {plots[1]} → 3.5", "3,5 acknowledged as stored")
        log = driver.execute_script("return [...document.querySelectorAll('#log li')].map(li => [li.dataset.key, li.dataset.value]);")
    assert sorted(map(tuple, log)) == sorted([(plots[0], "1000.0"), (plots[1], "3.5")])
    assert sorted((k, v) for k, v, _ in web_answers(sqlite_db, "yield")) == sorted(map(tuple, log))
