"""The project config a run froze into run.json when it was created.

Every verb reads its settings from here, never from the project's live config file (which
the user may edit mid-run). A light module: reading the config loads no Arrow or DuckDB.
"""

from __future__ import annotations

from capevolve._store.rundir import RunDir
from capevolve.config import ProjectConfig


def run_config(run: RunDir) -> ProjectConfig:
    """The config frozen into run.json when the run was created."""
    return run.manifest.config
