"""The adapter contract and the records that cross it.

An adapter implements :class:`Adapter` (sync or async methods), optionally with
``trajectories(split)`` and ``scoreable(task)``. Task ids are stable, unique and in the same
order on every call. An infrastructure failure is missing data, never a 0. ``score`` is
deterministic, its feedback never quotes the gold answer, and it gets the rollout re-read from
JSON: it checks outcomes, not claims.
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
    """What the agent receives (any JSON value)."""
    target: Any = None
    """The reference answer; never shown to editors."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Extra data; ``metadata['cluster']`` groups tasks for clustered SEs."""


class ToolCall(_Record):
    """One tool call the agent made."""

    name: str
    """Tool name as the agent called it."""
    arguments: Any = None
    """Arguments as passed (JSON-serialisable)."""
    mutates: bool | None = None
    """Whether the call changes state; None: inferred from the name."""


class Rollout(_Record):
    """What one run of the agent on one task produced."""

    output: Any = None
    """The agent's final answer or message."""
    trace: Any = None
    """The conversation or step log, for diagnosis."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """Tool calls in order."""
    tokens: int | None = None
    """Tokens used, or None when unknown."""
    cost_usd: float | None = None
    """Dollars spent, or None when unknown."""
    error: str | None = None
    """An infrastructure failure: missing data, not a score."""
    transient: bool = False
    """With ``error``: the failure is worth retrying."""
    trajectory: str | None = None
    """Path of a trajectory file, stored, never parsed."""


class Score(_Record):
    """The scorer's verdict on one rollout."""

    reward: float
    """In [0, 1]; higher is better."""
    feedback: str = ""
    """Why, in words an editor can act on."""
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
    """The contract a project's adapter class fulfils."""

    def tasks(self) -> list[Task] | Iterable[Task]:
        """Every task, with stable ids, in a deterministic order."""
        ...

    def run_target(self, candidate: Path, task: Task, *, trial: int, seed: int) -> Rollout:
        """Run the agent with the capability in ``candidate`` on ``task``."""
        ...

    def score(self, task: Task, rollout: Rollout) -> Score:
        """Reward in [0, 1] with feedback that explains why; deterministic."""
        ...
