"""The Draft panel in a real browser (Debian's chromium, headless, driven by selenium): a draft built from simulator
frames (tests/engine/studio/draftkit.py) opens with each page's frames and signature boxes; an author renames a
page, merges the two halves of one, splits a page holding two, drops a link and accepts, answering the question
before the graph YAML is replaced; the written graph validates.

The panel is saved as a screenshot under tests/artifacts/studio-views/draft-*.png (ignored by git).
"""

from __future__ import annotations

import pytest

pytest.importorskip("selenium", reason="selenium is not installed: pip install -e '.[test]'")

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from tests.engine.studio.draftkit import make_draft
from tests.engine.studio.test_browser import browser, serve, text_of, wait_for  # noqa: F401 - a fixture
from tests.engine.studio.test_browser_workbench import shot


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The studio over an embedded simulator with a draft open; yields (base URL, draft folder)."""
    from engine.faces.studio.app import create_app
    from engine.runtime.session import open_session

    home = tmp_path_factory.mktemp("studio-draft")
    folder = make_draft(home / "draft")
    session = open_session()
    app = create_app(session, captures_dir=home / "captures", draft_dir=folder)
    try:
        with serve(app) as base:
            yield base, folder
    finally:
        session.close()


def card(driver, page: str):
    return driver.find_element(By.CSS_SELECTOR, f'#draft-pages article.draft-page[data-page="{page}"]')


def pages(driver) -> list[str]:
    """The page cards shown, read in one script (the panel redraws them after every edit)."""
    return driver.execute_script(
        "return [...document.querySelectorAll('#draft-pages article')].map(a => a.dataset.page)")


def status(driver) -> str:
    return text_of(driver, "draft-status")


def test_open_a_draft_rename_merge_split_drop_and_accept(served, browser):  # noqa: F811 - the fixture
    driver, (base, folder) = browser, served
    driver.get(base + "/")
    wait_for(driver, "the draft's pages", lambda d: pages(d) == ["page_main", "page_1", "page_2", "page_3"])
    wait_for(driver, "the first frames", lambda d: d.execute_script(
        "return [...document.querySelectorAll('#draft-pages img.draft-frame')]"
        ".every(i => i.complete && i.naturalWidth === 1280)"))
    assert card(driver, "page_main").find_elements(By.CSS_SELECTOR, "svg.draft-overlay rect.sig")  # signature boxes
    assert "maybe same page" in text_of(driver, "draft-review")
    popup = driver.find_element(By.CSS_SELECTOR, '#draft-popups li[data-popup="popup_1"]')
    assert popup.find_elements(By.CSS_SELECTOR, "svg rect.box") and "over page_main" in popup.text
    name = popup.find_element(By.CSS_SELECTOR, "input.draft-name")
    name.clear()
    name.send_keys("popup_news\n")  # Enter renames too
    wait_for(driver, "the renamed popup", lambda d: d.find_elements(By.CSS_SELECTOR,
                                                                     '#draft-popups li[data-popup="popup_news"]'))
    shot(driver, "draft-panel", "draft-opened")

    name = card(driver, "page_1").find_element(By.CSS_SELECTOR, "input.draft-name")
    name.clear()
    name.send_keys("page_shop")
    card(driver, "page_1").find_element(By.CSS_SELECTOR, "button.draft-rename").click()
    wait_for(driver, "the renamed page", lambda d: "page_shop" in pages(d) and "renamed page_1" in status(d))

    Select(card(driver, "page_shop").find_element(By.CSS_SELECTOR, "select.draft-merge-other")).select_by_value(
        "page_2")
    card(driver, "page_shop").find_element(By.CSS_SELECTOR, "button.draft-merge").click()
    wait_for(driver, "the merged page", lambda d: pages(d) == ["page_main", "page_shop", "page_3"])
    assert "4 frame(s)" in card(driver, "page_shop").text
    assert "maybe same page" not in text_of(driver, "draft-review")

    mixed = card(driver, "page_3")
    boxes = mixed.find_elements(By.CSS_SELECTOR, ".draft-thumb input[type=checkbox]")
    assert len(boxes) == 2 and mixed.find_element(By.CSS_SELECTOR, "button.draft-split").get_attribute("disabled")
    boxes[1].click()
    mixed.find_element(By.CSS_SELECTOR, "input.draft-split-name").send_keys("page_settings")
    mixed.find_element(By.CSS_SELECTOR, "button.draft-split").click()
    wait_for(driver, "the split page", lambda d: pages(d) == ["page_main", "page_shop", "page_3", "page_settings"])
    assert "maybe two pages" not in text_of(driver, "draft-review")

    row = next(r for r in driver.find_elements(By.CSS_SELECTOR, "#draft-links tbody tr")
               if r.text.startswith("page_3 → page_main"))
    before = len(driver.find_elements(By.CSS_SELECTOR, "#draft-links tbody tr"))
    row.find_element(By.CSS_SELECTOR, "button.draft-drop").click()
    wait_for(driver, "the dropped link", lambda d: len(d.find_elements(By.CSS_SELECTOR, "#draft-links tbody tr"))
             == before - 1 and "dropped the link" in status(d))
    shot(driver, "draft-panel", "draft-edited")

    driver.find_element(By.ID, "draft-accept").click()  # the explorer's graph YAML is there: the page asks first
    wait_for(driver, "the question", lambda d: d.find_element(By.ID, "draft-ask").is_displayed())
    assert "pages.yaml" in text_of(driver, "draft-ask-text")
    assert "page_shop" not in (folder / "pages.yaml").read_text()  # nothing written yet
    driver.find_element(By.ID, "draft-overwrite").click()
    wait_for(driver, "the accepted graph", lambda d: "accepted into" in status(d))
    assert text_of(driver, "draft-validate").startswith("validate: ok"), text_of(driver, "draft-validate")
    assert "page_shop" in (folder / "pages.yaml").read_text()
    assert list(folder.glob("pages.yaml.*.bak"))
    shot(driver, "draft-panel", "draft-accepted")
