"""Loading an adapter's tasks, validated one at a time as produced."""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from capevolve._project.calls import call_sync
from capevolve._project.record_errors import record_error
from capevolve._project.scoreable import exclusion
from capevolve._project.taskfile import TaskFile, TaskFileWriter
from capevolve._project.tasktable import TaskTable, TaskTableBuilder
from capevolve.adapter import Task
from capevolve.errors import AdapterError

SHOWN_DUPLICATES = 10


def iter_tasks(adapter: Any) -> Iterator[Task]:
    """Every task of ``adapter.tasks()``, validated, as produced (ids not checked unique)."""
    try:
        raw = call_sync(adapter.tasks)
    except (Exception, SystemExit) as exc:  # sys.exit() in user code is its error
        said = record_error(exc) or f"{type(exc).__name__}: {exc}"
        raise AdapterError(f"adapter: tasks() raised {said}") from None
    if isinstance(raw, (str, bytes, Mapping)) or not isinstance(raw, Iterable):
        raise AdapterError(f"adapter: tasks() returned {type(raw).__name__}, expected a list "
                           "or an iterable of Task")
    items = iter(raw)
    position = 0
    while True:
        try:
            item = next(items)
        except StopIteration:
            return
        except (Exception, SystemExit) as exc:
            raise AdapterError(f"adapter: tasks() raised {type(exc).__name__} after "
                               f"{position} tasks: {exc}") from None
        try:
            task = item if isinstance(item, Task) else Task.model_validate(item)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "task"
            raise AdapterError(f"adapter: tasks() returned an invalid Task at position "
                               f"{position}: {where}: {first['msg']}") from None
        yield task
        position += 1


def _checked(adapter: Any) -> Iterator[Task]:
    """:func:`iter_tasks`; once the last task is out, AdapterError on no tasks or duplicate ids
    (one 8-byte hash kept per id; a repeated hash is confirmed by re-reading the ids)."""
    hashes = array("q")
    for task in iter_tasks(adapter):
        hashes.append(hash(task.id))
        yield task
    if not hashes:
        raise AdapterError("adapter: tasks() returned no tasks")
    ordered = sorted(hashes)  # stdlib only: `capevolve check` loads no numpy
    repeated = {a for a, b in zip(ordered, ordered[1:], strict=False) if a == b}
    del ordered
    if not repeated:
        return
    counts = Counter(t.id for t in iter_tasks(adapter) if hash(t.id) in repeated)
    duplicates = sorted(tid for tid, n in counts.items() if n > 1)
    if duplicates:
        raise AdapterError("adapter: duplicate task ids: "
                           f"{', '.join(duplicates[:SHOWN_DUPLICATES])}")


def load_tasks(adapter: Any) -> list[Task]:
    """Every task, validated; ids unique, at least one task."""
    return list(_checked(adapter))


def task_ids(adapter: Any) -> list[str]:
    """Every task id in order, validated as :func:`load_tasks` does, without the tasks."""
    return [task.id for task in _checked(adapter)]


@dataclass
class SplitTasks:
    """What one pass over the adapter's tasks gives an evaluation."""

    table: TaskTable | TaskFile
    """The split's tasks in order (a file when loaded ``into`` one)."""
    excluded: dict[str, str] = field(default_factory=dict)
    """``{task id: reason}`` of scored tasks the adapter cannot score (sorted)."""
    clusters: dict[str, str] = field(default_factory=dict)
    """``{task id: cluster key}`` from ``metadata['cluster']``."""
    missing: list[str] = field(default_factory=list)
    """Split ids the adapter no longer returns (sorted)."""


def load_split_tasks(adapter: Any, split_ids: Collection[str],
                     scored: Collection[str] = (),
                     into: TaskTableBuilder | TaskFileWriter | None = None) -> SplitTasks:
    """One pass over ``adapter.tasks()``, validated as by :func:`load_tasks`: the tasks in
    ``split_ids`` (streamed ``into`` a task file when given), exclusions among ``scored`` and
    clusters."""
    wanted = split_ids if isinstance(split_ids, (set, frozenset)) else set(split_ids)
    hooked = callable(getattr(adapter, "scoreable", None))
    to_score: Collection[str] = () if not hooked else wanted if scored is split_ids \
        else scored if isinstance(scored, (set, frozenset)) else set(scored)
    builder = TaskTableBuilder() if into is None else into
    excluded: dict[str, str] = {}
    clusters: dict[str, str] = {}
    try:
        for task in _checked(adapter):
            if task.id not in wanted:
                continue
            builder.add(task)
            cluster = task.metadata.get("cluster")
            if cluster is not None:
                clusters[task.id] = str(cluster)
            if task.id in to_score:
                reason = exclusion(adapter, task)
                if reason is not None:
                    excluded[task.id] = reason
        missing = [] if len(builder) == len(wanted) else sorted(set(wanted) - set(builder.ids()))
        return SplitTasks(builder.build(), dict(sorted(excluded.items())), clusters, missing)
    except BaseException:
        if isinstance(builder, TaskFileWriter):
            builder.abort()
        raise
