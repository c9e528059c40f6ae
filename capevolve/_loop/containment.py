"""How a run contains candidate code: the sandbox of each evaluation's workers, and what the run
says when candidate code was not contained or could see the answers.
"""

from __future__ import annotations

import sys
from pathlib import Path
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
    """True when the adapter declares its run_target needs the task's target."""
    return getattr(adapter, "run_target_sees_target", False) is True


def adapter_package(adapter: Any) -> str | None:
    """The directory of the package the adapter class is defined in (None for a module
    loaded from a file of the project)."""
    module = sys.modules.get(type(adapter).__module__)
    file = getattr(module, "__file__", None)
    if not file or not getattr(module, "__package__", None):
        return None
    return str(Path(file).resolve().parent)


def sandbox_spec(run: RunDir, project: Project, adapter: Any,
                 calls_model: bool = False) -> SandboxSpec | None:
    """The sandbox of this run's workers (None with ``engine.isolation: none``); EngineError
    naming the opt-out where no sandbox can be built."""
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
        protected=tuple(config.protected_paths),
        hidden=(str(run.root), str(signing.key_dir()), str(signing.state_dir())),
        per_call=config.engine.isolation == "process")


def warnings(config: ProjectConfig, sees: bool = False) -> list[str]:
    """What a run says about containment (status, report.md, report.html, final.json):
    empty when candidate code was contained and never saw the answers."""
    found = [NOT_CONTAINED] if config.engine.isolation == "none" else []
    return found + ([SEES_TARGET] if sees else [])
