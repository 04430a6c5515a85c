"""The labelling page in a real browser: headless Chromium (Debian's `chromium`) driven by
Selenium through `chromedriver` (`chromium-driver`), against `activebayes serve` (uvicorn) in a
child process. A round labelled by keyboard on an image pool and on a table, undo, two labellers
at once, a server killed between an answer and its acknowledgement, and the model's guess (no
placeholder in the number box unless `serve --show-model-guess`). Skipped, with the reason,
where chromium or chromedriver is not installed (`.ci/run` installs them).

With ACTIVEBAYES_SCREENSHOTS=FOLDER the screenshots of each page type are written there (README.md's
are made with ACTIVEBAYES_SCREENSHOTS=$PWD/docs/screenshots: an absolute path, as the tests run in folders of their own); otherwise into the test's own folder.
"""

from __future__ import annotations

import io
import os
import shutil
import signal
import time
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,  # each starts `activebayes serve` (seconds: it imports torch) and a browser
    pytest.mark.skipif(CHROMIUM is None or DRIVER is None, reason="chromium and chromedriver are not installed (apt-get install chromium chromium-driver)"),
]
pytest.importorskip("selenium", reason="selenium is not installed")
pytest.importorskip("uvicorn", reason="the serve extra is not installed")

from selenium import webdriver  # noqa: E402
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from activebayes.store import PoolStore  # noqa: E402
from serve_pages import image_folder_project, image_project, regression_project, served, table_project, text_project  # noqa: E402

WAIT_S = 20


@pytest.fixture
def browser():
    """Opens headless Chromium windows (each with a profile of its own); all closed afterwards."""
    drivers = []

    def open_window():
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=820,720",
                    "--disable-extensions", "--no-first-run", "--disable-background-networking"):  # fmt: skip
            options.add_argument(arg)
        driver = webdriver.Chrome(service=Service(DRIVER), options=options)
        driver.set_page_load_timeout(WAIT_S)
        drivers.append(driver)
        return driver

    yield open_window
    for driver in drivers:
        driver.quit()


@pytest.fixture
def sqlite_db(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return f"sqlite:///{tmp_path / 'serve.db'}"


def wait(driver, condition, what: str):
    """Poll `condition` until it holds; an element found by it that the page replaced before it was
    read (a live part redrawn) is found again at the next poll, not a failure."""
    return WebDriverWait(driver, WAIT_S, poll_frequency=0.05, ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)
                         ).until(lambda d: condition(d), message=what)  # fmt: skip


def shown_key(driver) -> str | None:
    """The key of the item on the page (read in one script: the card may be replaced meanwhile)."""
    return driver.execute_script("const c = document.querySelector('#card .card[data-key]'); return c ? c.dataset.key : null;")


def wait_for_item(driver, key: str) -> None:
    wait(driver, lambda d: shown_key(d) == key, f"item {key} shown")


def ack(driver) -> str:
    return driver.execute_script("return document.getElementById('ack').textContent;")


def press(driver, key: str) -> None:
    ActionChains(driver).send_keys(key).perform()


def answer_by_key(driver, press_key: str, item: str, label: str) -> None:
    """Press `press_key` on item `item` and wait for the page to acknowledge `label` as saved. The
    key is pressed once the item can be answered: an image item's class buttons wait for its image
    to be drawn (page.js `enableButtons`), and a key pressed before then is ignored."""
    wait_for_item(driver, item)
    ready = "const b = document.querySelector('#card button.answer'); return Boolean(b) && !b.disabled;"
    wait(driver, lambda d: d.execute_script(ready), f"{item} ready to answer")
    press(driver, press_key)
    wait(driver, lambda d: ack(d) == f"saved {item} → {label}", f"{item} acknowledged as {label}")


def logged(driver) -> dict[str, str]:
    """The answers the page acknowledged (its log), key -> label."""
    return driver.execute_script(
        "return Object.fromEntries([...document.querySelectorAll('#log li')].map(li => [li.dataset.key, li.dataset.value]));")


