"""The engine contract: the description of one evaluation's work and the seams between the
driver, the workers (which run candidate code) and the scorers (which never do).

Everything a worker sends back is untrusted data (an :data:`Outcome`); a scorer rebuilds each
row from the driver's own :class:`ScoreJob` and unit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from capevolve._engine.plan import WorkUnit
from capevolve._project.taskfile import TaskFile
from capevolve._project.tasktable import TaskTable  # noqa: F401 - the job's task table
from capevolve.adapter import Task

SCRATCH_PREFIX = "capevolve-worker-"
"""Workers unpack candidates under ``<tempdir>/capevolve-worker-*``; scorers refuse to
score while a module loaded from such a directory is in their ``sys.modules``."""


@dataclass(frozen=True)
class SandboxSpec:
    """How the workers of a job are sandboxed (:mod:`capevolve._engine.sandbox`): what of the
    project run_target may read, what is hidden, the network."""

    network: str = "none"
    """none (a loopback of its own) or host."""
    reads: tuple[str, ...] = ()
    """Globs (relative to the project) of data files run_target reads."""
    package: str | None = None
    """The directory of the package the adapter class is defined in (outside capevolve)."""
    package_reads: tuple[str, ...] = ()
    """Paths (relative to ``package``) of data files run_target reads."""
    sources: tuple[str, ...] = ()
    """Python source the adapter imports from outside the project, the environment and
    ``package`` (a helper module beside the project): module files and package dirs."""
    protected: tuple[str, ...] = ()
    """Globs hidden wherever they match (the project's protected_paths)."""
    hidden: tuple[str, ...] = ()
    """Absolute paths hidden when inside a visible tree (the run dir, the key dir)."""
    per_call: bool = False
    """Also run each run_target call in a child of its own (``engine.isolation: process``)."""


@dataclass(frozen=True)
class ScoreJob:
    """What a scorer needs to turn an evaluation's outcomes into rows: no candidate files."""

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
    """The evaluation's agent model settings (JSON, :class:`capevolve.models.ModelSettings`),
    recorded on every row; None when the project declares no agent model."""


@dataclass(frozen=True)
class EvalJob:
    """Everything a worker needs to run the units of one evaluation."""

    run_id: str
    eval_id: str
    split: str
    candidate_id: str
    candidate_hash: str
    candidate_files: dict[str, bytes]
    tasks: Mapping[str, Task] | TaskFile
    project_root: str
    adapter_spec: str
    untrusted_roots: tuple[str, ...] = ()
    schema_version: int = 1
    sandbox: SandboxSpec | None = None
    """None: workers run without a sandbox (``engine.isolation: none``)."""
    score_tasks: Mapping[str, Task] | TaskFile | None = None
    """The tasks as the scorer gets them (targets included) when ``tasks``, which the
    workers get, had their targets removed; None: the same as ``tasks``."""
    agent_model: str | None = None
    """The pinned agent model settings as JSON (the run's, with the candidate's model.yaml
    applied): every worker opens each unit's model scope from it, never from its own
    process state."""

    def score_job(self) -> ScoreJob:
        """The scorer's view of this job (everything but the candidate's files)."""
        tasks = self.tasks if self.score_tasks is None else self.score_tasks
        return ScoreJob(run_id=self.run_id, eval_id=self.eval_id, split=self.split,
                        candidate_id=self.candidate_id, candidate_hash=self.candidate_hash,
                        tasks=tasks, project_root=self.project_root,
                        adapter_spec=self.adapter_spec, untrusted_roots=self.untrusted_roots,
                        schema_version=self.schema_version, agent_model=self.agent_model)


Outcome = dict[str, Any]
"""What a worker reports for one unit, as plain JSON-able data (never an object of a class
candidate code could define): ``task_id``, ``trial``, ``attempts``, ``latency_s``,
``started``, ``finished`` (POSIX seconds), ``worker_id``, ``node_id``, and either
``rollout`` (the Rollout as JSON text, to be scored) or ``error`` + ``error_kind``
(optionally with ``rollout`` for the columns). Untrusted: the scorer validates it."""

class KeyedOutcomes:
    """A worker's finished outcomes as the driver sees them when it need not read them: the unit
    key of each (``keys``, untrusted, checked by the dispatcher against the units the worker
    holds) and an opaque ``payload`` (the outcomes themselves, e.g. a Ray object reference) that
    only a scorer opens."""

    __slots__ = ("keys", "payload")

    def __init__(self, keys: list, payload: Any) -> None:
        self.keys, self.payload = keys, payload


class Picked:
    """The outcomes a dispatcher accepted from one :class:`KeyedOutcomes`: ``picks`` holds
    ``[index in the payload, task_id, trial, trusted seed]`` per unit (lists: they cross
    to a scorer as msgpack, where a tuple would be pickled)."""

    __slots__ = ("payload", "picks")

    def __init__(self, payload: Any, picks: list[list[Any]]) -> None:
        self.payload, self.picks = payload, picks

    def __len__(self) -> int:
        return len(self.picks)


def picked_items(outcomes: Any, picks: list[list[Any]]) -> list[tuple[Outcome, int]]:
    """``(outcome, trusted seed)`` per pick, for a scorer: the outcome at the pick's index
    when it carries the pick's key, else an error outcome of the picked unit."""
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


class RowBatch:
    """Finished rows as columns (what a scorer hands back): ``columns`` maps each rollout column
    to a list of ``n`` values, or to one value every row shares (the key columns of the job);
    ``started_at`` / ``finished_at`` are POSIX seconds."""

    __slots__ = ("columns", "n")

    def __init__(self, columns: dict[str, Any], n: int) -> None:
        self.columns, self.n = columns, n

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
"""Receives finished rows in batches (a list of row dicts or a :class:`RowBatch`), as they
arrive, and takes charge of them: they reach
the disk within the sink's small, bounded window (a journal fsynced in batches). It may
raise (a write that failed), which stops the evaluation. It returns how many rows handed
to it so far are not durable yet (None: every one is); the dispatcher counts them as in
flight, so a driver that falls behind the disk stops dispatching instead of piling up
finished rows a kill would lose. Called with ``[]`` to poll that count."""


class DispatchLedger(Protocol):
    """Where units are journalled before they go out (the spend of a run that may die)."""

    async def dispatched(self, units: list[WorkUnit]) -> None:
        """Return once ``units`` are durably recorded as handed out; the dispatcher sends
        them to a worker only after that. Raises when they cannot be recorded."""
        ...

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

    Every unit handed to :meth:`run` yields exactly one row unless ``limit`` allows no more
    (the report says so); with a ``ledger``, every unit is recorded there before it is
    dispatched. Per-unit failures are rows with ``error`` set; EngineError means the engine
    itself failed. Rewards come only from scorers that never imported candidate code.
    """

    def run(self, job: EvalJob, units: Sequence[WorkUnit], sink: RowSink,
            limit: Limit | None = None, ledger: DispatchLedger | None = None) -> EngineReport:
        ...

    def close(self) -> None:
        ...


class WorkerLost(Exception):
    """A worker or scorer died or became unreachable; its unfinished work is re-sent."""


class WorkerHandle(Protocol):
    """What the dispatcher needs from one worker (a subprocess or a Ray actor)."""

    name: str
    slots: int
    """How many of its units may execute at once; the dispatcher may change it between
    exchanges (an engine's shared in-flight budget) and each exchange carries it."""

    async def prepare(self, job: EvalJob) -> None:
        """Make the job known to the worker (restarting it if it died)."""
        ...

    async def exchange(self, eval_id: str, units: list[WorkUnit],
                       max_wait_s: float) -> list[Outcome] | KeyedOutcomes:
        """Queue ``units`` on the worker and return the outcomes finished since the last
        call (waiting up to ``max_wait_s`` for the first), or only their keys and a payload
        the scorer opens (:class:`KeyedOutcomes`). Raises WorkerLost if it died."""
        ...


class ScorerHandle(Protocol):
    """What the dispatcher needs from one scorer (in the driver, a process or an actor)."""

    name: str

    async def prepare(self, job: ScoreJob) -> None:
        """Make the job known to the scorer (restarting it if it died)."""
        ...

    async def score(self, eval_id: str, items: list[tuple[Outcome, int]] | Picked
                    ) -> list[dict] | RowBatch:
        """Rows for a batch of ``(outcome, trusted seed)`` (or of :class:`Picked` outcomes):
        one row per item. Raises WorkerLost if the scorer died, EngineError if it refuses
        to score."""
        ...
