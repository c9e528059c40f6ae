"""The Ray actors: rollout actors run candidate code, scorer actors never do."""

from __future__ import annotations

import asyncio
import dataclasses
import hmac
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ray

from capevolve._engine import sandbox
from capevolve._engine.collector import settle_worker_heap
from capevolve._engine.contract import EvalJob, Outcome, ScoreJob, picked_items
from capevolve._engine.plan import WorkUnit
from capevolve._engine.process import ProcessWorker
from capevolve._engine.ray.limiter import LimiterClient
from capevolve._engine.scorer import ScorerCore
from capevolve._engine.worker import WorkerCore
from capevolve._project.taskfile import TaskFile
from capevolve.errors import EngineError


@dataclass(frozen=True)
class Binding:
    """What binds an actor to a command; ``env`` is applied before the adapter loads."""

    project_root: str
    adapter_spec: str
    project_rel: str | None = None
    slots: int = 1
    timeout_s: float = 60.0
    retries: int = 0
    isolation: str = "none"
    limiter: Any = None
    env: dict[str, str] = field(default_factory=dict)
    token: str = ""
    """The claim token a warm actor requires."""


class _Actor:
    """An actor started bound to a project, or unbound and warm: then only a binding with its
    claim ``token`` binds it, and a job before one is refused."""

    kind = where = ""

    def __init__(self, binding: Binding | None = None, token: str = "") -> None:
        self.core: Any = None
        self.id = ""  # the worker or scorer id
        self.token = token
        if binding is not None:
            self._bind(binding)

    def _bind(self, b: Binding) -> None:
        if self.token and not hmac.compare_digest(self.token, b.token):
            raise EngineError("this warm actor was not claimed with that token; refusing to bind")
        os.environ.update(b.env)
        self.id = self._load(b, resolve_project_root(b.project_root, b.project_rel))
        settle_worker_heap()  # the project is loaded: never rescanned by the collector

    def _load(self, b: Binding, root: str) -> str:
        raise NotImplementedError

    async def bind(self, binding: Binding) -> str:
        """Load the project; idempotent. Returns the worker or scorer id."""
        if self.core is None:
            self._bind(binding)
        return self.id

    def _ready(self, job: EvalJob | ScoreJob, binding: Binding | None) -> bool:
        """Bind first if unbound; False when this node lacks ``job``'s task file."""
        if self.core is None:
            if binding is None:
                raise EngineError(f"a warm {self.kind} actor was given a job before its project")
            self._bind(binding)
        return not isinstance(job.tasks, TaskFile) or os.path.exists(job.tasks.path)

    def _core(self, eval_id: str) -> Any:
        if self.core is None:  # restarted unbound: the driver's prepare binds it again
            raise KeyError(f"job {eval_id} not prepared on this {self.where}")
        return self.core

    async def pid(self) -> int:
        return os.getpid()


