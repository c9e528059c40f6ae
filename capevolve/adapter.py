"""The adapter contract and the records that cross it.

A project's adapter is any class with these methods (each may be ``def`` or ``async def``):

- ``tasks() -> list[Task]``: every task, with stable unique ids, in a deterministic order.
  capevolve, not the adapter, decides the splits. It may instead return any iterable of
  tasks (a generator, an iterator reading a JSONL file in chunks): capevolve takes them
  one at a time and keeps only a compact table of the split it evaluates, so a large task
  set is never held as a list (:mod:`capevolve._project.tasks`). Items may be Task objects
  or mappings that validate as one; the ids and order must be the same on every call.
- ``run_target(candidate: Path, task: Task, *, trial: int, seed: int) -> Rollout``: run the
  agent with the capability stored in directory ``candidate`` on one task. Infrastructure
  failures go in ``Rollout.error`` (missing data, never a score of 0); raising is allowed
  and is recorded the same way. Raise :class:`TransientError` (or return a Rollout with
  ``transient=True``) for errors worth retrying: rate limits, 5xx, timeouts.
- ``score(task, rollout) -> Score``: reward in [0, 1] (higher is better) plus feedback that
  explains *why*; deterministic; the feedback must not quote the gold answer. It runs in
  another process than ``run_target`` (one where no candidate code was imported) and gets
  the Rollout as re-read from JSON: values JSON cannot hold arrive as their ``repr``, and
  tuples as lists. Everything in the Rollout was produced next to candidate code: a scorer
  should judge the outcome from data it can check, not trust a field saying "passed".

Optional: ``trajectories(split) -> Path | None`` and ``scoreable(task) -> bool``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Task(_Record):
    """One task the agent is asked to do."""

    id: str = Field(min_length=1)
    """Stable, unique identifier; splits are derived from it."""
    input: Any = None
    """What the agent receives (text or any JSON-serialisable value)."""
    target: Any = None
    """The reference answer or outcome the scorer compares against (never shown to editors)."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free-form extra data; ``metadata['cluster']`` groups tasks for clustered SEs."""


class ToolCall(_Record):
    """One tool call the agent made."""

    name: str
    """Tool name as the agent called it."""
    arguments: Any = None
    """Arguments as passed (JSON-serialisable)."""
    mutates: bool | None = None
    """True when the call changes state; None lets readers infer it from the name."""


class Rollout(_Record):
    """What one run of the agent on one task produced."""

    output: Any = None
    """The agent's final answer or message."""
    trace: Any = None
    """The conversation / step log (JSON-serialisable), stored for diagnosis."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """Tool calls in order."""
    tokens: int | None = None
    """Tokens used, or None when unknown."""
    cost_usd: float | None = None
    """Money spent, or None when unknown (never 0 for unknown)."""
    error: str | None = None
    """An infrastructure failure: the rollout is missing data, not a score."""
    transient: bool = False
    """With ``error``: the failure may go away on retry (rate limit, 5xx, timeout)."""
    trajectory: str | None = None
    """Path of a trajectory file the adapter wrote, if any (stored, never parsed)."""


class Score(_Record):
    """The scorer's verdict on one rollout."""

    reward: float
    """In [0, 1]; higher is better."""
    feedback: str = ""
    """Why the reward is what it is, in words an editor can act on."""
    parts: dict[str, float] = Field(default_factory=dict)
    """Named components of the reward, if any."""

    @field_validator("reward")
    @classmethod
    def _reward_in_unit_interval(cls, value: float) -> float:
        if not (math.isfinite(value) and 0.0 <= value <= 1.0):
            raise ValueError(f"reward must be in [0, 1], got {value!r}")
        return float(value)


class TransientError(Exception):
    """Raise from ``run_target`` for a failure worth retrying (rate limit, 5xx, timeout)."""


@runtime_checkable
class Adapter(Protocol):
    """The contract a project's adapter class fulfils (see the module docstring)."""

    def tasks(self) -> list[Task] | Iterable[Task]:
        """Every task, stable ids, deterministic order: a list, or any iterable (a
        generator) that yields them."""
        ...

    def run_target(self, candidate: Path, task: Task, *, trial: int, seed: int) -> Rollout:
        """Run the agent with the capability in ``candidate`` on ``task``."""
        ...

    def score(self, task: Task, rollout: Rollout) -> Score:
        """Reward in [0, 1] with feedback that explains why; deterministic."""
        ...
