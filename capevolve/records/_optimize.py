"""The typed per-iteration ledger record of an optimization loop (optimize/ledger.jsonl)."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from capevolve.records._base import Record


class Outcome(StrEnum):
    """What became of one iteration's child."""

    ACCEPT = "accept"            # gated on full val against the best and accepted
    REJECT = "reject"            # gated and rejected
    INDECISIVE = "indecisive"    # gated, indecisive (kept as a frontier member, never best)
    SCREENED_OUT = "screened_out"  # killed on the train minibatch or at the first look
    NO_CHANGE = "no_change"      # the proposer produced nothing to evaluate (blocker says why)
    REFUSED = "refused"          # the child touched a protected path; no rollout ran


class Spend(BaseModel):
    """What a proposer spent on one proposal (optimizer spend, separate from the runner's).

    ``cost_usd`` is None when the proposer reported no cost ("not recorded", never 0)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    tokens: int = Field(default=0, ge=0)
    cost_usd: float | None = Field(default=None, ge=0)
    wall_s: float = Field(default=0.0, ge=0)


class DiffStat(BaseModel):
    """How the child differs from its parent, by relative path."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    added: tuple[str, ...] = ()
    modified: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    lines_added: int = 0
    lines_removed: int = 0

    @property
    def empty(self) -> bool:
        """True when the child is byte-identical to the parent."""
        return not (self.added or self.modified or self.removed)


class GateNumbers(BaseModel):
    """The numbers of the gate (or screening comparison) an iteration's child went through,
    copied from the recorded gate / evaluation records."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    split: str
    against: str
    decision: str
    parent_mean: float | None = None
    child_mean: float | None = None
    delta: float | None = None
    se: float | None = None
    threshold: float | None = None
    n_tasks: int | None = None
    power: dict[str, Any] | None = None
    """The gate's own sensitivity (its record's ``power``); None for a screen."""


class IterationRecord(Record):
    """One iteration of an optimization loop, as recorded in ``optimize/ledger.jsonl``."""

    iteration: int = Field(ge=1)
    """1-based; every iteration number appears once in a ledger."""
    algorithm: str
    proposer: str
    parent_id: str
    child_id: str | None = None
    """The snapshot id of the child, when it was snapshotted (not for no_change)."""
    child_hash: str | None = None
    """The content hash of the child's files (the key a resumed loop reuses it by)."""
    focus: str | None = None
    """The cluster (or component file) the proposal targeted, when there was one."""
    diff: DiffStat = DiffStat()
    outcome: Outcome
    reasons: tuple[str, ...] = ()
    screen: GateNumbers | None = None
    minibatch: tuple[str, ...] = ()
    """The train task ids the child was screened on (pareto), drawn for this iteration."""
    gate: GateNumbers | None = None
    spend: Spend = Spend()
    metric_calls: int = Field(default=0, ge=0)
    """Rollouts paid for in this iteration (screening + val), counted from stored rows."""
    wall_s: float = Field(default=0.0, ge=0)
    overhead_s: float = Field(default=0.0, ge=0)
    """wall_s minus the proposer's and the engine's own time: the framework's overhead."""
    started_at: str
    finished_at: str
    detail: dict[str, Any] = Field(default_factory=dict)
    """The proposer's own detail (exit status, output tail, raw answer, ...)."""
