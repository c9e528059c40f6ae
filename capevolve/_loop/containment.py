"""How a run contains candidate code: the workers' sandbox, and the warnings when it could not."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from capevolve._engine import sandbox
from capevolve._engine.contract import SandboxSpec
from capevolve._project.loader import Project
from capevolve._store import signing
from capevolve._store.rundir import RunDir
from capevolve.config import ProjectConfig

NOT_CONTAINED = ("candidate code was not contained (engine.isolation: none): it could read "
                 "the gold, the run dir and the keys, and change code that runs later")
SEES_TARGET = ("candidate code could see the answers: the adapter declares "
               "run_target_sees_target, so the target of every task reached run_target")


def sees_target(adapter: Any) -> bool:
    """Whether the adapter's run_target needs the task's target."""
    return getattr(adapter, "run_target_sees_target", False) is True


def adapter_package(adapter: Any) -> str | None:
    """The directory of the adapter class's package (None for a project-file module)."""
    module = sys.modules.get(type(adapter).__module__)
    file = getattr(module, "__file__", None)
    if not file or not getattr(module, "__package__", None):
        return None
    return str(Path(file).resolve().parent)


def adapter_sources(adapter: Any, project_root: Path | str) -> tuple[str, ...]:
    """Sources (files, or top package directories) the adapter's module reaches through module
    globals, outside the project, Python, capevolve and its package."""
    start = sys.modules.get(type(adapter).__module__)
    if start is None:
        return ()
    package = adapter_package(adapter)
    known = [Path(p).resolve() for p in (*sandbox.python_trees(), project_root, package) if p]
    found: set[str] = set()
    seen = {start.__name__}
    todo = [start]
    while todo:
        for value in list(vars(todo.pop()).values()):
            name = _module_name(value)
            if name is None or name in seen or name not in sys.modules:
                continue
            module = sys.modules[name]
            file = getattr(module, "__file__", None)
            if not isinstance(file, str):
                continue
            seen.add(name)
            path = Path(file).resolve()
            if any(path == k or k in path.parents for k in known):
                continue
            top = sys.modules.get(name.split(".")[0])
            top_file = getattr(top, "__file__", None)
            if "." in name or hasattr(module, "__path__"):
                if not isinstance(top_file, str):
                    continue  # a namespace package: no single directory to show
                found.add(str(Path(top_file).resolve().parent))
            else:
                found.add(str(path))
            todo.append(module)
    return tuple(sorted(found))


def _module_name(value: Any) -> str | None:
    try:
        name = value.__name__ if isinstance(value, ModuleType) else getattr(
            value, "__module__", None)
    except Exception:  # a proxy whose attribute lookup raises
        return None
    return name if isinstance(name, str) else None


def sandbox_spec(run: RunDir, project: Project, adapter: Any,
                 calls_model: bool = False) -> SandboxSpec | None:
    """The workers' sandbox (None with ``isolation: none``); EngineError naming the opt-out when
    none can be built."""
    config = project.config
    if config.engine.isolation == "none":
        return None
    sandbox.require()
    reads = getattr(adapter, "run_target_reads", ())
    network = config.engine.network or ("host" if calls_model else "none")
    return SandboxSpec(
        network=network, reads=tuple(config.engine.sandbox_reads),
        package=adapter_package(adapter),
        package_reads=tuple(str(r) for r in reads) if isinstance(reads, (list, tuple)) else (),
        sources=adapter_sources(adapter, project.root),
        protected=tuple(config.protected_paths),
        hidden=(str(run.root), str(signing.key_dir()), str(signing.state_dir())),
        per_call=config.engine.isolation == "process")


def warnings(config: ProjectConfig, sees: bool = False) -> list[str]:
    """What a run says about containment (empty: contained, never saw the answers)."""
    found = [NOT_CONTAINED] if config.engine.isolation == "none" else []
    return found + ([SEES_TARGET] if sees else [])
