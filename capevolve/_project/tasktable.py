"""The tasks of one evaluation as one compact table: two byte blobs, never one object per task."""

from __future__ import annotations

import threading
from array import array
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping

from capevolve.adapter import Task

CACHE_SIZE = 4096
"""Decoded tasks a table keeps (first in, first out)."""


class TaskLog:
    """Tasks added so far: the ids as one UTF-8 blob and the JSON bytes held (all, or those not
    yet written out), each with ``array('q')`` end offsets."""

    def __init__(self) -> None:
        self._ids, self._id_ends = bytearray(), array("q")
        self._data, self._data_ends, self._size = bytearray(), array("q"), 0

    def add(self, task: Task) -> None:
        """Append one task (its JSON as pydantic writes it)."""
        self.add_json(task.id, task.__pydantic_serializer__.to_json(task))

    def add_json(self, task_id: str, data: bytes) -> None:
        """Append one task's id and JSON bytes (trusted to match)."""
        self._ids += task_id.encode()
        self._id_ends.append(len(self._ids))
        self._data += data
        self._size += len(data)
        self._data_ends.append(self._size)

    def __len__(self) -> int:
        return len(self._id_ends)

    def ids(self) -> Iterator[str]:
        """The ids added so far, in order."""
        ends, start = self._id_ends, 0
        for end in ends:
            yield self._ids[start:end].decode()
            start = end


class TaskTableBuilder(TaskLog):
    """Appends tasks; :meth:`build` makes the table."""

    def build(self) -> TaskTable:
        """The table of every task added, in order."""
        # the buffers themselves (no copy): the builder is done with them
        table = TaskTable(self._ids, self._id_ends, self._data, self._data_ends)
        self._ids, self._data, self._size = bytearray(), bytearray(), 0
        self._id_ends, self._data_ends = array("q"), array("q")
        return table


class TaskTable(Mapping[str, Task]):
    """The tasks of one evaluation by id, in order added; read-only, equal when the same
    tasks are in the same order."""

    __slots__ = ("_ids", "_id_ends", "_data", "_data_ends", "_index", "_cache", "_lock",
                 "__weakref__")

    def __init__(self, ids: bytes | bytearray, id_ends: array, data: bytes | bytearray,
                 data_ends: array) -> None:
        if len(id_ends) != len(data_ends):
            raise ValueError("task table: ids and data differ in length")
        self._ids, self._id_ends, self._data, self._data_ends = ids, id_ends, data, data_ends
        self._index: dict[str, int] | None = None
        self._cache: OrderedDict[str, Task] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def of(cls, tasks: Iterable[Task]) -> TaskTable:
        """A table of ``tasks`` (a later task with a seen id is dropped)."""
        builder, seen = TaskTableBuilder(), set()
        for task in tasks:
            if task.id not in seen:
                seen.add(task.id)
                builder.add(task)
        return builder.build()

    def json_lines(self) -> str:
        """Every task's JSON, one per line, in order."""
        return b"\n".join(self._json_at(i) for i in range(len(self))).decode()

    # -- positions ---------------------------------------------------------------------

    def _id_at(self, i: int) -> str:
        ends = self._id_ends
        return self._ids[ends[i - 1] if i else 0:ends[i]].decode()

    def _json_at(self, i: int) -> bytes | bytearray:
        ends = self._data_ends
        return self._data[ends[i - 1] if i else 0:ends[i]]

    def position(self, task_id: object) -> int:
        """Where ``task_id`` sits in the table, or -1."""
        index = self._index
        if index is None:
            with self._lock:
                if self._index is None:
                    self._index = {self._id_at(i): i for i in range(len(self))}
                index = self._index
        return index.get(task_id, -1) if isinstance(task_id, str) else -1

    # -- the mapping -------------------------------------------------------------------

    def __getitem__(self, task_id: str) -> Task:
        task = self._cache.get(task_id)
        if task is not None:
            return task
        i = self.position(task_id)
        if i < 0:
            raise KeyError(task_id)
        task = Task.model_validate_json(self._json_at(i))
        with self._lock:  # first in, first out: a task's units arrive together
            if len(self._cache) >= CACHE_SIZE:
                self._cache.popitem(last=False)
            self._cache[task_id] = task
        return task

    def __contains__(self, task_id: object) -> bool:
        return self.position(task_id) >= 0

    def __iter__(self) -> Iterator[str]:
        return (self._id_at(i) for i in range(len(self)))

    def __len__(self) -> int:
        return len(self._id_ends)

    def nbytes(self) -> int:
        """Bytes in the table's buffers (not the index or cache)."""
        return (len(self._ids) + len(self._data)
                + self._id_ends.itemsize * (len(self._id_ends) + len(self._data_ends)))

    def __reduce__(self):
        return (TaskTable, (self._ids, self._id_ends, self._data, self._data_ends))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TaskTable):
            return (self._ids, self._id_ends, self._data, self._data_ends) == (
                other._ids, other._id_ends, other._data, other._data_ends)
        return Mapping.__eq__(self, other)

    __hash__ = None  # type: ignore[assignment]


def as_table(tasks: Mapping[str, Task]) -> TaskTable:
    """``tasks`` as a table (a table is returned as it is)."""
    return tasks if isinstance(tasks, TaskTable) else TaskTable.of(tasks.values())
