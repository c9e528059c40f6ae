"""report.html in a real browser: headless Chromium renders it with JavaScript on, logs no
console error, makes no request but the file itself, draws every plot with data marks, and
a full-page screenshot is taken (copied to $CAPEVOLVE_SCREENSHOTS when set, which is how
docs/img/report.png is made: ``CAPEVOLVE_SCREENSHOTS=docs/img pytest -m browser
tests/report``)."""

from __future__ import annotations

import http.server
import os
import shutil
import threading
from pathlib import Path

import pytest
from report.webdriver import Browser, binaries

from capevolve.report.data import report_data
from capevolve.report.html import write_html

pytestmark = pytest.mark.browser

CHARTS = ("best-val", "lineage", "forest", "heatmap", "pass-k", "final-delta", "spend")

PAGE_FACTS = """
const charts = {};
document.querySelectorAll('svg[data-chart]').forEach(function (svg) {
  const box = svg.getBoundingClientRect();
  charts[svg.dataset.chart] = {width: box.width, height: box.height,
                               marks: svg.querySelectorAll('.mark').length};
});
return {charts: charts, jsCharts: document.body.dataset.charts, title: document.title,
        scripts: document.scripts.length, images: document.images.length,
        height: document.documentElement.scrollHeight};
"""


SORT_BY_VAL_MEAN = """
const table = document.querySelector('table.sortable');
const header = Array.from(table.tHead.rows[0].cells).find(c => c.textContent.startsWith('val'));
const ids = () => Array.from(table.tBodies[0].rows).map(r => r.cells[0].textContent);
const before = ids(); header.click(); const up = ids(); header.click();
return {before: before, up: up, down: ids()};
"""


@pytest.fixture(scope="module")
def page(report_run, tmp_path_factory):
    binaries()
    run_copy = tmp_path_factory.mktemp("html") / "run"
    shutil.copytree(report_run.path, run_copy)
    from capevolve._store.rundir import RunDir

    run = RunDir.open(run_copy)
    return write_html(run), report_data(run)


def test_report_html_renders_offline_with_every_plot(page, tmp_path):
    """JavaScript runs, nothing is fetched but the file, no console error, every chart is
    drawn with its data marks; the screenshot is a real PNG of the whole page."""
    path, data = page
    url = path.resolve().as_uri()
    with Browser(tmp_path / "profile") as browser:
        browser.open(url)
        facts = browser.run(PAGE_FACTS)
        order = browser.run(SORT_BY_VAL_MEAN)
        assert browser.console_errors() == []
        assert browser.requests() == [url]
        browser.resize(1280, min(int(facts["height"]) + 40, 6000))
        shot = browser.screenshot(tmp_path / "report.png")
    assert facts["jsCharts"] == str(len(CHARTS)), facts  # set by the page's own script
    for name in CHARTS:
        chart = facts["charts"][name]
        assert chart["width"] > 100 and chart["height"] > 50 and chart["marks"] > 0, name
    heat = data["heatmap"]
    assert facts["charts"]["heatmap"]["marks"] == len(heat["tasks"]) * len(heat["candidates"])
    assert facts["charts"]["lineage"]["marks"] == len(data["candidates"])
    # the accept note was HTML: shown as text, never run or fetched
    assert facts["title"].startswith("capevolve report") and facts["scripts"] == 1
    assert facts["images"] == 0
    # the page's one script sorts a table by a header click (numbers as numbers)
    by_mean = sorted((c for c in data["candidates"] if c["val"]["mean"] is not None),
                     key=lambda c: c["val"]["mean"])
    assert order["before"] == [c["id"] for c in data["candidates"]]
    unmeasured = [c["id"] for c in data["candidates"] if c["val"]["mean"] is None]
    assert unmeasured == ["cand_003"]
    assert order["up"] == [c["id"] for c in by_mean] + unmeasured
    assert order["down"] == [c["id"] for c in reversed(by_mean)] + unmeasured
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000
    target = os.environ.get("CAPEVOLVE_SCREENSHOTS")
    if target:
        shutil.copy(shot, Path(target) / "report.png")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def test_the_checks_catch_a_request_and_a_console_error(tmp_path):
    """The same checks fail on a page that fetches from a (real, local) server and logs a
    console error: they are not vacuous."""
    binaries()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        bad = tmp_path / "bad.html"
        bad.write_text(f'<!DOCTYPE html><html><body><img src="http://127.0.0.1:'
                       f'{server.server_port}/x.png"><script>console.error("boom")</script>'
                       "</body></html>", encoding="utf-8")
        with Browser(tmp_path / "profile") as browser:
            browser.open(bad.as_uri())
            errors, requests = browser.console_errors(), browser.requests()
    finally:
        server.shutdown()
    assert any("boom" in e for e in errors)
    assert f"http://127.0.0.1:{server.server_port}/x.png" in requests
