"""report.html: the run's report as one self-contained page (inline SVG, no network)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from capevolve._store.jsonfiles import write_bytes_atomic
from capevolve._store.rundir import RunDir
from capevolve.report.data import report_data
from capevolve.report.html.page import render_html


def html_path(run: RunDir) -> Path:
    """Next to report.md in the run dir."""
    return run.layout.report_md.with_name("report.html")


def write_html(run: RunDir, data: dict[str, Any] | None = None) -> Path:
    """Write report.html atomically under the run lock, from ``data`` when the caller already
    read and checked it."""
    with run.locked():
        page = render_html(report_data(run) if data is None else data)
        write_bytes_atomic(html_path(run), page.encode("utf-8"), sync=False)
    return html_path(run)
