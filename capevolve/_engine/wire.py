"""JSON forms of what crosses a worker pipe; no pickle, so a worker's reply cannot run code."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

import pydantic_core

from capevolve._engine.contract import EvalJob, Job, TaskTable
from capevolve._engine.plan import WorkUnit
from capevolve._project.taskfile import TaskFile
from capevolve._project.tasktable import TaskTableBuilder, as_table
from capevolve.adapter import Task

MAX_LINE = 1 << 30
"""Largest message line (a job carries the candidate's files)."""
_PLAIN = [f.name for f in fields(Job) if f.name not in ("tasks", "untrusted_roots")]
"""The job fields sent as they are."""


def job_to_wire(job: EvalJob) -> dict[str, Any]:
    """An EvalJob as JSON data (file bytes as base64)."""
    files = {rel: base64.b64encode(data).decode("ascii")
             for rel, data in job.candidate_files.items()}
    return {**{name: getattr(job, name) for name in _PLAIN}, "candidate_files": files,
            "tasks": _tasks_to_wire(job.tasks), "untrusted_roots": list(job.untrusted_roots)}


def job_from_wire(data: dict[str, Any]) -> EvalJob:
    """The EvalJob of :func:`job_to_wire`."""
    files = {rel: base64.b64decode(text) for rel, text in data["candidate_files"].items()}
    return EvalJob(**{name: data[name] for name in _PLAIN}, candidate_files=files,
                   tasks=_tasks_from_wire(data["tasks"]),
                   untrusted_roots=tuple(data["untrusted_roots"]))


def _tasks_to_wire(tasks: Mapping[str, Task] | TaskFile) -> dict[str, Any]:
    """A task file by path and digest; a table as its ids and newline-joined task JSON."""
    if isinstance(tasks, TaskFile):
        return {"file": tasks.path, "sha256": tasks.sha256, "count": tasks.count}
    table = as_table(tasks)
    return {"ids": list(table), "json_lines": table.json_lines()}


def _tasks_from_wire(tasks: dict[str, Any]) -> TaskTable | TaskFile:
    """The tasks of :func:`_tasks_to_wire`."""
    if "file" in tasks:
        return TaskFile(str(tasks["file"]), str(tasks["sha256"]), int(tasks["count"]))
    ids, text = tasks["ids"], tasks["json_lines"]
    lines = text.split("\n") if ids else []
    if len(lines) != len(ids):
        raise ValueError(f"job: {len(ids)} task ids but {len(lines)} task lines")
    builder = TaskTableBuilder()
    for task_id, line in zip(ids, lines, strict=True):
        builder.add_json(str(task_id), line.encode())
    return builder.build()


def units_to_wire(units: list[WorkUnit]) -> list[list]:
    """Units as ``[task_id, trial, seed]`` lists (which Ray sends as msgpack, not pickle)."""
    return [[u.task_id, u.trial, u.seed] for u in units]


def units_from_wire(data: list[list]) -> list[WorkUnit]:
    """The units of :func:`units_to_wire`."""
    return [WorkUnit(str(t), int(k), int(s)) for t, k, s in data]


def encode(message: dict[str, Any]) -> bytes:
    """One message as a JSON line."""
    return dumps(message) + b"\n"


def dumps(value: Any) -> bytes:
    """Compact one-line JSON read back as ``json.dumps(default=repr)`` would be (NaN and
    Infinity kept); a lone surrogate falls back to ``json.dumps`` escapes."""
    try:
        return pydantic_core.to_json(value, fallback=repr, inf_nan_mode="constants")
    except pydantic_core.PydanticSerializationError:
        return json.dumps(value, separators=(",", ":"), default=repr).encode()
