"""The labelling page's keys and corrections in headless Chromium (see test_serve_browser.py): a
number typed with its unit ("4.5 s") is text in the field, not the skip and undo keys; a negative
number by the ± button beside a phone's decimal keypad, or typed on the full keyboard; a wrong
class given a few items back is changed from the list of answers; the keyboard's place is seen;
every text and control has the contrast WCAG AA asks for."""

from __future__ import annotations

from pathlib import Path

from test_serve_browser import ack, browser, press, served, shown_key, sqlite_db, wait, wait_for_item, web_answers  # noqa: F401
from test_serve_browser_use import pytestmark, saved  # noqa: F401

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

from serve_pages import _csv_project, regression_project, table_project  # noqa: E402


def test_a_number_typed_with_its_unit_is_text_not_keys(sqlite_db, tmp_path, browser):
    """A project whose times were written "3.5 s": typing "4.5 s" in the number field used to skip
    the item at the "s" (and a "u" undid the last answer). In the field letters are text; Escape
    leaves it, then s skips, and a digit typed outside goes back into the field."""
    rows = [["id", "distance", "time"]] + [[f"run{i:02d}", str(i), f"{1.5 + i:.1f} s"] for i in range(20)]
    keys = _csv_project(sqlite_db, tmp_path, "timing", rows, ("--task", "regression"), ("--label-column", "time"), k=3)
    with served(sqlite_db, "timing", "ann", folder=tmp_path) as (_, urls):
        driver = browser()
        driver.get(urls["ann"])
        wait_for_item(driver, keys[0])
        assert driver.switch_to.active_element.get_attribute("id") == "number"
        press(driver, "4.5 s")
        assert (shown_key(driver), driver.find_element(By.ID, "number").get_attribute("value")) == (keys[0], "4.5 s")
        press(driver, Keys.ENTER)
        saved(driver, keys[0], "4.5")
        wait_for_item(driver, keys[1])
        press(driver, Keys.ESCAPE)
        press(driver, "s")
        wait(driver, lambda d: ack(d) == f"skipped {keys[1]}", "skipped by its key outside the field")
        wait_for_item(driver, keys[2])
        press(driver, Keys.ESCAPE)
        press(driver, "7.25")
        assert driver.find_element(By.ID, "number").get_attribute("value") == "7.25"
        press(driver, Keys.ENTER)
        saved(driver, keys[2], "7.25")
    assert web_answers(sqlite_db, "timing") == [(keys[0], "4.5", "ann"), (keys[2], "7.25", "ann")]


def test_a_negative_number_by_the_sign_button_or_typed(sqlite_db, tmp_path, browser):
    """A phone picks its keyboard by the field's inputmode, and an iPhone's decimal keypad has no
    minus sign. While the project's labels are all positive the field asks for that keypad, with a
    ± button beside it: "3.5" then ± is "-3.5" (the field keeps the focus), and is saved. From then
    on the field asks for the full keyboard, where "-2.25" is typed."""
    plots = regression_project(sqlite_db, tmp_path)
    with served(sqlite_db, "yield", "ann", folder=tmp_path) as (_, urls):
        driver = browser()
        driver.get(urls["ann"])
        wait_for_item(driver, plots[0])
        field = driver.find_element(By.ID, "number")
        assert field.get_attribute("inputmode") == "decimal"
        press(driver, "3.5")
        driver.find_element(By.ID, "sign").click()
        assert (field.get_attribute("value"), driver.switch_to.active_element.get_attribute("id")) == ("-3.5", "number")
        driver.find_element(By.ID, "sign").click()  # back to positive, then negative again
        assert field.get_attribute("value") == "3.5"
        driver.find_element(By.ID, "sign").click()
        press(driver, Keys.ENTER)
        saved(driver, plots[0], "-3.5")
        wait_for_item(driver, plots[1])
        field = driver.find_element(By.ID, "number")
        assert field.get_attribute("inputmode") == "text" and not driver.find_elements(By.ID, "sign")
        press(driver, "-2.25")
        press(driver, Keys.ENTER)
        saved(driver, plots[1], "-2.25")
    assert web_answers(sqlite_db, "yield") == [(plots[0], "-3.5", "ann"), (plots[1], "-2.25", "ann")]


