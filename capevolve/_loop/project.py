"""The verbs on a project directory: scaffold one, and check that one is runnable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from capevolve._loop.loop_status import stop_parse
from capevolve._project.loader import check_project, load_tasks
from capevolve._project.scaffold import init_project


def init(directory: Path | str) -> dict[str, Any]:
    """Write a starter project into ``directory`` (refuses to overwrite a project).

    Returns ``{"project": <absolute dir>, "files": [written relative paths]}``.
    """
    files = init_project(directory)
    return {"project": str(Path(directory).resolve()), "files": files}


def check(project_dir: Path | str) -> dict[str, Any]:
    """Every problem with a project, in words (see ``check_project``), plus its task count.

    Returns ``{"ok", "project", "n_tasks", "problems", "stop"}``; ``n_tasks`` is None
    unless ok; ``stop`` is the parse of the stop condition (predicates and the clauses that
    did not parse), None when the config did not load.
    A missing directory or an invalid capevolve.yaml is reported as a problem, not raised.
    """
    loaded, problems = check_project(project_dir)
    n_tasks = len(load_tasks(loaded.adapter())) if loaded and not problems else None
    return {"ok": not problems, "project": str(Path(project_dir).resolve()),
            "n_tasks": n_tasks, "problems": problems,
            "stop": stop_parse(loaded.config.stop_condition) if loaded else None}