def web_answers(db: str, project: str) -> list[tuple[str, str, str]]:
    with PoolStore(db, create=False) as store:
        return [(o["key"], o["value"], o["who"]) for o in store.observations(project) if o["source"] == "web"]


def screenshot(driver, name: str, folder: Path) -> Path:
    """The window as a small PNG (64 colours) in ACTIVEBAYES_SCREENSHOTS or `folder`."""
    from PIL import Image

    target = Path(os.environ.get("ACTIVEBAYES_SCREENSHOTS") or folder)
    target.mkdir(parents=True, exist_ok=True)
    image = Image.open(io.BytesIO(driver.get_screenshot_as_png())).convert("RGB")
    path = target / f"{name}.png"
    image.quantize(colors=64, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)
    return path


# ---- a round by keyboard ----------------------------------------------------------------------------
def test_an_image_round_by_keyboard_with_skip_and_undo(sqlite_db, tmp_path, browser):
    keys = image_project(sqlite_db, tmp_path)  # classes 0-9: each digit key answers the class of its name
    with served(sqlite_db, "digits", "ann", folder=tmp_path) as (_, urls):
        driver = browser()
        driver.get(urls["ann"])
        wait_for_item(driver, keys[0])
        wait(driver, lambda d: d.execute_script("return document.querySelector('img.item').naturalWidth") >= 160, "the image drawn")
        screenshot(driver, "image", tmp_path)
        answer_by_key(driver, "2", keys[0], "2")
        answer_by_key(driver, "4", keys[1], "4")
        press(driver, "u")
        wait(driver, lambda d: ack(d) == f"took back the answer for {keys[1]}", "undo acknowledged")
        answer_by_key(driver, "7", keys[1], "7")
        wait_for_item(driver, keys[2])
        press(driver, "s")
        for number, key in enumerate(keys[3:]):
            answer_by_key(driver, str(number), key, str(number))
        wait(driver, lambda d: d.find_elements(By.ID, "unskip"), "the skipped item offered again")
        driver.find_element(By.ID, "unskip").click()
        answer_by_key(driver, "9", keys[2], "9")
        wait(driver, lambda d: "Every query of round 1 has its answer" in d.find_element(By.ID, "card").text, "the round done")
        assert logged(driver) == {keys[0]: "2", keys[1]: "7", keys[3]: "0", keys[4]: "1", keys[5]: "2", keys[2]: "9"}
    with PoolStore(sqlite_db) as store:  # the page named the items "query 1", ...: their keys, by rank
        key_of = {name: q.key for name, q in zip(keys, store.queries("digits", 1))}
    assert sorted(web_answers(sqlite_db, "digits")) == sorted((key_of[k], v, "ann") for k, v in logged(driver).items())


def test_a_small_image_file_is_enlarged_with_square_pixels(sqlite_db, tmp_path, browser):
    """An image folder's 16 x 16 PNGs are served as the files are; the page draws them 160 pixels
    wide (a whole factor, 10), as the server enlarges an array's image; they were a 16-pixel speck."""
    keys = image_folder_project(sqlite_db, tmp_path)
    with served(sqlite_db, "shapes", "ann", folder=tmp_path) as (_, urls):
        driver = browser()
        driver.get(urls["ann"])
        wait_for_item(driver, keys[0])
        size = "const i = document.querySelector('img.item'); return [i.naturalWidth, i.offsetWidth, i.offsetHeight, i.className];"
        wait(driver, lambda d: d.execute_script(size)[0] > 0, "the image loaded")
        wait(driver, lambda d: d.execute_script(size)[1] == 160, "the image enlarged")  # its border included
        natural, width, height, classes = driver.execute_script(size)
        assert natural == 16 and width == height == 160 and "enlarged" in classes
        screenshot(driver, "image-file", tmp_path)


