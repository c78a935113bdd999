"""The headless Chromium the page tests drive (Playwright on the Debian package's browser) and
the folder their screenshots and failure captures go to. ``tests/integration/conftest.py``
makes ``launch`` the ``browser`` fixture, one browser per test module."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from devtools.airflow_ui import chromium_executable

if TYPE_CHECKING:
    from collections.abc import Iterator

    from playwright.sync_api import Browser

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def launch() -> Iterator[Browser]:
    from playwright.sync_api import sync_playwright
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=chromium_executable(),
                                     args=["--no-sandbox"])
        yield chromium
        chromium.close()
