"""The config a run froze into run.json; verbs never read the live file."""

from __future__ import annotations

from capevolve._store.rundir import RunDir
from capevolve.config import ProjectConfig


def run_config(run: RunDir) -> ProjectConfig:
    """The config frozen into run.json."""
    return run.manifest.config