def test_a_table_round_by_keyboard_and_the_status_page(sqlite_db, tmp_path, browser):
    keys = table_project(sqlite_db, tmp_path, k=4)
    with served(sqlite_db, "blobs", "ann", folder=tmp_path) as (_, urls):
        driver = browser()
        driver.get(urls["ann"])
        wait_for_item(driver, keys[0])
        assert driver.find_element(By.CSS_SELECTOR, "#card table.row").text.startswith("f0")
        screenshot(driver, "table", tmp_path)
        for key, (press_key, label) in zip(keys, [("1", "a"), ("2", "b"), ("3", "c"), ("1", "a")]):
            answer_by_key(driver, press_key, key, label)
        driver.get(urls["ann"].replace("/label?", "/status?"))
        assert "4 labelled of 30 pool items" in " ".join(driver.find_element(By.CSS_SELECTOR, ".counts").text.split())
        assert driver.find_element(By.CSS_SELECTOR, "table.grid tbody tr").text.startswith("ann 4")
    assert [v for _, v, _ in web_answers(sqlite_db, "blobs")] == ["a", "b", "c", "a"]


def test_many_classes_are_found_by_typing(sqlite_db, tmp_path, browser):
    """Fourteen classes: the first ten keep their keys; "/" opens the find field, typing hides the
    classes that do not hold the text, Enter answers with the one named exactly so, else the only
    one starting so, else the only one left, and the next item's field has the focus again; s and
    u typed there are letters, not actions; Escape leaves it, and the digits answer again."""
    classes = ["a", "b", "c", "acer", "alnus", "betula", "carpinus", "fagus", "fraxinus", "larix", "picea", "pinus", "quercus", "salix"]
    keys = table_project(sqlite_db, tmp_path, k=4, classes=",".join(classes))
    with served(sqlite_db, "blobs", "ann", folder=tmp_path) as (_, urls):
        driver = browser()
        driver.get(urls["ann"])
        wait_for_item(driver, keys[0])
        buttons = driver.find_elements(By.CSS_SELECTOR, "#card button.answer")
        assert [b.text for b in buttons][8:] == ["9 fraxinus", "0 larix", "picea", "pinus", "quercus", "salix"]  # classes in natural order
        press(driver, "/")
        field = driver.find_element(By.ID, "find")
        assert driver.switch_to.active_element == field
        field.send_keys("sal")  # an s that does not skip
        visible = lambda d: [b.get_attribute("data-value") for b in d.find_elements(By.CSS_SELECTOR, "#card button.answer") if b.is_displayed()]  # noqa: E731
        wait(driver, lambda d: visible(d) == ["salix"], "only salix shown")
        field.send_keys("\n")
        wait(driver, lambda d: ack(d) == f"saved {keys[0]} → salix", "salix acknowledged")
        wait_for_item(driver, keys[1])
        field = driver.find_element(By.ID, "find")
        assert driver.switch_to.active_element == field  # typing goes on
        field.send_keys("p")
        wait(driver, lambda d: visible(d) == ["carpinus", "picea", "pinus"], "three hold p")
        field.send_keys("\n")
        wait(driver, lambda d: ack(d) == '3 classes hold "p": type more, or click one', "several left: no answer")
        field.send_keys("inu\n")
        wait(driver, lambda d: ack(d) == f"saved {keys[1]} → pinus", "pinus acknowledged")  # carpinus holds pinu too, pinus starts so
        wait_for_item(driver, keys[2])
        driver.find_element(By.ID, "find").send_keys("a\n")  # a class named exactly so, among many holding an a
        wait(driver, lambda d: ack(d) == f"saved {keys[2]} → a", "a acknowledged")
        wait_for_item(driver, keys[3])
        press(driver, "\ue00c")  # Escape: out of the field, and the digits answer again
        press(driver, "0")
        wait(driver, lambda d: ack(d) == f"saved {keys[3]} → larix", "key 0 is the tenth class")
    assert [v for _, v, _ in web_answers(sqlite_db, "blobs")] == ["salix", "pinus", "a", "larix"]


