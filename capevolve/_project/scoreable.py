"""Which tasks can be scored: the adapter's ``scoreable(task)`` hook, with its reasons.

A task that cannot be scored (no ground truth for its evaluators, no label) is excluded
from an evaluation: it is never run, and it is in neither the numerator nor the
denominator of any mean (never a 0). This is the one place the hook is called.
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
    """``hook(task)``; an exception is one AdapterError line naming the hook and task."""
    try:
        return call_sync(hook, task)
    except Exception as exc:
        raise AdapterError(f"adapter: {name}() raised on task {task.id!r}: "
                           f"{type(exc).__name__}: {exc}") from None


def _reason(adapter: Any, task: Task) -> str:
    explain = getattr(adapter, "exclusion_reason", None)
    if not callable(explain):
        return DEFAULT_REASON
    return str(_call(explain, "exclusion_reason", task)).strip() or DEFAULT_REASON


def exclusion(adapter: Any, task: Task) -> str | None:
    """Why the adapter says ``task`` cannot be scored, or None when it can (or the adapter
    has no ``scoreable`` hook)."""
    hook = getattr(adapter, "scoreable", None)
    if not callable(hook):
        return None
    verdict = _call(hook, "scoreable", task)
    if not isinstance(verdict, bool):
        raise AdapterError(f"adapter: scoreable() returned {type(verdict).__name__} "
                           f"on task {task.id!r}, expected bool")
    return None if verdict else _reason(adapter, task)


def exclusions(adapter: Any, tasks: Iterable[Task]) -> dict[str, str]:
    """``{task_id: reason}`` of every task the adapter says cannot be scored (sorted)."""
    if not callable(getattr(adapter, "scoreable", None)):
        return {}
    out: dict[str, str] = {}
    for task in tasks:
        reason = exclusion(adapter, task)
        if reason is not None:
            out[task.id] = reason
    return dict(sorted(out.items()))


def reason_counts(excluded: dict[str, str]) -> dict[str, int]:
    """Reason -> number of tasks, most frequent first (ties by reason)."""
    counts = Counter(excluded.values())
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
