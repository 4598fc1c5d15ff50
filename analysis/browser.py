"""Headless Chromium through Selenium, for ``k2bench serve --screenshot`` and the browser
test (tests/test_serve.py): Debian's ``chromium`` and ``chromium-driver``, which
``make browser-deps`` installs (Selenium is never let to download a browser or driver)."""
from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from pathlib import Path

WIDTH, HEIGHT = 1500, 1000
MAX_HEIGHT = 6000  # a full-page screenshot taller than this is cut (a runs directory of hundreds)


class BrowserMissing(RuntimeError):
    """No headless Chromium here; the message names what installs it."""


def executables() -> tuple[str, str]:
    """The Chromium browser and its driver, or BrowserMissing naming what installs them."""
    browser = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)
    driver = shutil.which("chromedriver")
    missing = [n for n, p in (("chromium", browser), ("chromedriver", driver)) if not p]
    if missing:
        raise BrowserMissing(f"{' and '.join(missing)} not found: `make browser-deps` installs Debian's chromium "
                             "and chromium-driver (apt, as root)")
    return browser, driver


def chromium(width: int = WIDTH, height: int = HEIGHT):
    """A headless Chromium WebDriver that keeps the pages' console messages
    (``driver.get_log('browser')``); the caller quits it."""
    browser, driver = executables()
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as e:
        raise BrowserMissing(f"selenium is not installed ({e}): `make venv` installs requirements.txt") from None
    opts = webdriver.ChromeOptions()
    opts.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--hide-scrollbars", f"--window-size={width},{height}"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # Chromium leaves its singleton socket's directory in $TMPDIR after quit(): one of its own,
    # removed with the driver.
    tmp = tempfile.mkdtemp(prefix="k2bench-chromium-")
    try:
        drv = webdriver.Chrome(service=Service(driver, env={**os.environ, "TMPDIR": tmp}), options=opts)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    remove = weakref.finalize(drv, shutil.rmtree, tmp, ignore_errors=True)  # at exit, if never quit
    quit_driver = drv.quit

    def quit() -> None:  # noqa: A001 - the driver's own name for it
        try:
            quit_driver()
        finally:
            remove()  # once: the finalizer is spent

    drv.quit = quit
    return drv


def screenshot(drv, url: str, path: Path, width: int = WIDTH) -> Path:
    """The whole page at ``url`` as a PNG (the window stretched to the page's height)."""
    metrics = {"width": width, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False}
    drv.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    drv.get(url)
    wide, high = drv.execute_script("var e = document.documentElement;"
                                    "return [e.scrollWidth, Math.ceil(e.getBoundingClientRect().height)]")
    # The viewport, not the window: a headless window is no taller than its virtual screen.
    drv.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                        metrics | {"width": max(width, int(wide)), "height": min(max(int(high) + 30, 300), MAX_HEIGHT)})
    path.parent.mkdir(parents=True, exist_ok=True)
    drv.save_screenshot(str(path))
    return path
