"""The seams between the driver, workers (which run candidate code) and scorers (which never
do). Worker replies are untrusted; a scorer builds each row from the driver's job and unit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Protocol

from capevolve._engine.plan import WorkUnit
from capevolve._project.taskfile import TaskFile
from capevolve._project.tasktable import TaskTable  # noqa: F401 - the job's task table
from capevolve.adapter import Task

SCRATCH_PREFIX = "capevolve-worker-"
"""Prefix of worker scratch dirs; a scorer refuses to score with a module from one loaded."""


@dataclass(frozen=True)
class SandboxSpec:
    """How a job's workers are sandboxed (:mod:`capevolve._engine.sandbox`)."""

    network: str = "none"
    """none (a loopback of its own) or host."""
    reads: tuple[str, ...] = ()
    """Project-relative globs of data files run_target reads."""
    package: str | None = None
    """Directory of the adapter class's package (outside capevolve)."""
    package_reads: tuple[str, ...] = ()
    """``package``-relative paths of data files run_target reads."""
    sources: tuple[str, ...] = ()
    """Helper modules and packages the adapter imports from elsewhere."""
    protected: tuple[str, ...] = ()
    """Globs hidden wherever they match (protected_paths)."""
    hidden: tuple[str, ...] = ()
    """Absolute paths hidden inside visible trees."""
    per_call: bool = False
    """Run each run_target call in its own child process."""


@dataclass(frozen=True)
class Job:
    """What the driver, its workers and its scorers all know of one evaluation."""

    run_id: str
    eval_id: str
    split: str
    candidate_id: str
    candidate_hash: str
    tasks: Mapping[str, Task] | TaskFile
    project_root: str
    adapter_spec: str
    untrusted_roots: tuple[str, ...] = ()
    schema_version: int = 1
    agent_model: str | None = None
    """Agent model settings JSON, recorded on every row (pinned: each unit's model scope)."""


@dataclass(frozen=True)
class ScoreJob(Job):
    """A scorer's view of a job: no candidate files."""


@dataclass(frozen=True, kw_only=True)
class EvalJob(Job):
    """What a worker needs to run one evaluation's units."""

    candidate_files: dict[str, bytes]
    sandbox: SandboxSpec | None = None
    """None: no sandbox (``engine.isolation: none``)."""
    score_tasks: Mapping[str, Task] | TaskFile | None = None
    """The scorer's tasks when ``tasks`` lack targets; None: ``tasks``."""

    def score_job(self) -> ScoreJob:
        """This job without the candidate's files."""
        shared = {f.name: getattr(self, f.name) for f in fields(Job)}
        return ScoreJob(**{**shared, "tasks": self.tasks if self.score_tasks is None
                           else self.score_tasks})


Outcome = dict[str, Any]
"""A worker's untrusted, plain-JSON report of one unit (:func:`capevolve._engine.rows.outcome`)."""

@dataclass(slots=True, eq=False)
class KeyedOutcomes:
    """Untrusted unit ``keys`` for the dispatcher and an opaque ``payload`` only a scorer opens."""

    keys: list
    payload: Any


@dataclass(slots=True, eq=False)
class Picked:
    """Accepted outcomes: ``[payload index, task_id, trial, trusted seed]`` per unit."""

    payload: Any
    picks: list[list[Any]]

    def __len__(self) -> int:
        return len(self.picks)


def picked_items(outcomes: Any, picks: list[list[Any]]) -> list[tuple[Outcome, int]]:
    """``(outcome, trusted seed)`` per pick; a mismatched outcome becomes an error."""
    items: list[tuple[Outcome, int]] = []
    listed = outcomes if isinstance(outcomes, list) else []
    for index, task_id, trial, seed in picks:
        raw = listed[index] if 0 <= index < len(listed) else None
        if not (isinstance(raw, dict) and raw.get("task_id") == task_id
                and raw.get("trial") == trial):
            raw = {"task_id": task_id, "trial": trial, "attempts": 0,
                   "error": "worker's outcome does not match the unit it reported",
                   "error_kind": "exception"}
        items.append((raw, seed))
    return items


@dataclass(slots=True, eq=False)
class RowBatch:
    """Rows as columns: a list of ``n`` values, or one value all share."""

    columns: dict[str, Any]
    n: int

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(self.n)[index]]
        if not -self.n <= index < self.n:
            raise IndexError(index)
        return {name: value[index] if isinstance(value, list) else value
                for name, value in self.columns.items()}

    def __iter__(self):
        return (self[i] for i in range(self.n))


RowSink = Callable[[Any], "int | None"]
"""Makes row batches durable within a bounded window and returns how many are not yet (None:
all are; ``[]`` polls); raising stops the evaluation."""


class DispatchLedger(Protocol):
    """Where units are journalled before they go out."""

    async def dispatched(self, units: list[WorkUnit]) -> None:
        """Return once ``units`` are durable; raise if they cannot be."""
        ...

Limit = Callable[[int], tuple["int | None", "str | None"]]
"""Dispatched so far -> (more allowed or None, why); 0 stops early."""


@dataclass
class EngineReport:
    """What an engine run did besides delivering rows."""

    delivered: int = 0
    stopped_early: bool = False
    stop_reason: str | None = None
    worker_restarts: int = 0
    workers: list[str] = field(default_factory=list)


class Engine(Protocol):
    """Streams one row per unit to a sink unless ``limit`` stops it; a ``ledger`` records units
    before dispatch. Unit failures are error rows; EngineError is an engine failure."""

    def run(self, job: EvalJob, units: Sequence[WorkUnit], sink: RowSink,
            limit: Limit | None = None, ledger: DispatchLedger | None = None) -> EngineReport:
        ...

    def close(self) -> None:
        ...


class WorkerLost(Exception):
    """A worker or scorer died or is unreachable; its work is re-sent."""


class WorkerHandle(Protocol):
    """A worker as the dispatcher sees it."""

    name: str
    slots: int
    """Units it may run at once; may change between exchanges."""

    async def prepare(self, job: EvalJob) -> None:
        """Load the job, restarting the worker if it died."""
        ...

    async def exchange(self, eval_id: str, units: list[WorkUnit],
                       max_wait_s: float) -> list[Outcome] | KeyedOutcomes:
        """Queue ``units``; return outcomes finished since the last call, waiting up to
        ``max_wait_s``. Raises WorkerLost."""
        ...


class ScorerHandle(Protocol):
    """A scorer as the dispatcher sees it."""

    name: str

    async def prepare(self, job: ScoreJob) -> None:
        """Load the job, restarting the scorer if it died."""
        ...

    async def score(self, eval_id: str, items: list[tuple[Outcome, int]] | Picked
                    ) -> list[dict] | RowBatch:
        """One row per item. Raises WorkerLost if the scorer died, EngineError if it refuses."""
        ...
