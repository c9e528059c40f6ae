"""What diagnosis needs from the project's adapter: targets, inputs and trajectories. Without
``--project``, an unloadable run project gives an empty context saying why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capevolve._loop.evaluate import run_project
from capevolve._loop.frozen_config import run_config
from capevolve._project.calls import call_sync
from capevolve._project.loader import load_project, load_tasks
from capevolve._store.rundir import RunDir
from capevolve.errors import AdapterError, CapevolveError


@dataclass
class AdapterContext:
    """Targets of the split's tasks and the adapter's trajectory path, when available."""

    targets: dict[str, Any] | None = None  # task id -> Task.target; None = unavailable
    trajectory: str | None = None  # adapter.trajectories(split), if it has one
    unavailable: str | None = None  # why the adapter could not be consulted
    inputs: dict[str, Any] = field(default_factory=dict)  # task id -> Task.input


def adapter_context(run: RunDir, split: str, project: Path | None = None) -> AdapterContext:
    """Consult the adapter once."""
    try:
        if project is not None:
            loaded = load_project(project, config=run_config(run))
        else:
            loaded = run_project(run)
        adapter = loaded.adapter()
        tasks = load_tasks(adapter)
    except CapevolveError as exc:
        if project is not None:
            raise
        return AdapterContext(unavailable=str(exc).splitlines()[0] if str(exc) else "error")
    ids = set(run.splits.ids(split))
    context = AdapterContext(targets={t.id: t.target for t in tasks if t.id in ids},
                             inputs={t.id: t.input for t in tasks if t.id in ids})
    hook = getattr(adapter, "trajectories", None)
    if callable(hook):
        try:
            path = call_sync(hook, split)
        except Exception as exc:  # noqa: BLE001 - re-raised as a one-line AdapterError
            raise AdapterError(f"adapter: trajectories({split!r}) raised "
                               f"{type(exc).__name__}: {exc}") from None
        context.trajectory = None if path is None else str(path)
    return context
