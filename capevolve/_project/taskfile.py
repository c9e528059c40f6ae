"""The tasks of one split as a file in the run dir, checked against the driver's sha256."""

from __future__ import annotations

import hashlib
import os
import struct
import sys
import threading
import weakref
from array import array
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from capevolve._project.tasktable import TaskLog, TaskTable
from capevolve.adapter import Task
from capevolve.errors import EngineError

MAGIC = b"CEVTASK1"
_FOOTER = struct.Struct("<8sQQQQ")  # magic, n, id bytes, data bytes, reserved
CHUNK = 1 << 20
"""Task JSON bytes buffered before a write."""
CACHED = 2
"""Verified tables a process keeps after their jobs let go."""


@dataclass(frozen=True, slots=True)
class TaskFile:
    """A job's task file: path, sha256 and count (what travels to workers)."""

    path: str
    sha256: str
    count: int

    def __len__(self) -> int:
        return self.count


class TaskFileWriter(TaskLog):
    """Streams tasks into ``<folder>/<split>-<digest>.tasks``; :meth:`build` places it."""

    def __init__(self, folder: Path, split: str) -> None:
        super().__init__()
        folder.mkdir(parents=True, exist_ok=True)
        self.folder, self.split = folder, split
        self._tmp = folder / f".{split}.{os.getpid()}.{threading.get_ident()}.tmp"
        self._file = open(self._tmp, "wb")  # noqa: SIM115 - closed by build/abort
        self._hash = hashlib.sha256()

    def add_json(self, task_id: str, data: bytes) -> None:
        """Append one task's id and JSON bytes (trusted to match); written out by the chunk."""
        super().add_json(task_id, data)
        if len(self._data) >= CHUNK:
            self._flush()

    def _flush(self) -> None:
        self._write(bytes(self._data))
        self._data = bytearray()

    def _write(self, data: bytes) -> None:
        self._hash.update(data)
        self._file.write(data)

    def build(self) -> TaskFile:
        """Close the file, name it by its digest and return where it is."""
        try:
            self._flush()
            self._write(bytes(self._ids))
            for ends in (self._id_ends, self._data_ends):
                self._write(_little(ends).tobytes())
            self._write(_FOOTER.pack(MAGIC, len(self), len(self._ids), self._size, 0))
            self._file.close()
            digest = self._hash.hexdigest()
            final = self.folder / f"{self.split}-{digest[:16]}.tasks"
            os.replace(self._tmp, final)
        except BaseException:
            self.abort()
            raise
        count = len(self)
        self._ids, self._id_ends, self._data_ends = bytearray(), array("q"), array("q")
        return TaskFile(str(final), digest, count)

    def abort(self) -> None:
        """Drop the temporary file (a failed load)."""
        self._file.close()
        self._tmp.unlink(missing_ok=True)


def _little(values: array) -> array:
    if sys.byteorder == "little":
        return values
    swapped = array("q", values)
    swapped.byteswap()
    return swapped


_CACHE: OrderedDict[tuple[str, str], TaskTable] = OrderedDict()
_HELD: weakref.WeakValueDictionary[tuple[str, str], TaskTable] = weakref.WeakValueDictionary()
_LOCK = threading.Lock()


def load(ref: TaskFile, keep: bool = True) -> TaskTable:
    """The table of ``ref``'s file, read once per process while held; with ``keep`` the last
    :data:`CACHED` outlive their jobs."""
    key = (ref.path, ref.sha256)
    with _LOCK:
        table = _HELD.get(key)
    if table is None:
        table = read(ref)
    with _LOCK:
        _HELD[key] = table
        if keep:
            _CACHE[key] = table
            _CACHE.move_to_end(key)
            while len(_CACHE) > CACHED:
                _CACHE.popitem(last=False)
    return table


def read(ref: TaskFile) -> TaskTable:
    """The table of ``ref``'s file, read now; EngineError when its sha256 differs."""
    where = f"task file {ref.path}"
    try:
        with open(ref.path, "rb") as f:
            blob = f.read()
    except OSError as exc:
        raise EngineError(f"{where}: cannot be read ({exc.strerror or exc}); the evaluation "
                          "cannot run the tasks it was started with") from None
    digest = hashlib.sha256(blob).hexdigest()
    if digest != ref.sha256:
        raise EngineError(f"{where}: sha256 {digest[:16]} is not the {ref.sha256[:16]} the "
                          "evaluation wrote (the file was edited, truncated or swapped); "
                          "refusing to run its tasks")
    try:  # the digest matched: the structure is the driver's own
        magic, n, n_ids, n_data, _ = _FOOTER.unpack_from(blob, len(blob) - _FOOTER.size)
        if magic != MAGIC or n != ref.count:
            raise ValueError("not a task file of this job")
        ids = blob[n_data:n_data + n_ids]
        offsets = n_data + n_ids
        id_ends = _little(array("q", blob[offsets:offsets + 8 * n]))  # swapped back if big
        data_ends = _little(array("q", blob[offsets + 8 * n:offsets + 16 * n]))
        data = blob[:n_data]
        del blob
        return TaskTable(ids, id_ends, data, data_ends)
    except (struct.error, ValueError) as exc:
        raise EngineError(f"{where}: not a capevolve task file ({exc})") from None


def resolve(tasks: Mapping[str, Task] | TaskFile, keep: bool = True) -> Mapping[str, Task]:
    """A job's tasks by id (a :class:`TaskFile` is loaded and checked)."""
    return load(tasks, keep) if isinstance(tasks, TaskFile) else tasks


def without_targets(tasks: Mapping[str, Task] | TaskFile, folder: Path, split: str
                    ) -> Mapping[str, Task] | TaskFile:
    """The tasks with every ``target`` None: what workers get, so candidate code never sees it."""
    if not isinstance(tasks, TaskFile):
        return TaskTable.of(t.model_copy(update={"target": None}) for t in tasks.values())
    writer = TaskFileWriter(folder, f"{split}.blind")
    try:
        for task in read(tasks).values():
            writer.add(task.model_copy(update={"target": None}))
    except BaseException:
        writer.abort()
        raise
    return writer.build()
