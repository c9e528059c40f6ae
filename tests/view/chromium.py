"""Drive Debian's headless Chromium from tests: the DOM after scripts ran, console
messages, and screenshots (skips with a reason when Chromium is not installed)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

FLAGS = ("--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
         "--disable-extensions", "--disable-background-networking", "--disable-sync",
         "--disable-component-update", "--disable-default-apps", "--mute-audio")


def chromium() -> str:
    """The Chromium binary, or skip the test with the reason."""
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        pytest.skip("chromium is not installed (`make system-deps` installs it)")
    return binary


def run_chromium(url: str, *extra: str, budget_ms: int = 8000,
                 profile: Path) -> subprocess.CompletedProcess:
    """Load ``url`` with JavaScript on and let it run for ``budget_ms`` of virtual time."""
    return subprocess.run(
        [chromium(), *FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr",
         "--v=0", f"--virtual-time-budget={budget_ms}", *extra, url],
        capture_output=True, text=True, timeout=120)


def dump_dom(url: str, profile: Path, budget_ms: int = 8000) -> tuple[str, list[str]]:
    """The serialized DOM after scripts ran, and the console lines Chromium logged."""
    done = run_chromium(url, "--dump-dom", budget_ms=budget_ms, profile=profile)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, console_lines(done.stderr)


def screenshot(url: str, dest: Path, profile: Path, size: str = "1400,1000",
               budget_ms: int = 8000) -> Path:
    """A PNG screenshot of ``url`` at ``dest``."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    done = run_chromium(url, f"--screenshot={dest}", f"--window-size={size}",
                        "--hide-scrollbars", budget_ms=budget_ms, profile=profile)
    assert done.returncode == 0 and dest.is_file(), done.stderr[-2000:]
    return dest


def console_lines(stderr: str) -> list[str]:
    """The page's console messages (Chromium logs them as ``CONSOLE`` lines)."""
    return [line for line in stderr.splitlines() if "CONSOLE" in line]
