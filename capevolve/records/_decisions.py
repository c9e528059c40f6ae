"""The per-iteration decision record: ``results/<n>.json``.

One file per decided iteration (accept, reject, no_change), numbered 1, 2, ... in the order
decided. Every number is copied from the gate record it rests on (itself computed from the
stored rollouts); ``reasoning`` is mandatory and never empty.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from capevolve.records._base import Record


class DecisionRecord(Record):
    """One iteration's decision with the numbers and the audit behind it."""

    iteration: int = Field(ge=1)
    decision: str = Field(pattern=r"^(accept|reject|no_change)$")
    candidate_id: str | None
    best_before: str | None
    """The best when the decision was taken."""
    best_after: str | None
    is_best: bool
    """Whether the candidate is the best after this decision."""
    policy: str
    significant: bool | None = None
    confidence: str | None = None
    tentative: bool = False
    t_stat: float | None = None
    delta: float | None = None
    se_diff: float | None = None
    min_delta: float | None = None
    before_mean: float | None = None
    after_mean: float | None = None
    scored: int | None = Field(None, ge=0)
    excluded: int | None = Field(None, ge=0)
    target: str | None = None
    flipped_up: list[str] = Field(default_factory=list)
    flipped_down: list[str] = Field(default_factory=list)
    audit: dict[str, Any] | None = None
    spend: dict[str, Any] = Field(default_factory=dict)
    """The run's spend when the decision was recorded (state.json)."""
    gate_ts: str | None = None
    """The timestamp of the gate event the numbers come from."""
    reasoning: str = Field(min_length=1)
    """Why: the user's reason, else the gate's reasons (never empty)."""
    aggregate: bool = True
    """False for no_change: excluded from every aggregate."""
    decided_at: str
