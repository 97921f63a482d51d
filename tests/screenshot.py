"""Screenshots of HTML files with a headless Chromium, for tests that check what a browser
actually draws."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def find_chromium() -> str | None:
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)


def screenshot(page: Path, png: Path, width: int = 1200, height: int = 2400, timeout: float = 120) -> None:
    """Render `page` in a throwaway profile and write a width x height PNG of its top."""
    browser = find_chromium()
    if browser is None:
        raise FileNotFoundError(f"no browser found (looked for {', '.join(BROWSERS)})")
    with tempfile.TemporaryDirectory(prefix="vmbisect-chromium-") as profile:
        done = subprocess.run(
            [browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--disable-background-networking", "--hide-scrollbars", "--no-first-run",
             f"--user-data-dir={profile}", f"--window-size={width},{height}", f"--screenshot={png}",
             page.resolve().as_uri()],
            check=False, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0 or not png.exists():
        raise RuntimeError(f"{browser} exited {done.returncode} without a screenshot: {done.stderr[-2000:]}")
