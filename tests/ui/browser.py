"""Debian's chromium, headless, driven by selenium through the system chromedriver, against a
real `memctl ui` process: screenshots of each page and every request the page made."""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


def require_chromium() -> None:
    """Skip (locally) or fail (in CI, where scripts/test installs them) without the browser."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if not missing:
        return
    message = f"{', '.join(missing)} missing: apt-get install chromium chromium-driver"
    if os.environ.get("CI"):
        pytest.fail(f"{message} (scripts/test installs them in CI)")
    pytest.skip(message)


@dataclass
class Server:
    url: str
    login_url: str
    process: subprocess.Popen[str]


@contextmanager
def memctl_ui(project: Path) -> Iterator[Server]:
    """`memctl ui --project PROJECT --json`, as a person starts it, until the block ends."""
    process = subprocess.Popen(
        [sys.executable, "-m", "memctl", "ui", "--project", str(project), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stderr is not None
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(x) for x in process.stdout or ()], daemon=True)
    reader.start()
    try:
        text, deadline = "", time.monotonic() + 60
        while not text.startswith("{") or not text.rstrip().endswith("}"):
            try:
                text += lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                process.kill()
                process.wait()
                raise AssertionError(f"memctl ui printed no address: {process.stderr.read()}") from None
        printed = json.loads(text)
        while True:  # the port is bound before the address is printed; wait for the app
            try:
                httpx.get(printed["url"] + "login", timeout=5).raise_for_status()
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "memctl ui did not answer"
                time.sleep(0.2)
        yield Server(printed["url"], printed["login_url"], process)
    finally:
        process.terminate()
        process.wait(timeout=30)
        reader.join(timeout=30)  # the pipe's end stops it
        process.stdout.close()
        process.stderr.close()


@dataclass
class Browser:
    """A headless chromium; `visit` records a screenshot and the requests of each page."""

    driver: webdriver.Chrome
    artifacts: Path
    requests: list[str] = field(default_factory=list)

    def shot(self, name: str) -> Path:
        path = self.artifacts / f"{name}.png"
        assert self.driver.save_screenshot(str(path)), f"no screenshot of {name}"
        return path

    def collect_requests(self) -> list[str]:
        """Every URL the pages requested since the last call (from chromium's performance log),
        but those of chromium's own pages (its new-tab page)."""
        urls = []
        for record in self.driver.get_log("performance"):
            message: dict[str, Any] = json.loads(record["message"])["message"]
            params = message.get("params", {})
            if message["method"] == "Network.requestWillBeSent" and not params.get(
                "documentURL", ""
            ).startswith("chrome:"):
                urls.append(params["request"]["url"])
        self.requests += urls
        return urls


@contextmanager
def chromium(artifacts: Path, *, javascript: bool) -> Iterator[Browser]:
    """Headless chromium through /usr/bin/chromedriver (so selenium never downloads one)."""
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",  # CI runs as root
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--window-size=1280,1000",
        f"--user-data-dir={artifacts / ('profile-js' if javascript else 'profile-nojs')}",
    ):
        options.add_argument(argument)
    if not javascript:
        options.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    service = Service(executable_path=str(CHROMEDRIVER))  # a driver path given: selenium-manager never runs
    driver = webdriver.Chrome(options=options, service=service)
    try:
        driver.set_page_load_timeout(60)
        yield Browser(driver, artifacts)
    finally:
        driver.quit()
        for profile in artifacts.glob("profile-*"):
            shutil.rmtree(profile, ignore_errors=True)
