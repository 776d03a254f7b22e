"""The studio's daily-tool flows in a real browser (Debian's chromium, headless, driven by selenium): a run stays in
the tab that started it and a reload reattaches to it, hops are ticked only once verified, the graph follows the
believed and observed page; the recognition view on a live, uploaded, bundle and run-look frame, and a signature
tested over a folder with subfolders; the question before a template is overwritten; the bundle view; the log panel.

Each view is saved as a screenshot under tests/artifacts/studio-views/ (ignored by git; STUDIO_SHOTS moves it).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import cv2
import numpy as np
import pytest

pytest.importorskip("selenium", reason="selenium is not installed: pip install -e '.[test]'")

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

from tests.engine.studio.test_browser import (  # noqa: F401 - a fixture
    ROOT,
    TARGET,
    browser,
    serve,
    text_of,
    wait_for,
)

SHOTS = Path(os.environ.get("STUDIO_SHOTS", ROOT / "tests" / "artifacts" / "studio-views"))
GATE_S = 20.0
START = "page_login"
"""The simulator's first page."""


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The studio over an embedded simulator, on a free loopback port, with a gate on the device's taps (open
    unless a test closes it) so that a goto can be held in progress; yields (base URL, gate, home)."""
    from engine.faces.studio.app import create_app
    from engine.runtime.session import open_session

    home = tmp_path_factory.mktemp("studio-workbench")
    session = open_session(transcript_dir=home / "transcript")
    frame = cv2.imdecode(np.frombuffer(session.tools.call("adb_screenshot", {}).png, np.uint8), cv2.IMREAD_COLOR)
    session.transcript.record("note", text="a failure for the bundle viewer " + "x" * 400)
    session.transcript.error_bundle(home / "transcript" / "error_bundles", [("last", frame)],
                                    result={"ok": False, "status": "stuck", "text": "a made-up failure " + "y" * 300})
    folder = home / "captures" / "set" / "deeper"
    folder.mkdir(parents=True)
    cv2.imwrite(str(home / "captures" / "set" / "top.png"), frame)
    cv2.imwrite(str(folder / "inner.png"), frame)
    cv2.imwrite(str(folder / "noise.png"), np.random.default_rng(5).integers(0, 255, frame.shape, dtype=np.uint8))
    cv2.imwrite(str(home / "noise-upload.png"), np.random.default_rng(6).integers(0, 255, frame.shape, dtype=np.uint8))
    gate = threading.Event()
    gate.set()
    device = session.navigator.actuator.device
    tap = device.tap

    def gated(*args, **kwargs):
        gate.wait(GATE_S)
        return tap(*args, **kwargs)

    device.tap = gated
    app = create_app(session, transcript_dir=home / "transcript", captures_dir=home / "captures")
    try:
        with serve(app) as base:
            yield base, gate, home
    finally:
        gate.set()
        session.close()


def shot(driver, element_id: str, name: str) -> Path:
    """A screenshot of one panel, kept as a test artifact."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    element = driver.find_element(By.ID, element_id)
    driver.execute_script("arguments[0].scrollIntoView({block: 'start'})", element)
    path = SHOTS / f"{name}.png"
    assert element.screenshot(str(path))
    return path


def classes(element) -> list[str]:
    return (element.get_attribute("class") or "").split()


def node(driver, page: str):
    return driver.find_element(By.CSS_SELECTOR, f'#graph g.node[data-page="{page}"]')


@pytest.fixture(scope="module")
def page(served, browser):  # noqa: F811 - browser is the fixture imported above
    browser.get(served[0] + "/")
    wait_for(browser, "the graph", lambda d: d.find_elements(By.CSS_SELECTOR, "#graph g.node"))
    return browser