def layout(driver, key: str, code: str) -> None:
    """A key press as another keyboard layout reports it: `key` what it types, `code` its place."""
    driver.execute_script("document.activeElement.dispatchEvent(new KeyboardEvent('keydown', {key: arguments[0], code: arguments[1], bubbles: true}));", key, code)


def test_a_wrong_class_is_changed_from_the_list_of_answers(sqlite_db, tmp_path, browser):
    """Two items on, the labeller sees the first one was wrong: "change" beside it in the list of
    answers takes that answer back (the second stays) and shows the item again; by keyboard the
    focus ring shows where the keys act, and once the round is done the focus is on what says so.
    The keys answer by their place on a French or Russian keyboard too."""
    keys = table_project(sqlite_db, tmp_path, k=3)
    with served(sqlite_db, "blobs", "ann", folder=tmp_path) as (_, urls):
        driver = browser()
        driver.get(urls["ann"])
        wait_for_item(driver, keys[0])
        press(driver, "1")
        saved(driver, keys[0], "a")
        wait_for_item(driver, keys[1])
        layout(driver, "é", "Digit2")  # a French keyboard's 2 key, unshifted
        saved(driver, keys[1], "b")
        wait_for_item(driver, keys[2])
        ring = "const s = getComputedStyle(document.activeElement); return [document.activeElement.dataset.key, s.outlineStyle];"
        assert driver.execute_script(ring) == [keys[2], "solid"]
        driver.find_element(By.CSS_SELECTOR, f'#log button.change[data-key="{keys[0]}"]').click()
        wait(driver, lambda d: ack(d) == f"took back the answer for {keys[0]}", "the first answer taken back")
        wait_for_item(driver, keys[0])
        assert [li.text for li in driver.find_elements(By.CSS_SELECTOR, "#log li")] == [f"{keys[1]} → b change"]
        press(driver, "3")
        saved(driver, keys[0], "c")
        wait_for_item(driver, keys[2])
        press(driver, "1")
        wait(driver, lambda d: "Every query of round 1 has its answer" in d.find_element(By.ID, "card").text, "the round done")
        assert driver.switch_to.active_element.get_attribute("class") == "card empty"  # read first, then a Tab to the next round
        layout(driver, "г", "KeyU")  # a Russian keyboard's u key
        wait(driver, lambda d: ack(d) == f"took back the answer for {keys[2]}", "undone on another layout")
        wait_for_item(driver, keys[2])
    assert web_answers(sqlite_db, "blobs") == [(keys[1], "b", "ann"), (keys[0], "c", "ann")]


def test_every_text_and_control_can_be_read(sqlite_db, tmp_path, browser):
    """Contrast (WCAG AA, tests/page_contrast.js) on an item with a text column, after an answer
    (the list with its change button) and on the status page; skip and undo had a 1.5:1 outline."""
    low = (Path(__file__).parent / "page_contrast.js").read_text()
    keys = table_project(sqlite_db, tmp_path, k=2, hostile=True)
    with served(sqlite_db, "blobs", "ann", folder=tmp_path) as (_, urls):
        driver = browser()
        driver.get(urls["ann"])
        wait_for_item(driver, keys[0])
        assert driver.execute_script(low) == []
        press(driver, "1")
        saved(driver, keys[0], "a")
        assert driver.find_elements(By.CSS_SELECTOR, "#log button.change") and driver.execute_script(low) == []
        driver.get(urls["ann"].replace("/label?", "/status?"))
        wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, ".counts"), "the status page")
        assert driver.execute_script(low) == []
