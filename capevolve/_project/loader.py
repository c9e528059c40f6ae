"""Load a project (config + adapter + seed capability) and check it before money is spent."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capevolve._project.bytecode import SourceOnlyLoader, source_only_user_code
from capevolve._project.calls import call_sync
from capevolve._project.record_errors import record_error
from capevolve._project.scoreable import exclusions
from capevolve._project.tasks import load_tasks  # noqa: F401 - re-exported
from capevolve.adapter import Rollout, Score, Task
from capevolve.errors import (
    AdapterError,
    CapevolveError,
    ConfigError,
    JudgeError,
    JudgeUnavailable,
)
from capevolve.models import Meter, judging, resolve, scope

if TYPE_CHECKING:  # (a worker loads an adapter without the config's models)
    from capevolve.config import ProjectConfig

REQUIRED_METHODS = ("tasks", "run_target", "score")

NOT_DETERMINISTIC = "score is not deterministic on task"
"""How the probe's non-determinism finding begins (a warning when an LLM judge scores)."""


@dataclass(frozen=True)
class Project:
    """A loaded project: its root and config."""

    root: Path
    config: ProjectConfig

    @property
    def capability_dir(self) -> Path:
        """The seed capability directory."""
        return (self.root / self.config.capability_path).resolve()

    def adapter(self) -> Any:
        """A fresh adapter instance."""
        return load_adapter(self.root, self.config.adapter)


def load_project(project_dir: Path | str, config: ProjectConfig | None = None) -> Project:
    """Load ``capevolve.yaml`` from ``project_dir`` (or use ``config``) and validate paths."""
    from capevolve.config import check_capability_dir, load_config

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


def import_callable(root: Path, spec: str, what: str) -> Any:
    """The function a ``file.py:function`` or ``module:function`` spec names; AdapterError
    naming ``what`` (the config key) otherwise."""
    target, sep, name = spec.rpartition(":")
    if not sep or not target or not name:
        raise AdapterError(f"{what}: {spec!r} must look like 'module.py:function'")
    try:
        module = _import_target(Path(root), target)
    except AdapterError as exc:
        raise AdapterError(f"{what}: {str(exc).removeprefix('adapter: ')}") from None
    function = getattr(module, name, None)
    if not callable(function):
        raise AdapterError(f"{what}: {target} has no function {name!r}")
    return function


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
        # a built-in adapter configured by the project (dataset projects) takes its root
        return cls(Path(root)) if getattr(cls, "takes_project_root", False) else cls()
    except CapevolveError:
        raise
    except (Exception, SystemExit) as exc:  # sys.exit() in user code is its error
        raise AdapterError(f"adapter: {class_name}() raised {type(exc).__name__}: {exc}") from None


def _probe_score(adapter: Any, project: Project, task: Task,
                 meter: Meter) -> tuple[list[str], list[str]]:
    """(problems, warnings) of scoring one seed rollout twice."""
    judged = bool(getattr(adapter, "judged", False))
    declared = project.config.models.agent
    settings = None if declared is None else resolve(declared, "agent", project.config.models)
    try:
        with scope(settings, meter):
            rollout = call_sync(adapter.run_target, project.capability_dir, task, trial=0,
                                seed=0)
        if not isinstance(rollout, Rollout):
            return [f"run_target returned {type(rollout).__name__}, expected Rollout"], []
        if rollout.error:
            return [f"run_target on task {task.id!r} reported an error: {rollout.error}"], []
        with judging(meter):  # the judge's calls are the check's spend too
            first = call_sync(adapter.score, task, rollout)
            second = call_sync(adapter.score, task, rollout)
    except JudgeError as exc:
        found = f"probe on task {task.id!r} raised {type(exc).__name__}: {exc}"
        unreachable = isinstance(exc, JudgeUnavailable)
        return ([found], []) if unreachable or not judged else (
            [], [found + " (such answers are error rows, never scores)"])
    except (Exception, SystemExit) as exc:  # sys.exit() in user code is its error
        said = record_error(exc) or f"{type(exc).__name__}: {exc}"
        return [f"probe on task {task.id!r} raised {said}"], []
    if not isinstance(first, Score):
        return [f"score returned {type(first).__name__}, expected Score"], []
    if first != second:
        found = f"{NOT_DETERMINISTIC} {task.id!r} (two probes of one rollout differ)"
        return ([], [found]) if judged else ([found], [])
    return [], []


def check_project(project_dir: Path | str, meter: Meter | None = None
                  ) -> tuple[Project | None, list[str]]:
    """Every problem found with a project, in words (empty: runnable)."""
    project, problems, _ = check_project_warnings(project_dir, meter)
    return project, problems


def check_project_warnings(project_dir: Path | str, meter: Meter | None = None
                           ) -> tuple[Project | None, list[str], list[str]]:
    """(project, problems, warnings): warnings (an LLM judge's non-determinism or off-schema
    answer) do not stop a run; probe calls count on ``meter``."""
    try:
        project = load_project(project_dir)
        adapter = project.adapter()
        tasks = load_tasks(adapter)
    except CapevolveError as exc:
        return None, [str(exc)], []
    problems: list[str] = []
    second = load_tasks(adapter)
    if [t.id for t in tasks] != [t.id for t in second]:
        problems.append("tasks() ids are not stable across two calls (order or content differs)")
    excluded = exclusions(adapter, tasks)
    probe = next((t for t in tasks if t.id not in excluded), tasks[0])
    found, warnings = _probe_score(adapter, project, probe,
                                   meter if meter is not None else Meter())
    return project, problems + found, warnings