def test_a_run_stays_in_its_tab_is_ticked_when_verified_and_a_reload_reattaches(page, served):
    driver, (base, gate, _) = page, served
    first = driver.current_window_handle
    wait_for(driver, "the observed page", lambda d: text_of(d, "observed-page").startswith("page_"))
    gate.clear()  # the goto's taps wait: the run stays in progress while the tabs look at it
    target = node(driver, TARGET)
    driver.execute_script("arguments[0].scrollIntoView({block: 'center', inline: 'center'})", target)
    ActionChains(driver).move_to_element(target.find_element(By.CSS_SELECTOR, "text")).click().perform()
    wait_for(driver, "this tab's run", lambda d: "(this tab)" in text_of(d, "goto-run"))
    run = driver.find_element(By.ID, "goto-run").get_attribute("data-run")
    tried = wait_for(driver, "a hop tried", lambda d: d.find_elements(By.CSS_SELECTOR, "#hops li.hop.tried"))
    assert "(tried)" in tried[0].text
    assert not driver.find_elements(By.CSS_SELECTOR, "#hops li.verified, #route li.done")  # tried is not verified
    shot(driver, "graph-panel", "run-in-progress")

    driver.switch_to.new_window("tab")  # another tab: its own sessionStorage, so its own tab id
    driver.get(base + "/")
    wait_for(driver, "the other run's label", lambda d: d.find_element(By.ID, "other-run").is_displayed() and
             f"another tab's run {run}" in text_of(d, "other-run"))
    assert not driver.find_elements(By.CSS_SELECTOR, "#hops li") and text_of(driver, "goto-run") == ""
    shot(driver, "graph-panel", "other-tab-sees-someone-elses-run")
    second = driver.current_window_handle

    driver.switch_to.window(first)
    driver.refresh()  # the run is still in progress: the reloaded tab takes it back
    wait_for(driver, "the reattached run", lambda d: text_of(d, "goto-run") == f"run {run} (this tab)")
    wait_for(driver, "the replayed hop", lambda d: d.find_elements(By.CSS_SELECTOR, "#hops li.hop"))
    assert "reattached to this tab's run" in text_of(driver, "log")
    gate.set()
    wait_for(driver, "the verified result", lambda d: "ok" in classes(d.find_element(By.ID, "goto-result")))
    assert text_of(driver, "goto-result").startswith(f"verified: {TARGET}")
    hops = driver.find_elements(By.CSS_SELECTOR, "#hops li.hop")
    assert hops and all("verified" in classes(li) and "✓ verified" in li.text for li in hops), [h.text for h in hops]
    wait_for(driver, "the believed and observed page in the graph", lambda d: {"believed", "observed"} <= set(
        classes(node(d, TARGET))))
    shot(driver, "graph-panel", "run-verified")

    driver.switch_to.window(second)
    wait_for(driver, "the other run's end", lambda d: f"ended: verified {TARGET}" in text_of(d, "other-run"))
    assert not driver.find_elements(By.CSS_SELECTOR, "#hops li")
    wait_for(driver, "the graph following the device", lambda d: "believed" in classes(node(d, TARGET)))
    driver.close()
    driver.switch_to.window(first)


def test_a_duplicated_tab_takes_an_id_of_its_own(page, served):
    """A tab the browser duplicates starts with a copy of sessionStorage (its tab id included): here a second tab
    is given the first one's id before it loads, as a duplicate would be; the first answers, the second takes a
    new id and says so, and a reload of the first keeps its own."""
    driver, (base, _, _) = page, served
    first = driver.current_window_handle
    mine = driver.execute_script("return TAB")
    driver.switch_to.new_window("tab")
    driver.get(base + "/")
    wait_for(driver, "the second tab", lambda d: d.execute_script("return typeof TAB") == "string")
    assert driver.execute_script("return TAB") != mine
    driver.execute_script("sessionStorage.setItem('studio-tab', arguments[0])", mine)  # what a duplicate starts with
    driver.refresh()
    wait_for(driver, "a new id", lambda d: "duplicated from another" in text_of(d, "log"))
    assert driver.execute_script("return TAB") != mine
    assert "duplicated from another" in text_of(driver, "log")
    assert driver.execute_script("return sessionStorage.getItem('studio-tab')") != mine
    driver.close()
    driver.switch_to.window(first)
    driver.refresh()  # a reload with no other tab of that id keeps it
    wait_for(driver, "the studio", lambda d: d.execute_script("return typeof TAB") == "string")
    assert driver.execute_script("return TAB") == mine


def test_recognition_on_chosen_frames_and_a_signature_tested_over_subfolders(page, served):
    driver, (_, _, home) = page, served
    driver.find_element(By.ID, "recognize-live").click()
    wait_for(driver, "the live recognition", lambda d: " won:" in text_of(d, "recognize-why"))
    rows = driver.find_elements(By.CSS_SELECTOR, "#candidates tr.candidate")
    assert len(rows) > 50 and driver.find_elements(By.CSS_SELECTOR, "#candidates tr.candidate.chosen")
    assert int(driver.find_element(By.ID, "recognize-overlay").get_attribute("data-drawn")) >= 1
    signature = driver.find_elements(By.CSS_SELECTOR, "#candidates tr.signature")[0]
    assert " / 0." in signature.text and "area [" in signature.text  # score / threshold, and the area
    shot(driver, "recognize-panel", "recognition-live")

    folder = driver.find_element(By.ID, "recognize-folder")
    folder.clear()
    folder.send_keys("captures/set")
    # The folder's frames show the start page (the fixture saved them before the goto): test its signature there.
    start = driver.find_element(By.CSS_SELECTOR, f'#candidates tr.candidate[data-name="{START}"] + tr.signature')
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", start)
    start.find_element(By.CSS_SELECTOR, "button.test-on-folder").click()
    wait_for(driver, "the folder test", lambda d: " hit (" in text_of(d, "recognize-test-summary"))
    results = {row.get_attribute("data-file"): classes(row)[0] for row in
               driver.find_elements(By.CSS_SELECTOR, "#recognize-tests tbody tr")}
    assert results == {"deeper/inner.png": "hit", "deeper/noise.png": "miss", "top.png": "hit"}, results
    shot(driver, "recognize-panel", "recognition-folder-test")

    driver.find_element(By.ID, "recognize-upload").send_keys(str(home / "noise-upload.png"))
    wait_for(driver, "the uploaded frame's recognition", lambda d: text_of(d, "recognize-why").startswith(
        "No page hit. Closest:"))
    assert "below its threshold" in text_of(driver, "recognize-why") and text_of(driver, "recognize-page") == "none"
    shot(driver, "recognize-panel", "recognition-nothing-won")

    look = wait_for(driver, "a transcript look", lambda d: d.find_elements(By.CSS_SELECTOR, "#transcript .recognise-step"))
    driver.execute_script("arguments[0].click()", look[-1])
    wait_for(driver, "the look's recognition", lambda d: text_of(d, "recognize-source").startswith("step "))

    driver.find_element(By.CSS_SELECTOR, "#bundles a").click()
    button = wait_for(driver, "the bundle frame's button", lambda d: d.find_elements(By.CSS_SELECTOR, ".recognise-bundle"))
    driver.execute_script("arguments[0].click()", button[0])
    wait_for(driver, "the bundle frame's recognition", lambda d: "000001-stuck/" in text_of(d, "recognize-source"))


