"""The engine contract and the description of one evaluation's work."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol

from capevolve.adapter import Task
from capevolve.config import EngineConfig
from capevolve._engine.plan import WorkUnit


@dataclass(frozen=True)
class EvalJob:
    """Everything a worker needs to run the units of one evaluation.

    ``candidate_files`` carries the capability itself (``{relative path: bytes}``), so
    workers need no shared filesystem; ``tasks`` holds only the tasks of the split.
    """

    run_id: str
    eval_id: str
    split: str
    candidate_id: str
    candidate_hash: str
    candidate_files: dict[str, bytes]
    tasks: dict[str, Task]
    project_root: str
    adapter_spec: str


RowSink = Callable[[list[dict]], None]
"""Receives finished rows in batches, as they arrive; must persist them before returning."""

Limit = Callable[[int], tuple["int | None", "str | None"]]
"""Given the units dispatched so far, how many more may go out (None: no limit) and why
not; 0 stops the evaluation early (undispatched units are left out)."""


@dataclass
class EngineReport:
    """What an engine run did, beyond the rows it delivered."""

    delivered: int = 0
    stopped_early: bool = False
    stop_reason: str | None = None
    worker_restarts: int = 0
    workers: list[str] = field(default_factory=list)


class Engine(Protocol):
    """Runs work units and streams their rows to a sink.

    Contract: every unit handed to :meth:`run` yields exactly one row delivered to ``sink``
    unless ``limit`` allows no more (then undispatched units are left out and the report
    says so). Per-unit failures are rows with ``error`` set, never exceptions;
    :class:`~capevolve.errors.EngineError` means the engine itself failed.
    """

    def run(self, job: EvalJob, units: list[WorkUnit], sink: RowSink,
            limit: Limit | None = None) -> EngineReport:
        ...

    def close(self) -> None:
        ...


class WorkerLost(Exception):
    """A worker died or became unreachable; its unfinished units must be re-dispatched."""


class WorkerHandle(Protocol):
    """What the dispatcher needs from one worker (in-process core or Ray actor)."""

    name: str
    slots: int

    async def prepare(self, job: EvalJob) -> None: ...

    async def exchange(self, eval_id: str, units: list[WorkUnit],
                       max_wait_s: float) -> list[dict]:
        """Queue ``units`` on the worker and return the rows finished since the last call
        (waiting up to ``max_wait_s`` for the first). Raises WorkerLost if the worker died."""
        ...
