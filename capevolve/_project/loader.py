"""Load a project (config + adapter + seed capability) and check it before money is spent."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from capevolve._project.bytecode import SourceOnlyLoader, source_only_user_code
from capevolve._project.calls import call_sync
from capevolve.adapter import Rollout, Score, Task
from capevolve.config import ProjectConfig, check_capability_dir, load_config
from capevolve.errors import AdapterError, CapevolveError, ConfigError

REQUIRED_METHODS = ("tasks", "run_target", "score")


@dataclass(frozen=True)
class Project:
    """A loaded project: where it lives, its config, and how to build its adapter."""

    root: Path
    config: ProjectConfig

    @property
    def capability_dir(self) -> Path:
        """The seed capability directory."""
        return (self.root / self.config.capability_path).resolve()

    def adapter(self) -> Any:
        """A fresh adapter instance (imports the adapter module on first use)."""
        return load_adapter(self.root, self.config.adapter)


def load_project(project_dir: Path | str, config: ProjectConfig | None = None) -> Project:
    """Load ``capevolve.yaml`` from ``project_dir`` (or use ``config``) and validate paths."""
    root = Path(project_dir).resolve()
    if not root.is_dir():
        raise ConfigError(f"{root}: project directory does not exist")
    project = Project(root=root, config=config or load_config(root))
    check_capability_dir(root, project.config)
    return project


def _import_target(root: Path, target: str) -> Any:
    source_only_user_code()
    if target.endswith(".py") or "/" in target:
        path = (root / target).resolve()
        if not path.is_file():
            raise AdapterError(f"adapter: file {path} does not exist")
        digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
        name = f"capevolve_project_{digest}_{path.stem}"
        if name in sys.modules:
            return sys.modules[name]
        spec = importlib.util.spec_from_file_location(
            name, path, loader=SourceOnlyLoader(name, str(path)))
        if spec is None or spec.loader is None:
            raise AdapterError(f"adapter: {path} cannot be imported as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        if str(path.parent) not in sys.path:
            sys.path.insert(0, str(path.parent))
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            del sys.modules[name]
            raise AdapterError(f"adapter: importing {path} failed: {type(exc).__name__}: "
                               f"{exc}") from None
        return module
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        return importlib.import_module(target)
    except Exception as exc:
        raise AdapterError(f"adapter: importing module {target!r} failed: {exc}") from None


def load_adapter(root: Path, spec: str) -> Any:
    """Instantiate the adapter class named by ``file.py:Class`` or ``module:Class``."""
    target, sep, class_name = spec.rpartition(":")
    if not sep or not target or not class_name:
        raise AdapterError(f"adapter: {spec!r} must look like 'adapter.py:MyAdapter'")
    module = _import_target(Path(root), target)
    cls = getattr(module, class_name, None)
    if cls is None:
        raise AdapterError(f"adapter: {target} has no class {class_name!r}")
    missing = [m for m in REQUIRED_METHODS if not callable(getattr(cls, m, None))]
    if missing:
        raise AdapterError(f"adapter: {class_name} in {target} lacks {', '.join(missing)}()")
    try:
        return cls()
    except (Exception, SystemExit) as exc:  # sys.exit() in user code is its error
        raise AdapterError(f"adapter: {class_name}() raised {type(exc).__name__}: {exc}") from None


def load_tasks(adapter: Any) -> list[Task]:
    """Call ``adapter.tasks()`` and validate the records; ids must be unique and non-empty."""
    try:
        raw = call_sync(adapter.tasks)
    except (Exception, SystemExit) as exc:  # sys.exit() in user code is its error
        raise AdapterError(f"adapter: tasks() raised {type(exc).__name__}: {exc}") from None
    if not isinstance(raw, (list, tuple)):
        raise AdapterError(f"adapter: tasks() returned {type(raw).__name__}, expected a list")
    try:
        tasks = [t if isinstance(t, Task) else Task.model_validate(t) for t in raw]
    except ValidationError as exc:
        raise AdapterError(f"adapter: tasks() returned an invalid Task: "
                           f"{exc.errors()[0]}") from None
    if not tasks:
        raise AdapterError("adapter: tasks() returned no tasks")
    counts = Counter(t.id for t in tasks)
    duplicates = sorted(tid for tid, n in counts.items() if n > 1)
    if duplicates:
        raise AdapterError(f"adapter: duplicate task ids: {', '.join(duplicates[:10])}")
    return tasks


def _probe_score(adapter: Any, project: Project, task: Task) -> list[str]:
    problems: list[str] = []
    try:
        rollout = call_sync(adapter.run_target, project.capability_dir, task, trial=0, seed=0)
        if not isinstance(rollout, Rollout):
            return [f"run_target returned {type(rollout).__name__}, expected Rollout"]
        if rollout.error:
            return [f"run_target on task {task.id!r} reported an error: {rollout.error}"]
        first = call_sync(adapter.score, task, rollout)
        second = call_sync(adapter.score, task, rollout)
    except (Exception, SystemExit) as exc:  # sys.exit() in user code is its error
        return [f"probe on task {task.id!r} raised {type(exc).__name__}: {exc}"]
    if not isinstance(first, Score):
        problems.append(f"score returned {type(first).__name__}, expected Score")
    elif first != second:
        problems.append(f"score is not deterministic on task {task.id!r}")
    return problems


def check_project(project_dir: Path | str) -> tuple[Project | None, list[str]]:
    """Every problem found with a project, in words; an empty list means it is runnable.

    Checks: config valid, adapter importable, tasks non-empty with unique ids that are
    stable across two calls, and score deterministic on a probe rollout of the seed.
    """
    try:
        project = load_project(project_dir)
        adapter = project.adapter()
        tasks = load_tasks(adapter)
    except CapevolveError as exc:
        return None, [str(exc)]
    problems: list[str] = []
    second = load_tasks(adapter)
    if [t.id for t in tasks] != [t.id for t in second]:
        problems.append("tasks() ids are not stable across two calls (order or content differs)")
    problems += _probe_score(adapter, project, tasks[0])
    return project, problems
