"""The ledger record of an optimization loop (optimize/ledger.jsonl)."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from capevolve.records._base import Record, Result


class Outcome(StrEnum):
    """What became of one iteration's child."""

    ACCEPT = "accept"            # gated on full val against the best and accepted
    REJECT = "reject"            # gated and rejected
    INDECISIVE = "indecisive"    # gated, indecisive (kept as a frontier member, never best)
    SCREENED_OUT = "screened_out"  # killed on the train minibatch or at the first look
    NO_CHANGE = "no_change"      # the proposer produced nothing to evaluate (blocker says why)
    REFUSED = "refused"          # the child touched a protected path; no rollout ran


class Spend(BaseModel):
    """A proposal's spend; ``cost_usd`` None: not reported."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    tokens: int = Field(default=0, ge=0)
    cost_usd: float | None = Field(default=None, ge=0)
    wall_s: float = Field(default=0.0, ge=0)


class DiffStat(Result):
    """How the child differs from its parent."""

    added: tuple[str, ...] = ()
    modified: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    lines_added: int = 0
    lines_removed: int = 0

    @property
    def empty(self) -> bool:
        """The child is byte-identical to the parent."""
        return not (self.added or self.modified or self.removed)


class GateNumbers(BaseModel):
    """The gate or screen numbers of a child."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    split: str
    against: str
    decision: str
    parent_mean: float | None = None
    child_mean: float | None = None
    delta: float | None = None
    se: float | None = None
    threshold: float | None = None
    """The delta the gate had to exceed: k_se x se."""
    n_tasks: int | None = None
    power: dict[str, Any] | None = None
    """The gate's sensitivity."""


class IterationRecord(Record):
    """One ledger line."""

    iteration: int = Field(ge=1)
    """1-based, unique in a ledger."""
    algorithm: str
    proposer: str
    parent_id: str
    child_id: str | None = None
    """The child's snapshot id, if snapshotted."""
    child_hash: str | None = None
    """The child's content hash, for resuming."""
    focus: str | None = None
    """The cluster or file targeted."""
    diff: DiffStat = DiffStat()
    outcome: Outcome
    reasons: tuple[str, ...] = ()
    screen: GateNumbers | None = None
    minibatch: tuple[str, ...] = ()
    """Train tasks the child was screened on."""
    gate: GateNumbers | None = None
    spend: Spend = Spend()
    metric_calls: int = Field(default=0, ge=0)
    """Rollouts paid for, from stored rows."""
    wall_s: float = Field(default=0.0, ge=0)
    overhead_s: float = Field(default=0.0, ge=0)
    """wall_s minus proposer and engine time."""
    started_at: str
    finished_at: str
    detail: dict[str, Any] = Field(default_factory=dict)
    """The proposer's own detail."""