def test_text_and_regression_pages(sqlite_db, tmp_path, browser):
    text_project(sqlite_db, tmp_path)
    plots = regression_project(sqlite_db, tmp_path)
    with served(sqlite_db, "reviews", "ann", folder=tmp_path) as (_, urls):
        driver = browser()
        driver.get(urls["ann"])
        wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#card p.text"), "the review shown as text")
        screenshot(driver, "text", tmp_path)
    with served(sqlite_db, "yield", "ann", folder=tmp_path) as (_, urls):
        driver.get(urls["ann"])
        wait_for_item(driver, plots[0])
        field = driver.find_element(By.ID, "number")
        assert driver.switch_to.active_element == field  # ready to type
        assert not field.get_attribute("placeholder")  # the round's prediction (2.5) is not offered as the answer
        assert not driver.find_elements(By.CSS_SELECTOR, "#card .prediction")
        field.send_keys("3.25")
        screenshot(driver, "regression", tmp_path)
        field.send_keys("\n")
        wait(driver, lambda d: ack(d) == f"saved {plots[0]} → 3.25", "the number acknowledged")
        wait_for_item(driver, plots[1])
    assert web_answers(sqlite_db, "yield") == [(plots[0], "3.25", "ann")]


def test_the_model_s_guess_only_with_show_model_guess(sqlite_db, tmp_path, browser):
    plots = regression_project(sqlite_db, tmp_path)  # round 1's first query predicted 2.5 ± 0.4
    with served(sqlite_db, "yield", "ann", folder=tmp_path, extra=("--show-model-guess",)) as (_, urls):
        driver = browser()
        driver.get(urls["ann"])
        wait_for_item(driver, plots[0])
        assert driver.find_element(By.ID, "number").get_attribute("placeholder") == "2.5"
        assert driver.find_element(By.CSS_SELECTOR, "#card .prediction").text == "model: 2.5 ± 0.4"


def test_status_page_with_a_learning_curve(sqlite_db, tmp_path, browser):
    keys = table_project(sqlite_db, tmp_path, k=4)
    with PoolStore(sqlite_db) as store:  # three closed rounds that measured the model, then one waiting
        for number, accuracy in ((1, 0.58), (2, 0.71), (3, 0.83)):
            for key in keys:
                store.record_labels("blobs", [(key, "a", number)], who=("ann", "bob")[number % 2], source="web", expected={key: None})
            store.advance_round("blobs", number, "answered")
            store.advance_round("blobs", number, "done", metrics={"accuracy": accuracy})
            rnd = store.start_round("blobs", posterior="mc-dropout", acquisition="bald", seed=number)
            store.advance_round("blobs", rnd.number, "fitted")
            keys = sorted(store.candidates("blobs")[0].tolist())[:4]
            store.record_queries("blobs", rnd.number, keys, [0.0] * 4, timings={})
            store.advance_round("blobs", rnd.number, "queried")
            keys = [q.key for q in store.queries("blobs", rnd.number)]
    with served(sqlite_db, "blobs", "ann", folder=tmp_path) as (_, urls):
        driver = browser()
        driver.get(urls["ann"].replace("/label?", "/status?"))
        wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "svg.curve polyline"), "the learning curve")
        assert len(driver.find_elements(By.CSS_SELECTOR, "svg.curve circle")) == 3
        screenshot(driver, "status", tmp_path)


