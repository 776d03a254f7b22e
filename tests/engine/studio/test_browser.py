"""The studio page in a real browser: Debian's chromium driven headless by selenium against a served studio.

The app (engine.faces.studio.app.create_app over an embedded simulator session) is served by uvicorn on a free
loopback port in a thread. The test saves a screenshot of the page to tests/artifacts/studio.png (ignored by
git); with STUDIO_README_SHOT=1 it also writes the README's copy, docs/studio.png.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml

selenium = pytest.importorskip("selenium", reason="selenium is not installed: pip install -e '.[test]'")

from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

ROOT = Path(__file__).resolve().parents[3]
ARTIFACT = ROOT / "tests" / "artifacts" / "studio.png"
README_SHOT = ROOT / "docs" / "studio.png"
CHROMIUM = os.environ.get("STUDIO_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("STUDIO_CHROMEDRIVER", "/usr/bin/chromedriver")
TARGET = "page_reward"
"""A page two hops from the simulator's start (login -> main -> reward)."""
WAIT_S = 15.0
README_WIDTH = 1200
POPUP = "GET_ITEMS_1"
PROPOSAL = "LEARNED_ITEMS_OBTAINED_PANEL"
"""The proposal the served session learned: POPUP's screen, closed by a tap on its button."""


def propose_popup(session, folder: Path) -> None:
    """A proposal as the learner writes it: a real frame under POPUP, and the tap on its button that closed it."""
    from engine.learning.learner import Learner, Lesson

    game = session.sim.game
    action = session.graph.popup(POPUP).dismiss[0]
    x1, y1, x2, y2 = session.graph.button(action.button).click_area
    game.show_popup(POPUP)
    frame = session.device.screenshot()
    game.tap((x1 + x2) // 2, (y1 + y2) // 2)
    truth = game.truth()
    assert not truth["popups"], truth
    path, _ = Learner(folder).record(Lesson(frame, ((x1 + x2) // 2, (y1 + y2) // 2), "Items obtained panel"),
                                     truth["page"])
    assert path.stem == PROPOSAL


@contextmanager
def serve(app):
    """`app` served by uvicorn on a free 127.0.0.1 port in a thread; yields its base URL, then closes the studio
    and stops the server."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=2))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="studio-uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        app.state.studio.close()
        server.should_exit = True
        thread.join(10)
        sock.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The studio over an embedded simulator session, served on a free 127.0.0.1 port; yields its base URL."""
    from engine.core.paths import builtin_graph_dir
    from engine.faces.studio.app import create_app
    from engine.runtime.session import open_session

    home = tmp_path_factory.mktemp("studio-browser")
    graph = home / "my_graph"  # a copy of the shipped graph, so that a proposal can be accepted into it
    shutil.copytree(builtin_graph_dir(), graph)
    session = open_session(graph_dir=graph, transcript_dir=home / "transcript")
    shot = session.tools.call("adb_screenshot", {})
    session.transcript.record("note", text="a failure for the bundle viewer")
    session.transcript.error_bundle(home / "transcript" / "error_bundles",
                                    [("last", cv2.imdecode(np.frombuffer(shot.png, np.uint8), cv2.IMREAD_COLOR))],
                                    result={"ok": False, "status": "stuck", "text": "a made-up failure"})
    propose_popup(session, home / "transcript" / "proposals")
    app = create_app(session, graph_dir=graph, transcript_dir=home / "transcript", captures_dir=home / "captures")
    try:
        with serve(app) as base:
            yield base
    finally:
        session.close()


@pytest.fixture(scope="module")
def browser():
    for path in (CHROMIUM, CHROMEDRIVER):
        assert Path(path).exists(), f"{path} is missing: run scripts/install-system-deps.sh (chromium, chromium-driver)"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1600,1300", "--hide-scrollbars", "--force-device-scale-factor=1"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(WAIT_S)
    try:
        yield driver
    finally:
        driver.quit()


def wait_for(driver, what, condition, timeout=WAIT_S):
    """`condition(driver)` once it is truthy; on a timeout, fail with `what` and the page's own message line."""
    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.05).until(condition)
    except TimeoutException:
        message = driver.find_element(By.ID, "message").text
        logs = [entry["message"] for entry in driver.get_log("browser")]
        pytest.fail(f"timed out waiting for {what}; page says {message!r}; console: {logs}")


def text_of(driver, element_id: str) -> str:
    return driver.find_element(By.ID, element_id).text


def save_screenshot(driver) -> Path:
    """A full-page screenshot at ARTIFACT (and docs/studio.png with STUDIO_README_SHOT=1)."""
    driver.execute_script("window.scrollTo(0, 0)")
    height = int(driver.execute_script("return document.documentElement.scrollHeight"))
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": 1600, "height": min(max(height, 900), 2400), "deviceScaleFactor": 1, "mobile": False})
    ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
    assert driver.save_screenshot(str(ARTIFACT))
    print(f"studio screenshot: {ARTIFACT}")
    if os.environ.get("STUDIO_README_SHOT") == "1":
        readme_copy(ARTIFACT, README_SHOT)
        print(f"README screenshot: {README_SHOT}")
    return ARTIFACT


def readme_copy(source: Path, target: Path, width: int = README_WIDTH) -> None:
    """`source` scaled to `width` and reduced to 256 colours, so the committed image stays a few hundred KB."""
    from PIL import Image  # Pillow comes with adbutils

    target.parent.mkdir(parents=True, exist_ok=True)
    with Image.open(source) as shot:
        rgb = shot.convert("RGB")
    small = rgb.resize((width, round(rgb.height * width / rgb.width)), Image.Resampling.LANCZOS)
    small.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(target, optimize=True)


@pytest.fixture(scope="module")
def page(served, browser):
    """The studio page, loaded once; the tests below run in file order on it, as an author would."""
    browser.get(served + "/")
    return browser


def test_the_live_view_shows_the_frame_and_its_evidence_boxes(page):
    driver = page
    wait_for(driver, "the frame", lambda d: d.execute_script(
        "const i = document.getElementById('frame'); return i.complete && i.naturalWidth > 0"))
    wait_for(driver, "an overlay box", lambda d: d.find_elements(By.CSS_SELECTOR, "#overlay rect.hit"))
    assert int(driver.find_element(By.ID, "overlay").get_attribute("data-boxes")) >= 1
    wait_for(driver, "the observed page", lambda d: text_of(d, "obs-page").startswith("page_"))
    assert text_of(driver, "game") == "azurlane"
    assert float(wait_for(driver, "looks per second", lambda d: float(text_of(d, "looks-per-second")) > 0 and
                          text_of(d, "looks-per-second"))) > 0


def test_clicking_a_page_in_the_graph_streams_its_hops_and_verifies_it(page):
    driver = page
    node = wait_for(driver, "the graph's page nodes", lambda d: d.find_elements(
        By.CSS_SELECTOR, f'#graph g.node[data-page="{TARGET}"]'))[0]
    assert len(driver.find_elements(By.CSS_SELECTOR, "#graph g.node")) > 10
    driver.execute_script("arguments[0].scrollIntoView({block: 'center', inline: 'center'})", node)
    ActionChains(driver).move_to_element(node.find_element(By.CSS_SELECTOR, "text")).click().perform()
    wait_for(driver, "the planned route", lambda d: d.find_elements(By.CSS_SELECTOR, "#route li"))
    wait_for(driver, "the goto's result", lambda d: "ok" in d.find_element(By.ID, "goto-result").get_attribute(
        "class").split() or "fail" in d.find_element(By.ID, "goto-result").get_attribute("class").split())
    assert text_of(driver, "goto-result").startswith(f"verified: {TARGET}"), text_of(driver, "goto-result")
    hops = [li.text for li in driver.find_elements(By.CSS_SELECTOR, "#hops li.hop")]
    assert len(hops) >= 2 and TARGET in hops[-1], hops
    assert all("done" in li.get_attribute("class") for li in driver.find_elements(By.CSS_SELECTOR, "#route li"))
    wait_for(driver, "the believed page", lambda d: text_of(d, "believed-page") == TARGET)
    assert "believed" in node.get_attribute("class")
    wait_for(driver, "transcript lines", lambda d: d.find_elements(By.CSS_SELECTOR, "#transcript .tline"))


def test_a_box_dragged_on_a_captured_frame_cuts_a_template_whose_signature_hits_there(page):
    driver = page
    driver.find_element(By.ID, "capture").click()
    wait_for(driver, "the captured frame", lambda d: "loaded" in d.find_element(By.ID, "author-stage").get_attribute(
        "class").split())
    frame = driver.find_element(By.ID, "author-frame")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", frame)
    width, height = frame.size["width"], frame.size["height"]
    (ActionChains(driver).move_to_element_with_offset(frame, -width // 4, -height // 4).click_and_hold()
     .move_by_offset(40, 20).move_by_offset(60, 30).release().perform())
    coords = text_of(driver, "box-coords")
    assert coords.startswith("["), coords
    driver.find_element(By.ID, "template-name").send_keys("STUDIO_TEST_BUTTON")
    wait_for(driver, "the cut button", lambda d: d.find_element(By.ID, "cut-template").is_enabled())
    driver.find_element(By.ID, "cut-template").click()
    wait_for(driver, "the YAML snippet", lambda d: text_of(d, "yaml-snippet").strip())
    snippet = yaml.safe_load(text_of(driver, "yaml-snippet"))
    assert "STUDIO_TEST_BUTTON" in str(snippet), snippet
    assert text_of(driver, "template-path").startswith("written to ")

    # The cut template's signature, tested on the captured frames: it hits the frame it was cut from.
    assert "STUDIO_TEST_BUTTON" in driver.find_element(By.ID, "signature-json").get_attribute("value")
    driver.find_element(By.ID, "test-signature").click()
    wait_for(driver, "the signature's hit rate", lambda d: " hit (" in text_of(d, "signature-summary"))
    assert driver.find_elements(By.CSS_SELECTOR, "#signature-results tr.hit"), text_of(driver, "signature-summary")


def test_validate_lists_the_graph_folder_problems_by_file_and_line(page):
    driver = page
    driver.find_element(By.ID, "validate").click()
    wait_for(driver, "the validation", lambda d: "ok" in d.find_element(By.ID, "validate-summary").get_attribute(
        "class").split() or d.find_elements(By.CSS_SELECTOR, "#problems li"))
    assert not driver.find_elements(By.CSS_SELECTOR, "#problems li.error"), text_of(driver, "problems")
    for problem in driver.find_elements(By.CSS_SELECTOR, "#problems li"):
        assert re.match(r"^\S+\.yaml:\d+(:\d+)?: ", problem.text), problem.text


def test_an_error_bundle_opens_as_its_frames_beside_its_transcript_slice(page):
    driver = page
    link = wait_for(driver, "the bundle list", lambda d: d.find_elements(By.CSS_SELECTOR, "#bundles a"))[0]
    link.click()
    wait_for(driver, "the bundle's frame", lambda d: d.execute_script(
        "const i = document.querySelector('#bundle-frames img'); return i && i.complete && i.naturalWidth > 0"))
    assert "a failure for the bundle viewer" in text_of(driver, "bundle-transcript")
    assert "stuck" in text_of(driver, "bundle-name")


def test_a_proposal_shows_its_frame_and_crop_and_accepting_it_takes_its_card_away(page):
    driver = page
    selector = f'#proposals .proposal[data-name="{PROPOSAL}"]'
    card = wait_for(driver, "the proposal's card", lambda d: d.find_elements(By.CSS_SELECTOR, selector))[0]
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", card)
    for image in ("proposal-frame", "proposal-crop"):
        wait_for(driver, f"the {image} image", lambda d, image=image: d.execute_script(
            "const i = arguments[0].querySelector('img.' + arguments[1]); return i.complete && i.naturalWidth > 0",
            card, image))
    assert card.find_elements(By.CSS_SELECTOR, "svg.proposal-overlay rect.area")
    assert card.find_elements(By.CSS_SELECTOR, "svg.proposal-overlay circle.tap")
    assert "Items obtained panel" in card.text
    assert yaml.safe_load(card.find_element(By.CSS_SELECTOR, "pre.proposal-yaml").text)["popups"][0]["name"] == PROPOSAL
    card.find_element(By.CSS_SELECTOR, "button.accept").click()
    wait_for(driver, "the accepted status", lambda d: "ok" in d.find_element(By.ID, "proposals-status").get_attribute(
        "class").split() or "fail" in d.find_element(By.ID, "proposals-status").get_attribute("class").split())
    status = text_of(driver, "proposals-status")
    assert status.startswith(f"accepted {PROPOSAL}") and "the live session uses it now" in status, status
    wait_for(driver, "the card to go", lambda d: not d.find_elements(By.CSS_SELECTOR, selector))


def test_the_console_is_clean_and_the_screenshot_is_saved(page):
    driver = page
    severe = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert not severe, severe
    assert save_screenshot(driver).stat().st_size > 10_000
