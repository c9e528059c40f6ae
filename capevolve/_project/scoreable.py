"""The adapter's ``scoreable(task)`` hook, called only here: an excluded task is never run and
is in no mean (never a 0).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from capevolve._project.calls import call_sync
from capevolve.adapter import Task
from capevolve.errors import AdapterError

DEFAULT_REASON = "adapter scoreable(task) returned False"


def _call(hook: Any, name: str, task: Task) -> Any:
    try:
        return call_sync(hook, task)
    except Exception as exc:
        raise AdapterError(f"adapter: {name}() raised on task {task.id!r}: "
                           f"{type(exc).__name__}: {exc}") from None


def exclusion(adapter: Any, task: Task) -> str | None:
    """Why ``task`` cannot be scored, or None when it can (or there is no hook)."""
    hook = getattr(adapter, "scoreable", None)
    if not callable(hook):
        return None
    verdict = _call(hook, "scoreable", task)
    if not isinstance(verdict, bool):
        raise AdapterError(f"adapter: scoreable() returned {type(verdict).__name__} "
                           f"on task {task.id!r}, expected bool")
    if verdict:
        return None
    explain = getattr(adapter, "exclusion_reason", None)
    if not callable(explain):
        return DEFAULT_REASON
    return str(_call(explain, "exclusion_reason", task)).strip() or DEFAULT_REASON


def exclusions(adapter: Any, tasks: Iterable[Task]) -> dict[str, str]:
    """``{task_id: reason}`` of the tasks that cannot be scored (sorted)."""
    if not callable(getattr(adapter, "scoreable", None)):
        return {}
    found = {task.id: exclusion(adapter, task) for task in tasks}
    return {task_id: why for task_id, why in sorted(found.items()) if why is not None}


def reason_counts(excluded: dict[str, str]) -> dict[str, int]:
    """Reason -> number of tasks, most frequent first (ties by reason)."""
    counts = Counter(excluded.values())
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
