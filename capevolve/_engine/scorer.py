"""ScorerCore: turns workers' outcomes into rows by calling ``score`` where no candidate
code was ever imported.

A scorer loads only the project's adapter (never a candidate's files). Before and after
every batch it checks ``sys.modules``: a module whose file lies in a candidate snapshot
(``ScoreJob.untrusted_roots``) or in a worker's scratch directory means candidate code
reached this process, and the scorer refuses (:class:`~capevolve.errors.EngineError`,
naming the module and file), so no row it would produce counts. Rows are built by
:func:`capevolve._engine.rows` from the scorer's own job: a worker cannot set a reward.

Throughput: a batch of a synchronous ``score`` runs as one call in one thread (one hop
per batch, not per rollout); an ``async def score`` is awaited per item, concurrently.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from capevolve._engine.contract import SCRATCH_PREFIX, Outcome, ScoreJob
from capevolve._engine.rows import (
    base_row,
    fill_outcome,
    measurements,
    parse_rollout,
    reported_error,
)
from capevolve._project.calls import call_sync
from capevolve._project.loader import load_adapter
from capevolve.adapter import Rollout, Score, Task
from capevolve.errors import EngineError
from capevolve.kinds import ErrorKind


def _module_file(module: Any) -> str | None:
    path = getattr(module, "__file__", None)
    if not isinstance(path, str):
        spec = getattr(module, "__spec__", None)
        path = getattr(spec, "origin", None)
    return path if isinstance(path, str) else None


_SEEN: dict[str, tuple[int, str | None]] = {}
"""Per module name: ``(id of the module object, its resolved file)``. Resolving every
file of ``sys.modules`` costs ~0.2 s; only modules new since the last scan are resolved."""


def _resolved_files() -> list[tuple[str, str]]:
    found = []
    for name, module in list(sys.modules.items()):
        seen = _SEEN.get(name)
        if seen is None or seen[0] != id(module):
            file = _module_file(module)
            path = None if not file or file.startswith("<") else os.path.realpath(file)
            seen = _SEEN[name] = (id(module), path)
        if seen[1] is not None:
            found.append((name, seen[1]))
    return found


def tainted_modules(untrusted_roots: tuple[str, ...] | list[str]) -> list[tuple[str, str]]:
    """``(module name, file)`` of every loaded module whose file lies in an untrusted root
    or in a worker scratch directory (``<tempdir>/capevolve-worker-*``)."""
    roots = [os.path.realpath(r) for r in untrusted_roots]
    prefixes = tuple(r.rstrip(os.sep) + os.sep for r in roots)
    prefixes += (os.path.join(os.path.realpath(tempfile.gettempdir()), SCRATCH_PREFIX),)
    return sorted((name, path) for name, path in _resolved_files()
                  if path.startswith(prefixes) or path in roots)


def refuse_if_tainted(job: ScoreJob) -> None:
    """Raise EngineError if candidate code is loaded in this process (see the module doc)."""
    found = tainted_modules(job.untrusted_roots)
    if found:
        name, file = found[0]
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise EngineError(f"eval {job.eval_id}: refusing to score: candidate module {name!r} "
                          f"from {file} is loaded in the scorer process{more}")


class ScorerCore:
    """Scores outcomes of evaluations with the project's adapter; one per scorer process."""

    def __init__(self, project_root: str, adapter_spec: str, scorer_id: str = "scorer") -> None:
        self.adapter = load_adapter(Path(project_root), adapter_spec)
        self.scorer_id = scorer_id
        self.jobs: dict[str, ScoreJob] = {}
        self._sync = not inspect.iscoroutinefunction(self.adapter.score)

    def prepare(self, job: ScoreJob) -> None:
        """Remember a job (replacing another job of the same eval id)."""
        self.jobs[job.eval_id] = job

    async def score(self, eval_id: str, items: list[tuple[Outcome, int]]) -> list[dict]:
        """One row per ``(outcome, trusted seed)``, in order; refuses when tainted."""
        job = self.jobs.get(eval_id)
        if job is None:
            raise KeyError(f"job {eval_id} not prepared on {self.scorer_id}")
        refuse_if_tainted(job)
        plans = [self._plan(job, raw, seed) for raw, seed in items]
        wanted = [(i, task, rollout) for i, (_, task, rollout, err) in enumerate(plans)
                  if err is None]
        verdicts = await self._score_all([(task, rollout) for _, task, rollout in wanted])
        results: dict[int, Score | str] = {
            i: v for (i, _, _), v in zip(wanted, verdicts, strict=True)}
        refuse_if_tainted(job)  # a score call that imported candidate code voids the batch
        rows = []
        for i, (row, _, rollout, err) in enumerate(plans):
            if err is None:
                verdict = results[i]
                err = None if isinstance(verdict, Score) else (verdict, ErrorKind.SCORE)
                score = verdict if isinstance(verdict, Score) else None
            else:
                score = None
            rows.append(fill_outcome(row, rollout, score, *(err or (None, None))))
        return rows

    def _plan(self, job: ScoreJob, raw: Any, seed: int):
        """``(row, task, rollout, error)`` for one outcome; error is ``(text, kind)``."""
        task: Task = job.tasks[raw["task_id"]]
        row = base_row(job, task, raw["trial"], seed)
        row.update(measurements(raw, time.time()))
        try:
            rollout = parse_rollout(raw)
        except ValueError as exc:
            return row, task, None, (f"worker sent a malformed rollout: {exc}",
                                     ErrorKind.EXCEPTION)
        error = reported_error(raw)
        if error is None and rollout is None:
            error = ("worker reported neither a rollout nor an error", ErrorKind.EXCEPTION)
        return row, task, rollout, error

    async def _score_all(self, pairs: list[tuple[Task, Rollout]]) -> list[Score | str]:
        if not pairs:
            return []
        if self._sync:
            return await asyncio.to_thread(lambda: [self._score_one(t, r) for t, r in pairs])
        return list(await asyncio.gather(*(self._score_async(t, r) for t, r in pairs)))

    def _score_one(self, task: Task, rollout: Rollout) -> Score | str:
        try:
            return _as_score(call_sync(self.adapter.score, task, rollout))
        except Exception as exc:  # noqa: BLE001 - a scorer bug is an error row
            return f"score: {_describe(exc)}"

    async def _score_async(self, task: Task, rollout: Rollout) -> Score | str:
        try:
            return _as_score(await self.adapter.score(task, rollout))
        except Exception as exc:  # noqa: BLE001 - a scorer bug is an error row
            return f"score: {_describe(exc)}"


def _as_score(value: Any) -> Score:
    if isinstance(value, Score):
        return value
    try:
        return Score.model_validate(value)
    except ValidationError as exc:
        raise ValueError(f"returned an invalid Score: {exc.errors()[0]['msg']}") from None


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
