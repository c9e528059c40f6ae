"""``census check --record``: store a checked census in its run dir
(rules: ``capevolve._store.censuses``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from capevolve._store import censuses
from capevolve._store.rundir import RunDir


def record_census(run_dir: str | Path, name: str, doc: dict[str, Any]) -> Path:
    """Store ``doc`` as ``census/<name>.json`` of the run at ``run_dir`` (under its lock)."""
    run = RunDir.open(run_dir)
    with run.locked():
        run.require_open("census --record")
        return censuses.record(run.root, name, doc)
