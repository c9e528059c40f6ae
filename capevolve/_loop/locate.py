"""Find a project's latest run: the newest run dir under ``<project>/.capevolve/``."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from capevolve._store.rundir import RunDir
from capevolve.errors import CapevolveError, RunDirError


def default_run_dir(project_root: Path) -> Path:
    """``<project>/.capevolve/run_<utc timestamp>``: where ``run`` puts a run without
    ``--run-dir``."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    return project_root / ".capevolve" / f"run_{stamp}"


def latest_run_dir(project: Path) -> Path:
    """The newest run dir there; RunDirError when there is none."""
    where = default_run_dir(Path(project)).parent
    found: list[tuple[str, str, Path]] = []
    for path in sorted(where.glob("*")) if where.is_dir() else []:
        if not (path / "run.json").is_file():
            continue
        try:
            created = RunDir.open(path).manifest.created_at
        except CapevolveError:
            continue
        found.append((created, path.name, path))
    if not found:
        raise RunDirError(f"--project {project}: no run under {where}; pass --run-dir or "
                          "start one with `capevolve run`")
    return max(found)[2]
