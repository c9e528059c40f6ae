"""capevolve view in headless Chromium: the page renders from the API, untrusted text
stays text, no console errors, no request leaves the viewer; screenshots for the README."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from view.chromium import dump_dom, screenshot

import capevolve
from capevolve.view.server import ViewerServer

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ALLOWED = re.compile(r"^(GET|HEAD) (/|/app\.js|/style\.css|/favicon\.ico|/api/[a-z]+(\?.*)?)$")


@pytest.fixture
def serve():
    servers = []

    def start(run_dir: Path) -> ViewerServer:
        server = ViewerServer(run_dir, port=0)
        server.start_background()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def shots_dir(tmp_path: Path) -> Path:
    """Where screenshots go: CAPEVOLVE_SCREENSHOTS (docs/img for the README) or tmp."""
    return Path(os.environ.get("CAPEVOLVE_SCREENSHOTS") or tmp_path)


def assert_clean(server: ViewerServer, console: list[str]) -> None:
    errors = [line for line in console if re.search(r"error|uncaught|refused", line, re.I)]
    assert not errors, errors
    stray = [r for r in server.recent_requests if not ALLOWED.match(r)]
    assert not stray, stray


def test_overview_and_trials_render(tmp_path, view_run, serve):
    server = serve(view_run.path)
    dom, console = dump_dom(server.url, tmp_path / "profile")
    for cid in ("seed", view_run.improved, view_run.worse):
        assert f"<td>{cid}" in dom, cid
    assert "val__seed__k3" in dom and "live · updated" in dom
    dom, console2 = dump_dom(server.url + "#tab=trials&split=val&candidate=seed&outcome=failed",
                             tmp_path / "profile")
    rows = re.findall(r'<tr class="clickable">', dom)
    assert rows, "the trials table is empty"
    assert re.search(r'id="trials-count">\d+ trials', dom)
    assert_clean(server, console + console2)
    screenshot(server.url, shots_dir(tmp_path) / "viewer.png", tmp_path / "profile")
    path = shots_dir(tmp_path) / "viewer.png"
    assert path.stat().st_size > 10_000


def test_compare_and_diff_tabs_render(tmp_path, view_run, serve):
    server = serve(view_run.path)
    dom, console = dump_dom(server.url + f"#tab=compare&a=seed&b={view_run.improved}",
                            tmp_path / "profile")
    assert "fail→pass" in dom and 'class="flip-up"' in dom
    dom, console2 = dump_dom(server.url + f"#tab=diff&a=seed&b={view_run.improved}",
                             tmp_path / "profile")
    assert "system_prompt.md (modified)" in dom and 'class="add"' in dom
    assert_clean(server, console + console2)
    screenshot(server.url + f"#tab=compare&a=seed&b={view_run.improved}",
               shots_dir(tmp_path) / "viewer-compare.png", tmp_path / "profile")


def test_untrusted_markup_is_shown_as_text(tmp_path, hostile_run, serve):
    server = serve(hostile_run)
    task = capevolve.open_run(hostile_run).splits.ids("val")[0]
    url = (server.url + "#tab=trials&split=val&candidate=seed"
           f"&eval=val__seed__k2&task={task}&trial=0")
    dom, console = dump_dom(url, tmp_path / "profile")
    assert "&lt;img src=x onerror=" in dom and "&lt;script&gt;" in dom
    assert "<img" not in dom and "pwned" not in dom.split("<title>")[1].split("</title>")[0]
    assert "<script>document" not in dom
    assert_clean(server, console)
