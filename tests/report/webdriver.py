"""Drive Debian's headless Chromium through chromedriver (W3C WebDriver over HTTP, with the
standard library only): load a page with JavaScript on, run a script in it, read the
console log and every network request (Chrome's performance log), take a screenshot.

Tests that use it skip with the reason when chromium or chromedriver is missing
(`make system-deps` installs both).
"""

from __future__ import annotations

import base64
import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--disable-extensions", "--disable-background-networking", "--disable-sync",
        "--disable-component-update", "--disable-default-apps", "--hide-scrollbars",
        "--mute-audio"]


def binaries() -> tuple[str, str]:
    """``(chromium, chromedriver)``, or skip the test saying what to install."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if browser is None or driver is None:
        pytest.skip("chromium and chromium-driver are not installed "
                    "(`make system-deps` installs them)")
    return browser, driver


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Browser:
    """One chromedriver process and one browser session (use as a context manager)."""

    def __init__(self, profile: Path, width: int = 1280, height: int = 900) -> None:
        browser, driver = binaries()
        self.port = _free_port()
        self.proc = subprocess.Popen([driver, f"--port={self.port}"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.base = f"http://127.0.0.1:{self.port}"
        self._wait_ready()
        caps = {"browserName": "chrome",
                "goog:chromeOptions": {"binary": browser,
                                       "args": ARGS + [f"--user-data-dir={profile}",
                                                       f"--window-size={width},{height}"]},
                "goog:loggingPrefs": {"browser": "ALL", "performance": "ALL"}}
        reply = self._call("POST", "/session", {"capabilities": {"alwaysMatch": caps}})
        self.session = reply["sessionId"]

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if self._call("GET", "/status").get("ready"):
                    return
            except (OSError, urllib.error.URLError):
                pass
            time.sleep(0.1)
        raise RuntimeError("chromedriver did not start")

    def _call(self, method: str, path: str, body: dict | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                payload = json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"webdriver {method} {path}: {exc.read()[:500]!r}") from None
        value = payload.get("value", payload)
        return value if path != "/session" else {**payload, **(value or {})}

    def _s(self, path: str) -> str:
        return f"/session/{self.session}{path}"

    def open(self, url: str) -> None:
        """Load ``url`` after a blank page, with the logs of everything before dropped (so
        :meth:`requests` and :meth:`console_errors` are about this page only)."""
        self._call("POST", self._s("/url"), {"url": "about:blank"})
        self.log("browser")
        self.log("performance")
        self._call("POST", self._s("/url"), {"url": url})

    def run(self, script: str, *args: Any) -> Any:
        """Run ``script`` (a function body; ``return`` a JSON value) in the page."""
        return self._call("POST", self._s("/execute/sync"), {"script": script, "args": list(args)})

    def resize(self, width: int, height: int) -> None:
        self._call("POST", self._s("/window/rect"), {"width": width, "height": height})

    def log(self, kind: str) -> list[dict[str, Any]]:
        """The entries of the ``browser`` (console) or ``performance`` log since last read."""
        return self._call("POST", self._s("/se/log"), {"type": kind})

    def console_errors(self) -> list[str]:
        return [e["message"] for e in self.log("browser") if e.get("level") == "SEVERE"]

    def requests(self) -> list[str]:
        """The URL of every request the page made (Network.requestWillBeSent)."""
        urls = []
        for entry in self.log("performance"):
            message = json.loads(entry["message"])["message"]
            if message.get("method") == "Network.requestWillBeSent":
                urls.append(message["params"]["request"]["url"])
        return urls

    def screenshot(self, dest: Path) -> Path:
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(base64.b64decode(self._call("GET", self._s("/screenshot"))))
        return dest

    def close(self) -> None:
        try:
            self._call("DELETE", self._s(""))
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
