"""The Ray driver ships a job's task file by its place and digest; an actor on a node
without the file asks for the table, which the driver reads, checks and puts in the
object store; a tampered file is then refused by the driver with one line naming it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from capevolve._engine.contract import EvalJob
from capevolve._project.taskfile import TaskFile, TaskFileWriter
from capevolve._project.tasktable import TaskTable
from capevolve.adapter import Task
from capevolve.errors import EngineError

pytestmark = pytest.mark.ray


class _Remote:
    """``actor.prepare.remote(job_ref, binding)`` of an actor on a node without the file:
    it answers NEED_TASKS while the job names a task file."""

    def __init__(self, ray) -> None:
        self.ray, self.jobs = ray, []

    def remote(self, ref, binding):
        from capevolve._engine.ray.actor import NEED_TASKS

        job = self.ray.get(ref)
        self.jobs.append(job)

        async def reply():
            return NEED_TASKS if isinstance(job.tasks, TaskFile) else "worker-1"
        return reply()


class _Handle:
    name = "actor-0"
    binding = None

    def __init__(self, ray) -> None:
        self.actor = type("A", (), {})()
        self.actor.prepare = _Remote(ray)


def _job(tmp_path: Path) -> tuple[EvalJob, list[Task]]:
    tasks = [Task(id=f"t{i}", input=i, target="ok") for i in range(30)]
    writer = TaskFileWriter(tmp_path, "val")
    for task in tasks:
        writer.add(task)
    job = EvalJob(run_id="r", eval_id="e", split="val", candidate_id="c", candidate_hash="h",
                  candidate_files={}, tasks=writer.build(), project_root=str(tmp_path),
                  adapter_spec="adapter.py:A")
    return job, tasks


def test_an_actor_without_the_file_is_sent_the_checked_table(tmp_path, ray_session):
    """First the small job (the file's place); after NEED_TASKS, the job with the table."""
    from capevolve._engine.ray import pool

    job, tasks = _job(tmp_path)
    handle = _Handle(ray_session)
    asyncio.run(pool._prepare(handle, job))
    first, second = handle.actor.prepare.jobs
    assert first.tasks == job.tasks  # a TaskFile: a few bytes in the object store
    assert isinstance(second.tasks, TaskTable) and second.tasks == TaskTable.of(tasks)


def test_a_tampered_file_is_refused_by_the_driver_before_it_is_shipped(tmp_path, ray_session):
    """The driver checks the file it would ship: an edited one is an EngineError naming
    it, and no table leaves the driver."""
    from capevolve._engine.ray import pool

    job, _ = _job(tmp_path)
    assert isinstance(job.tasks, TaskFile)
    path = Path(job.tasks.path)
    path.write_bytes(path.read_bytes().replace(b'"target":"ok"', b'"target":"no"', 1))
    handle = _Handle(ray_session)
    with pytest.raises(EngineError, match="sha256") as caught:
        asyncio.run(pool._prepare(handle, job))
    assert str(path) in str(caught.value)
    assert [type(j.tasks) for j in handle.actor.prepare.jobs] == [TaskFile]
