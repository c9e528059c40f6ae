"""JSON forms of what crosses a pipe to a worker process (no pickle: nothing a worker
sends back can make the driver import or run code; it is parsed as plain JSON)."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from capevolve._engine.contract import EvalJob, TaskTable
from capevolve._engine.plan import WorkUnit
from capevolve.adapter import Task

MAX_LINE = 1 << 30
"""Largest message line (a job carries the candidate's files)."""


def job_to_wire(job: EvalJob) -> dict[str, Any]:
    """An EvalJob as JSON data (file bytes as base64, tasks as their JSON form)."""
    return {
        "run_id": job.run_id, "eval_id": job.eval_id, "split": job.split,
        "candidate_id": job.candidate_id, "candidate_hash": job.candidate_hash,
        "candidate_files": {rel: base64.b64encode(data).decode("ascii")
                            for rel, data in job.candidate_files.items()},
        "tasks": _tasks_to_wire(job.tasks),
        "project_root": job.project_root, "adapter_spec": job.adapter_spec,
        "untrusted_roots": list(job.untrusted_roots), "schema_version": job.schema_version,
    }


def _tasks_to_wire(tasks: Mapping[str, Task]) -> dict[str, Any]:
    if isinstance(tasks, TaskTable):  # already JSON: no object per task is built
        return {tid: json.loads(data) for tid, data in tasks.encoded().items()}
    return {tid: task.model_dump(mode="json") for tid, task in tasks.items()}


def job_from_wire(data: dict[str, Any]) -> EvalJob:
    """The EvalJob of :func:`job_to_wire`."""
    return EvalJob(
        run_id=data["run_id"], eval_id=data["eval_id"], split=data["split"],
        candidate_id=data["candidate_id"], candidate_hash=data["candidate_hash"],
        candidate_files={rel: base64.b64decode(text)
                         for rel, text in data["candidate_files"].items()},
        tasks={tid: Task.model_validate(task) for tid, task in data["tasks"].items()},
        project_root=data["project_root"], adapter_spec=data["adapter_spec"],
        untrusted_roots=tuple(data["untrusted_roots"]), schema_version=data["schema_version"],
    )


def units_to_wire(units: list[WorkUnit]) -> list[list]:
    """Units as ``[task_id, trial, seed]`` triples."""
    return [[u.task_id, u.trial, u.seed] for u in units]


def units_from_wire(data: list[list]) -> list[WorkUnit]:
    """The units of :func:`units_to_wire`."""
    return [WorkUnit(str(t), int(k), int(s)) for t, k, s in data]


def encode(message: dict[str, Any]) -> bytes:
    """One message as a JSON line."""
    return json.dumps(message, separators=(",", ":"), default=repr).encode() + b"\n"
