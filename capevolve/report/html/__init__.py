"""report.html: the run's report as one self-contained page (inline SVG, no network)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from capevolve._store.rundir import RunDir
from capevolve.report.data import report_data
from capevolve.report.html.page import render_html

REPORT_HTML = "report.html"


def html_path(run: RunDir) -> Path:
    """Next to report.md in the run dir."""
    return run.layout.report_md.with_name(REPORT_HTML)


def write_html(run: RunDir, data: dict[str, Any] | None = None) -> Path:
    """Write report.html atomically under the run lock, from ``data`` when the caller already
    read and checked it."""
    with run.locked():
        page = render_html(report_data(run) if data is None else data)
        target = html_path(run)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        tmp.write_text(page, encoding="utf-8")
        os.replace(tmp, target)
    return target
