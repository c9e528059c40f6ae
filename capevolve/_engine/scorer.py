"""ScorerCore: turns outcomes into rows by calling ``score`` where no candidate code is loaded."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from capevolve._engine.contain import UserExit, contained, describe
from capevolve._engine.contract import SCRATCH_PREFIX, Outcome, RowBatch, ScoreJob
from capevolve._engine.eager import gather_eager
from capevolve._engine.rows import parse_rollout, reported_error, row_batch, to_json_text
from capevolve._project import taskfile
from capevolve._project.calls import call_sync
from capevolve._project.loader import load_adapter
from capevolve.adapter import Rollout, Score, Task
from capevolve.errors import EngineError
from capevolve.kinds import ErrorKind
from capevolve.models import Meter, judging


def _module_file(module: Any) -> str | None:
    path = getattr(module, "__file__", None)
    if not isinstance(path, str):
        spec = getattr(module, "__spec__", None)
        path = getattr(spec, "origin", None)
    return path if isinstance(path, str) else None


_PATHS: dict[str, str | None] = {}
"""Resolved file per module name seen; only new names are resolved."""
_HITS: dict[tuple[str, ...], tuple[set[str], dict[str, str]]] = {}


def tainted_modules(untrusted_roots: tuple[str, ...] | list[str]) -> list[tuple[str, str]]:
    """``(name, file)`` of loaded modules from an untrusted root or a worker scratch dir."""
    roots = tuple(os.path.realpath(r) for r in untrusted_roots)
    prefixes = tuple(r.rstrip(os.sep) + os.sep for r in roots)
    prefixes += (os.path.join(os.path.realpath(tempfile.gettempdir()), SCRATCH_PREFIX),)
    modules = sys.modules
    for name in modules.keys() - _PATHS.keys():
        file = _module_file(modules.get(name))
        _PATHS[name] = None if not file or file.startswith("<") else os.path.realpath(file)
    checked, hits = _HITS.setdefault(prefixes, (set(), {}))
    for name in _PATHS.keys() - checked:
        checked.add(name)
        path = _PATHS[name]
        if path is not None and (path.startswith(prefixes) or path in roots):
            hits[name] = path
    return sorted((name, path) for name, path in hits.items() if name in modules)


def refuse_if_tainted(job: ScoreJob) -> None:
    """Raise EngineError if candidate code is loaded in this process."""
    found = tainted_modules(job.untrusted_roots)
    if found:
        name, file = found[0]
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise EngineError(f"eval {job.eval_id}: refusing to score: candidate module {name!r} "
                          f"from {file} is loaded in the scorer process{more}")


class ScorerCore:
    """Scores outcomes with the project's adapter; one per scorer process."""

    def __init__(self, project_root: str, adapter_spec: str, scorer_id: str = "scorer",
                 keep_tasks: bool = True) -> None:
        self.adapter = load_adapter(Path(project_root), adapter_spec)
        self.scorer_id = scorer_id
        self.keep_tasks = keep_tasks  # keep recent task tables once their jobs are gone
        self.jobs: dict[str, ScoreJob] = {}
        self._inputs: dict[str, dict[str, str | None]] = {}  # per eval: task id -> JSON
        self._sync = not inspect.iscoroutinefunction(self.adapter.score)
        self._score_fn = contained(self.adapter.score, "score")

    def prepare(self, job: ScoreJob) -> None:
        """Keep ``job`` by eval id, tasks loaded; EngineError on a digest mismatch."""
        self.jobs[job.eval_id] = dataclasses.replace(
            job, tasks=taskfile.resolve(job.tasks, self.keep_tasks))
        self._inputs[job.eval_id] = {}

    async def score(self, eval_id: str, items: list[tuple[Outcome, int]]) -> RowBatch:
        """One row per ``(outcome, trusted seed)``, in order; EngineError when tainted before
        or after scoring."""
        job = self.jobs.get(eval_id)
        if job is None:
            raise KeyError(f"job {eval_id} not prepared on {self.scorer_id}")
        refuse_if_tainted(job)
        plans = [self._plan(job, raw, seed) for raw, seed in items]
        wanted = {i: (plan[0], plan[4], Meter())  # each row's judge calls
                  for i, plan in enumerate(plans) if plan[5] is None}
        verdicts = dict(zip(wanted, await self._score_all(list(wanted.values())), strict=True))
        refuse_if_tainted(job)  # a score call that imported candidate code voids the batch
        rows, inputs = [], self._inputs[job.eval_id]
        for i, (task, trial, seed, raw, rollout, err) in enumerate(plans):
            score = judge = None
            if err is None:
                verdict, meter = verdicts[i], wanted[i][2]
                err = None if isinstance(verdict, Score) else (verdict, ErrorKind.SCORE)
                score = verdict if isinstance(verdict, Score) else None
                judge = meter if meter.counts["attempts"] else None
            error, kind = err or (None, None)
            rows.append((task.id, trial, seed, inputs[task.id], raw, rollout, score, error, kind,
                         judge))
        return row_batch(job, rows, time.time())

    def _plan(self, job: ScoreJob, raw: Any, seed: int):
        """``(task, trial, seed, raw, rollout, error)``; error is ``(text, kind)`` or None."""
        task: Task = job.tasks[raw["task_id"]]  # type: ignore[index]  # loaded by prepare
        inputs = self._inputs[job.eval_id]
        if task.id not in inputs:
            inputs[task.id] = to_json_text(task.input)
        try:
            rollout, problem = parse_rollout(raw)
        except ValueError as exc:
            return task, raw["trial"], seed, raw, None, (
                f"worker sent a malformed rollout: {exc}", ErrorKind.EXCEPTION)
        error = reported_error(raw)
        if problem is not None:  # a field of the rollout is bad: its own kind, named
            earlier = f"; the unit's own error: {error[0]}" if error else ""
            error = (problem + earlier, ErrorKind.INVALID_VALUE)
        if error is None and rollout is None:
            error = ("worker reported neither a rollout nor an error", ErrorKind.EXCEPTION)
        return task, raw["trial"], seed, raw, rollout, error

    async def _score_all(self, pairs: list[tuple[Task, Rollout, Meter]]) -> list[Score | str]:
        if not pairs:
            return []
        if self._sync:
            return await asyncio.to_thread(lambda: [self._score_one(t, r, m)
                                                    for t, r, m in pairs])
        return await gather_eager([self._score_async(t, r, m) for t, r, m in pairs])

    def _score_one(self, task: Task, rollout: Rollout, meter: Meter) -> Score | str:
        try:
            with judging(meter):
                return _as_score(call_sync(self._score_fn, task, rollout))
        except Exception as exc:  # noqa: BLE001 - a scorer bug or sys.exit() is an error row
            return str(exc) if isinstance(exc, UserExit) else f"score: {describe(exc)}"

    async def _score_async(self, task: Task, rollout: Rollout, meter: Meter) -> Score | str:
        try:
            with judging(meter):
                return _as_score(await self._score_fn(task, rollout))
        except Exception as exc:  # noqa: BLE001 - a scorer bug or sys.exit() is an error row
            return str(exc) if isinstance(exc, UserExit) else f"score: {describe(exc)}"


def _as_score(value: Any) -> Score:
    if isinstance(value, Score):
        return value
    try:
        return Score.model_validate(value)
    except ValidationError as exc:
        raise ValueError(f"returned an invalid Score: {exc.errors()[0]['msg']}") from None
