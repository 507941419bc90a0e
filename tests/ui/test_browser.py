"""The web view in a real browser (headless chromium), with JavaScript on and off."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from ..day2.stores import documents, entry_records, seed_documents
from .browser import Browser, Server, chromium, memctl_ui, require_chromium
from .conftest import HOSTILE

pytestmark = pytest.mark.browser


@pytest.fixture
def server(project: Path) -> Iterator[Server]:
    require_chromium()
    with memctl_ui(project) as running:
        yield running


WAIT = 10  # seconds a page may take to answer on a busy machine


def text(browser: Browser, css: str) -> str:
    """The text of the first element matching `css`, once the page has one (read again if
    the page was replaced between finding it and reading it)."""

    def read(driver: object) -> tuple[str]:  # a tuple: an empty text is an answer too
        return (str(browser.driver.find_element(By.CSS_SELECTOR, css).text),)

    wait = WebDriverWait(browser.driver, WAIT, ignored_exceptions=(StaleElementReferenceException,))
    return wait.until(read)[0]


def click(browser: Browser, css: str) -> None:
    """Click an element that keeps the page (a confirm dialog, a script's action)."""
    browser.driver.find_element(By.CSS_SELECTOR, css).click()


def follow(browser: Browser, css: str, by: str = By.CSS_SELECTOR) -> None:
    """Click a link or a form's button and wait until the browser has left the page: a click
    returns before the next page loads, so the old page's elements would still be found."""
    page = browser.driver.find_element(By.TAG_NAME, "html")
    browser.driver.find_element(by, css).click()
    WebDriverWait(browser.driver, WAIT).until(lambda _: gone(page))


def gone(element: WebElement) -> bool:
    """Whether `element`'s page has been replaced. chromedriver says so with a stale
    reference, or, caught mid-navigation, with an inspector error about the node."""
    try:
        element.tag_name  # noqa: B018 - asks the browser about the node
    except StaleElementReferenceException:
        return True
    except WebDriverException as exc:
        if "does not belong to the document" in str(exc.msg):
            return True
        raise
    return False


def only_local(browser: Browser, server: Server) -> None:
    urls = browser.collect_requests()
    assert urls, "the performance log recorded no request"
    outside = [u for u in urls if not u.startswith(server.url)]
    assert not outside, f"requests outside 127.0.0.1: {outside}"


def not_owned(browser: Browser) -> None:
    """The hostile entry's script never ran."""
    assert "owned" not in browser.driver.title
    assert not browser.driver.find_elements(By.CSS_SELECTOR, "main script, main img")


def log_in(browser: Browser, server: Server) -> None:
    browser.driver.get(server.login_url)
    assert browser.driver.current_url == server.url + "entries"
    assert text(browser, "h1") == "Entries"


def test_search_open_roll_back_and_disable_with_javascript(
    server: Server, artifacts: Path, project: Path
) -> None:
    with chromium(artifacts, javascript=True) as browser:
        driver = browser.driver
        driver.get(server.url + "entries")
        assert text(browser, "h1") == "Log in"  # no session yet
        browser.shot("login")
        log_in(browser, server)
        not_owned(browser)
        browser.shot("entries")

        box = driver.find_element(By.ID, "search-box")
        box.send_keys("release process")
        entries_page = driver.find_element(By.CSS_SELECTOR, "h1")
        box.submit()
        WebDriverWait(driver, WAIT).until(expected_conditions.staleness_of(entries_page))
        assert text(browser, "h1") == "Search"
        browser.shot("search")
        follow(browser, "#hits a[href='/entry/release%2Fprocess']")
        assert text(browser, "#ref") == "entry:release/process"
        assert text(browser, "#text") == "Tag, build, sign, publish."
        browser.shot("entry")

        click(browser, "#revision-1 form.rollback button")
        alert = WebDriverWait(driver, 10).until(expected_conditions.alert_is_present())
        assert "revision 1" in alert.text  # ui.js asks first
        alert.accept()
        WebDriverWait(driver, 10).until(expected_conditions.presence_of_element_located((By.ID, "done")))
        assert "rolled back to revision 1: updated" in text(browser, "#done")
        assert text(browser, "#text") == "Tag, build, publish."
        browser.shot("entry-rolled-back")
        assert entry_records(project)["release/process"]["entry"]["body"] == "Tag, build, publish."

        driver.get(server.url + "entry/evil")
        assert HOSTILE in text(browser, "#text")
        not_owned(browser)
        browser.shot("entry-hostile")

        follow(browser, "nav a[href='/knowledge']")
        follow(browser, ".slots a[href='/knowledge?slot=knowledge']")
        follow(browser, "deploy.md", By.LINK_TEXT)
        assert text(browser, "h1") == "knowledge/deploy.md"
        browser.shot("document")
        click(browser, "#disable")
        WebDriverWait(driver, 10).until(expected_conditions.presence_of_element_located((By.ID, "done")))
        assert text(browser, "#enabled") == "no (searches skip it)"
        browser.shot("document-disabled")
        assert documents(project)[("knowledge", "deploy.md")][2] is False

        for page in ("lessons", "capture", "status"):
            follow(browser, f"nav a[href='/{page}']")
            browser.shot(page)
        not_owned(browser)
        only_local(browser, server)


def test_reading_and_correcting_without_javascript(server: Server, artifacts: Path, project: Path) -> None:
    with chromium(artifacts, javascript=False) as browser:
        driver = browser.driver
        log_in(browser, server)
        browser.shot("nojs-entries")
        assert "release/process" in text(browser, "#entries")

        driver.get(server.url + "search?q=deploy+blue+green")
        assert "knowledge/deploy.md" in text(browser, "#hits")
        browser.shot("nojs-search")

        driver.get(server.url + "entry/release%2Fprocess")
        assert text(browser, "#ref") == "entry:release/process"
        assert "+Tag, build, sign, publish." in text(browser, "#revision-2 pre.diff")
        browser.shot("nojs-entry")
        follow(browser, "#revision-1 form.rollback button")  # no confirm without JavaScript: plain POST
        assert "rolled back to revision 1" in text(browser, "#done")
        assert entry_records(project)["release/process"]["entry"]["body"] == "Tag, build, publish."

        driver.get(server.url + "entry/evil")
        assert HOSTILE in text(browser, "#text")
        not_owned(browser)

        driver.get(server.url + "knowledge?slot=knowledge")
        assert "deploy.md" in text(browser, "#documents")
        browser.shot("nojs-knowledge")
        follow(browser, "deploy.md", By.LINK_TEXT)
        browser.shot("nojs-document")
        follow(browser, "#delete")  # the box is not ticked: refused, nothing deleted
        assert "tick the box" in text(browser, "#error")
        assert ("knowledge", "deploy.md") in documents(project)

        driver.get(server.url + "lessons")
        assert [h.text for h in driver.find_elements(By.CSS_SELECTOR, "section.lessons h2")] == [
            "oom-kill",
            "timeout",
        ]
        browser.shot("nojs-lessons")
        driver.get(server.url + "capture")
        assert text(browser, "#no-events") == "Nothing captured yet."
        browser.shot("nojs-capture")
        driver.get(server.url + "status")
        assert "entries store" in text(browser, "#status")
        browser.shot("nojs-status")
        only_local(browser, server)


def test_a_documents_history_panel_and_the_deleted_view_bring_a_version_back(
    server: Server, artifacts: Path, project: Path
) -> None:
    curated = documents(project)[("knowledge", "deploy.md")][0]
    seed_documents(
        project, [("knowledge", "deploy.md", "A bad overwrite.", {"atom_type": "project-lore"}, True)]
    )
    with chromium(artifacts, javascript=False) as browser:
        driver = browser.driver
        log_in(browser, server)
        driver.get(server.url + "knowledge?slot=knowledge")
        follow(browser, "deploy.md", By.LINK_TEXT)
        old_link = driver.current_url
        assert "+A bad overwrite." in text(browser, "#version-2 pre.diff")
        browser.shot("history-panel")
        driver.find_element(By.CSS_SELECTOR, "input[name=confirm]").click()
        follow(browser, "#delete")
        assert ("knowledge", "deploy.md") not in documents(project)

        driver.get(old_link)  # a deleted document's link says so and offers it back
        assert "This document was deleted" in text(browser, "#deleted-note")
        browser.shot("deleted-document")
        driver.get(server.url + "deleted")
        assert "knowledge/deploy.md" in text(browser, "#deleted")
        browser.shot("deleted-view")
        follow(browser, "#deleted form.rollback button")
        assert "it was deleted and is back" in text(browser, "#done")
        assert documents(project)[("knowledge", "deploy.md")][0] == "A bad overwrite."

        follow(browser, "#version-1 form.rollback button")
        assert "version 1 restored" in text(browser, "#done")
        assert documents(project)[("knowledge", "deploy.md")][0] == curated
        only_local(browser, server)