@ray.remote(max_restarts=-1, max_task_retries=0)
class RolloutActor(_Actor):
    """A WorkerCore behind async actor methods."""

    kind, where = "rollout", "worker"

    def __init__(self, binding: Binding | None = None, token: str = "") -> None:
        self.received: dict[str, EvalJob] = {}  # each eval id's job as the driver sent it
        self.binding: Binding | None = None
        self.box: ProcessWorker | None = None  # the sandboxed worker of the current candidate
        self.boxed: set[str] = set()  # eval ids relayed to it
        self.relay = asyncio.Lock()  # one request at a time on its channel
        super().__init__(binding, token)
        if binding is None:  # warm: try bwrap now, not when a command's first sandboxed job comes
            sandbox.unavailable()

    def _load(self, b: Binding, root: str) -> str:
        if "PATH" in b.env:  # the warm check may have looked for bwrap elsewhere
            sandbox.unavailable.cache_clear()
        context = ray.get_runtime_context()
        actor_id = context.get_actor_id() or f"pid{os.getpid()}"
        self.core = WorkerCore(root, b.adapter_spec, b.slots, b.timeout_s, b.retries,
                               worker_id=f"{actor_id[:12]}-{os.getpid()}",
                               node_id=context.get_node_id(), isolation=b.isolation)
        if b.limiter is not None:  # a restarted actor first returns what its old self held
            b.limiter.forget.remote(actor_id)
            self.core.limiter = LimiterClient(b.limiter, actor_id)
        self.binding = b
        return self.core.worker_id

    async def prepare(self, job: EvalJob, binding: Binding | None = None) -> str:
        """Take ``job``; return the worker id, or :data:`NEED_TASKS` without its task file."""
        if not self._ready(job, binding):
            return NEED_TASKS
        if job.sandbox is not None:
            return await self._prepare_boxed(job)
        if self.received.get(job.eval_id, job) != job:  # same eval id, another run
            self.core.jobs.pop(job.eval_id, None)
        self.received[job.eval_id] = job
        self.core.prepare(job)
        return self.id

    async def _prepare_boxed(self, job: EvalJob) -> str:
        b = self.binding
        assert b is not None and self.core is not None
        if self.box is None:  # the actor's limiter client: its units ask it for permits
            init = {"project_root": self.core.project_root, "adapter_spec": b.adapter_spec,
                    "timeout_s": b.timeout_s, "retries": b.retries, "isolation": b.isolation,
                    "node_id": self.core.node_id}
            self.box = ProcessWorker(self.id, b.slots, init, self.core.limiter)
        if job.project_root != self.core.project_root:
            # the sandbox shows the project where this node has it (a job's working_dir)
            job = dataclasses.replace(job, project_root=self.core.project_root)
        async with self.relay:
            await self.box.prepare(job)
        self.boxed.add(job.eval_id)
        return self.id

    async def end_sandbox(self) -> None:
        """End the sandboxed worker and everything the candidate started in it."""
        box, self.box, self.boxed = self.box, None, set()
        if box is not None:
            async with self.relay:
                await box.close()

    async def exchange(self, eval_id: str, units: list[list[Any]],
                       max_wait_s: float, slots: int | None = None) -> list[Outcome]:
        core = self._core(eval_id)
        if eval_id in self.boxed and self.box is not None:
            if slots is not None and slots >= 0:
                self.box.slots = slots
            async with self.relay:
                return await self.box.exchange(eval_id, [WorkUnit(*u) for u in units],
                                               max_wait_s)
        return await core.exchange(eval_id, [WorkUnit(*u) for u in units], max_wait_s, slots)

    @ray.method(num_returns=2)
    async def exchange_keyed(self, eval_id: str, units: list[list[Any]],
                             max_wait_s: float, slots: int | None = None
                             ) -> tuple[list[list[Any]], list[Outcome]]:
        """:meth:`exchange` as two objects: keys for the driver, outcomes for a scorer."""
        outcomes = await self.exchange(eval_id, units, max_wait_s, slots)
        return outcome_keys(outcomes), outcomes


@ray.remote(max_restarts=-1, max_task_retries=0)
class ScorerActor(_Actor):
    """A ScorerCore behind async actor methods."""

    kind = where = "scorer"

    def _load(self, b: Binding, root: str) -> str:
        actor_id = ray.get_runtime_context().get_actor_id() or "none"
        self.core = ScorerCore(root, b.adapter_spec,
                               scorer_id=f"scorer-{actor_id[:12]}-{os.getpid()}")
        return self.core.scorer_id

    async def prepare(self, job: ScoreJob, binding: Binding | None = None) -> str:
        """The scorer id, or :data:`NEED_TASKS`."""
        if not self._ready(job, binding):
            return NEED_TASKS
        self.core.prepare(job)
        return self.id

    async def score(self, eval_id: str, items: list[tuple[Outcome, int]]
                    ) -> tuple[dict, int]:
        batch = await self._core(eval_id).score(eval_id, items)
        return batch.columns, len(batch)  # plain columns pickle fastest

    async def score_picked(self, eval_id: str, outcomes: list[Outcome],
                           picks: list[list[Any]]) -> tuple[dict, int]:
        """Score accepted outcomes by their picks' trusted keys and seeds."""
        return await self.score(eval_id, picked_items(outcomes, picks))


def outcome_keys(outcomes: list[Outcome]) -> list[list[Any]]:
    """Each outcome's ``[task_id, trial]``."""
    return [[o["task_id"], o["trial"]] for o in outcomes]


SCORERS_PER = 2
"""Rollout actors per scorer actor."""


def scorers_for(rollout_actors: int) -> int:
    """One scorer per :data:`SCORERS_PER` rollout actors, rounded up."""
    return -(-rollout_actors // SCORERS_PER)


NEED_TASKS = "capevolve:need-tasks"
"""``prepare``'s answer without the task file: resend with the table."""


def project_location(project_root: str) -> tuple[str, str | None]:
    """``(driver path, path relative to the job's working_dir or None)``."""
    if not ray.get_runtime_context().runtime_env.get("working_dir"):
        return project_root, None
    try:
        rel = Path(project_root).resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return project_root, None
    return project_root, rel.as_posix()


def resolve_project_root(project_root: str, project_rel: str | None) -> str:
    """The project dir here, the working-dir copy first."""
    if project_rel is not None:
        local = Path.cwd() / project_rel
        if local.is_dir():
            return str(local)
    if Path(project_root).is_dir():
        return project_root
    raise EngineError(f"project not found on node {ray.get_runtime_context().get_node_id()[:12]}"
                      f": neither {project_rel!r} under {os.getcwd()} nor {project_root}; "
                      "submit with --working-dir containing the project")
