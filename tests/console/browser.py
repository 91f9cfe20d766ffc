"""A real headless Chromium (Debian's `chromium` + `chromium-driver`) driven through Selenium.

The driver is named explicitly, so Selenium Manager never tries to download one; the flags keep
Chromium off the network it cannot reach here (background services, component updates).
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.tools import need

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
SHOTS = os.environ.get("SCREENSHOTS_DIR", "")  # e.g. docs/console: where the docs' pictures are written


def need_browser() -> None:
    need(Path(CHROMIUM).exists() and Path(DRIVER).exists(), "chromium and chromium-driver (installed by .ci/run)")


@contextlib.contextmanager
def browser() -> Iterator[Any]:
    need_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="fb-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                 "--no-first-run", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--window-size=1280,900", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def screenshot(driver: Any, name: str, tmp: Path) -> Path:
    """Save the whole page: into `SCREENSHOTS_DIR` when set (the docs' pictures), else `tmp`."""
    folder = Path(SHOTS) if SHOTS else tmp
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
    path.write_bytes(base64.b64decode(shot["data"]))
    return path
