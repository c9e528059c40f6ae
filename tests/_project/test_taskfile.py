"""The split's task file: streamed by the driver, read back only when its sha256 is the one
the driver computed; anything else is one EngineError naming the file."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from capevolve._project import taskfile
from capevolve._project.taskfile import TaskFile, TaskFileWriter
from capevolve._project.tasks import load_split_tasks
from capevolve._project.tasktable import TaskTable
from capevolve.adapter import Task
from capevolve.errors import EngineError


def _tasks(n: int, start: int = 0) -> list[Task]:
    return [Task(id=f"t{i:05d}", input={"q": i, "text": "é" * (i % 3)}, target=i % 2,
                 metadata={"cluster": i % 4}) for i in range(start, start + n)]


def _write(folder: Path, split: str, tasks: list[Task]) -> TaskFile:
    writer = TaskFileWriter(folder, split)
    for task in tasks:
        writer.add(task)
    return writer.build()


class _Adapter:
    def __init__(self, tasks: list[Task]) -> None:
        self._tasks = tasks

    def tasks(self):
        return iter(self._tasks)


def test_a_task_file_reads_back_the_table_it_was_written_from(tmp_path):
    """Same ids, same JSON, same order as the in-memory table; named by split and digest;
    no temporary file left behind."""
    tasks = _tasks(3000)
    ref = _write(tmp_path / "tasks", "val", tasks)
    assert ref.count == len(ref) == 3000
    assert Path(ref.path).name == f"val-{ref.sha256[:16]}.tasks"
    assert [p.name for p in (tmp_path / "tasks").iterdir()] == [Path(ref.path).name]
    table = taskfile.read(ref)
    assert isinstance(table, TaskTable)
    assert table == TaskTable.of(tasks)
    assert table["t02999"] == tasks[-1]


def test_the_same_tasks_give_the_same_file_and_other_tasks_another(tmp_path):
    """Content-addressed: two writes of the same split share one file."""
    a = _write(tmp_path, "val", _tasks(10))
    b = _write(tmp_path, "val", _tasks(10))
    c = _write(tmp_path, "val", _tasks(10, start=1))
    assert a == b and a.path != c.path
    assert len(list(tmp_path.glob("*.tasks"))) == 2


def test_load_split_tasks_streams_into_a_file_and_keeps_the_rest(tmp_path):
    """Into a writer, the split's tasks become a file (no table in the driver); the
    exclusions, cluster keys and missing ids are those of the in-memory path."""
    tasks = _tasks(40)
    split = [t.id for t in tasks[::2]] + ["gone"]
    in_memory = load_split_tasks(_Adapter(tasks), split)
    streamed = load_split_tasks(_Adapter(tasks), split, into=TaskFileWriter(tmp_path, "val"))
    assert isinstance(streamed.table, TaskFile)
    assert taskfile.read(streamed.table) == in_memory.table
    assert (streamed.clusters, streamed.missing) == (in_memory.clusters, ["gone"])


def test_a_failed_load_leaves_no_file(tmp_path):
    """An adapter raising halfway leaves no task file and no temporary file."""
    class Broken:
        def tasks(self):
            yield from _tasks(5)
            raise RuntimeError("upstream gone")

    with pytest.raises(Exception, match="upstream gone"):
        load_split_tasks(Broken(), ["t00001"], into=TaskFileWriter(tmp_path, "val"))
    assert list(tmp_path.iterdir()) == []


def _flip_one_byte(path: Path, old: bytes, new: bytes) -> None:
    blob = Path(path).read_bytes()
    assert old in blob and len(old) == len(new)
    Path(path).write_bytes(blob.replace(old, new, 1))


@pytest.mark.parametrize("attack", ["edited", "truncated", "swapped", "missing", "emptied"])
def test_a_task_file_not_as_the_driver_wrote_it_is_refused_naming_it(tmp_path, attack):
    """A hand-edited target, a cut file, another split's file copied over it, a deleted
    or emptied file: one EngineError naming the file, never a table."""
    ref = _write(tmp_path, "val", _tasks(50))
    other = _write(tmp_path, "train", _tasks(50, start=50))
    if attack == "edited":  # a gold answer changed, same length
        _flip_one_byte(Path(ref.path), b'"target":1', b'"target":0')
    elif attack == "truncated":
        Path(ref.path).write_bytes(Path(ref.path).read_bytes()[:-7])
    elif attack == "swapped":
        shutil.copy(other.path, ref.path)
    elif attack == "missing":
        Path(ref.path).unlink()
    else:
        Path(ref.path).write_bytes(b"")
    with pytest.raises(EngineError) as caught:
        taskfile.read(ref)
    message = str(caught.value)
    assert ref.path in message and "\n" not in message
    assert ("cannot be read" if attack == "missing" else "sha256") in message


def test_a_forged_file_with_its_own_valid_structure_is_refused(tmp_path):
    """A well-formed task file with other tasks written at the job's path (what candidate
    code able to reach the disk would plant) is refused: the digest is the driver's."""
    ref = _write(tmp_path / "a", "val", _tasks(20))
    forged = _write(tmp_path / "b", "val", [t.model_copy(update={"target": 1})
                                            for t in _tasks(20)])
    shutil.copy(forged.path, ref.path)
    with pytest.raises(EngineError, match="edited, truncated or swapped"):
        taskfile.load(ref)


def test_load_keeps_a_verified_table_per_process(tmp_path):
    """``load`` reads a file once (a scorer serving many evaluations of one split) and
    keeps at most CACHED tables."""
    refs = [_write(tmp_path, f"s{i}", _tasks(5, start=10 * i)) for i in range(3)]
    first = taskfile.load(refs[0])
    assert taskfile.load(refs[0]) is first
    for ref in refs[1:]:
        taskfile.load(ref)
    assert len(taskfile._CACHE) <= taskfile.CACHED
    assert taskfile.resolve(refs[0]) == first
    table = TaskTable.of(_tasks(2))
    assert taskfile.resolve(table) is table


def test_without_keep_a_table_lives_only_as_long_as_its_holder(tmp_path):
    """The local engine's driver keeps no table once its evaluation is done."""
    import gc

    ref = _write(tmp_path, "val", _tasks(5, start=500))
    held = taskfile.load(ref, keep=False)
    assert taskfile.load(ref, keep=False) is held  # read once while held
    assert (ref.path, ref.sha256) not in taskfile._CACHE
    del held
    gc.collect()
    assert (ref.path, ref.sha256) not in taskfile._HELD