# ---- several labellers, and a server killed mid-answer -----------------------------------------------
def test_two_labellers_at_once(db_url, tmp_path, monkeypatch, browser):
    monkeypatch.chdir(tmp_path)
    keys = table_project(db_url, tmp_path, k=6)
    with served(db_url, "blobs", "alice", "bob", folder=tmp_path) as (_, urls):
        alice, bob = browser(), browser()
        alice.get(urls["alice"])
        wait_for_item(alice, keys[0])
        bob.get(urls["bob"])
        wait_for_item(bob, keys[1])  # not alice's item
        for turn in range(3):
            for driver, name in ((alice, "alice"), (bob, "bob")):
                key = shown_key(driver)
                assert key is not None and key != shown_key(bob if driver is alice else alice)
                answer_by_key(driver, "2", key, "b")
        wait(alice, lambda d: "Every query of round 1 has its answer" in d.find_element(By.ID, "card").text, "the round done")
        acknowledged = {**{k: "alice" for k in logged(alice)}, **{k: "bob" for k in logged(bob)}}
    recorded = web_answers(db_url, "blobs")
    assert sorted(k for k, _, _ in recorded) == sorted(keys)  # every key once
    assert {k: who for k, _, who in recorded} == acknowledged


def test_killing_the_server_loses_no_acknowledged_answer(sqlite_db, tmp_path, browser):
    """Paused after an answer was sent and killed before it was acknowledged: the page says it was
    not saved, and every answer it did acknowledge is in the database. Served again, the page
    goes on with the unsaved item."""
    keys = table_project(sqlite_db, tmp_path, k=6)
    with served(sqlite_db, "blobs", "ann", folder=tmp_path) as (proc, urls):
        driver = browser()
        driver.get(urls["ann"])
        for key in keys[:2]:
            answer_by_key(driver, "1", key, "a")
        wait_for_item(driver, keys[2])
        proc.send_signal(signal.SIGSTOP)  # the answer reaches the socket; no reply can come
        press(driver, "2")
        time.sleep(0.5)
        assert ack(driver) == f"saved {keys[1]} → a"  # not acknowledged while the server is stopped
        proc.send_signal(signal.SIGKILL)
        proc.send_signal(signal.SIGCONT)
        wait(driver, lambda d: "not saved" in ack(d), "the page says the answer was not saved")
        assert f"the answer for {keys[2]} not saved" in ack(driver)
        acknowledged = logged(driver)
    assert acknowledged == {keys[0]: "a", keys[1]: "a"}
    assert web_answers(sqlite_db, "blobs") == [(keys[0], "a", "ann"), (keys[1], "a", "ann")]

    with served(sqlite_db, "blobs", "ann", folder=tmp_path) as (proc, urls):
        driver.get(urls["ann"])
        answer_by_key(driver, "3", keys[2], "c")  # the unsaved item comes back first
        press(driver, "1")
        proc.send_signal(signal.SIGKILL)  # a race: killed with an answer maybe committed, maybe acknowledged
        wait(driver, lambda d: "not saved" in ack(d) or ack(d) == f"saved {keys[3]} → a", "an outcome shown")
        acknowledged = logged(driver)
    recorded = {k: v for k, v, _ in web_answers(sqlite_db, "blobs")}
    assert all(recorded.get(k) == v for k, v in acknowledged.items())  # nothing acknowledged is lost


def test_an_item_answered_elsewhere_leaves_the_page(sqlite_db, tmp_path, browser):
    """The page renews its lease on the item it shows; once that item is answered elsewhere (here
    at the terminal prompt, through the same store call), the page says so and shows the next open
    item, rather than wait for an answer that would be refused."""
    keys = table_project(sqlite_db, tmp_path, k=4)
    with served(sqlite_db, "blobs", "ann", folder=tmp_path, extra=("--lease-seconds", "3")) as (_, urls):
        driver = browser()
        driver.get(urls["ann"])
        wait_for_item(driver, keys[0])
        with PoolStore(sqlite_db) as store:
            number = store.latest_round("blobs").number
            store.record_labels("blobs", [(keys[0], "c", number)], who="bob", source="prompt", expected={keys[0]: None})
        wait_for_item(driver, keys[1])
        assert f"{keys[0]} was answered or taken elsewhere meanwhile" in ack(driver)
        answer_by_key(driver, "1", keys[1], "a")
    assert web_answers(sqlite_db, "blobs") == [(keys[1], "a", "ann")]