def test_the_bundle_view_has_no_undefined_lines_and_stays_in_its_box(page):
    driver = page
    wait_for(driver, "the bundle transcript", lambda d: text_of(d, "bundle-transcript").strip())
    assert "undefined" not in text_of(driver, "bundle-transcript") + text_of(driver, "bundle-name")
    overflow = driver.execute_script(
        "const p = document.getElementById('bundles-panel'); const r = p.getBoundingClientRect();"
        "return [...p.querySelectorAll('*')].filter((e) => e.getBoundingClientRect().right > r.right + 1)"
        ".map((e) => e.id || e.tagName)")
    assert overflow == [], overflow
    shot(driver, "bundles-panel", "bundle-view")


def test_a_template_is_overwritten_only_after_asking_and_the_old_file_is_kept(page, served):
    driver, home = page, served[2]
    driver.find_element(By.ID, "capture").click()
    wait_for(driver, "the captured frame", lambda d: "loaded" in classes(d.find_element(By.ID, "author-stage")))
    frame = driver.find_element(By.ID, "author-frame")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", frame)
    width, height = frame.size["width"], frame.size["height"]
    (ActionChains(driver).move_to_element_with_offset(frame, -width // 4, -height // 4).click_and_hold()
     .move_by_offset(60, 40).release().perform())
    driver.find_element(By.ID, "template-name").send_keys("TWICE")
    driver.find_element(By.ID, "cut-template").click()
    wait_for(driver, "the first cut", lambda d: text_of(d, "template-path").startswith("written to "))
    template = Path(text_of(driver, "template-path").removeprefix("written to "))
    old = template.read_bytes()
    driver.find_element(By.ID, "cut-template").click()
    wait_for(driver, "the question", lambda d: d.find_element(By.ID, "overwrite-ask").is_displayed())
    assert "exists already" in text_of(driver, "overwrite-text") and template.read_bytes() == old
    shot(driver, "authoring-panel", "template-overwrite-question")
    driver.find_element(By.ID, "overwrite-no").click()
    assert not driver.find_element(By.ID, "overwrite-ask").is_displayed()
    assert not list(template.parent.glob("TWICE.png.*.bak"))
    driver.find_element(By.ID, "cut-template").click()
    wait_for(driver, "the question again", lambda d: d.find_element(By.ID, "overwrite-ask").is_displayed())
    driver.find_element(By.ID, "overwrite-yes").click()
    wait_for(driver, "the replaced template", lambda d: "the old file is kept as" in text_of(d, "template-path"))
    backups = list(template.parent.glob("TWICE.png.*.bak"))
    assert len(backups) == 1 and backups[0].read_bytes() == old and str(backups[0]) in text_of(driver, "template-path")
    assert str(template).startswith(str(home))


def test_every_message_stays_in_the_log_panel_across_a_reload(page):
    driver = page
    log = text_of(driver, "log")
    for expected in ("recognised", "TWICE exists already", "replaced TWICE", "opened the error bundle",
                     "signature test on captures/set"):
        assert expected in log, (expected, log)
    count = len(driver.find_elements(By.CSS_SELECTOR, "#log li"))
    shot(driver, "log-panel", "log-panel")
    driver.refresh()
    wait_for(driver, "the restored log", lambda d: len(d.find_elements(By.CSS_SELECTOR, "#log li")) >= count)
    assert "replaced TWICE" in text_of(driver, "log")
    severe = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    asked = "/api/template - Failed to load resource: the server responded with a status of 409"  # the question
    assert [m for m in severe if asked not in m] == [], severe
