"""``results/<n>.json``: one per decided iteration, numbers copied from its gate."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from capevolve.records._base import Record


class DecisionRecord(Record):
    """One iteration's decision and its numbers."""

    iteration: int = Field(ge=1)
    decision: str = Field(pattern=r"^(accept|reject|no_change)$")
    candidate_id: str | None
    best_before: str | None
    """The best before the decision."""
    best_after: str | None
    is_best: bool
    """Whether the candidate is then the best."""
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
    """The run's spend when recorded."""
    gate_ts: str | None = None
    """ts of the gate event behind the numbers."""
    reasoning: str = Field(min_length=1)
    """The user's reason, else the gate's; never empty."""
    aggregate: bool = True
    """False for no_change: in no aggregate."""
    decided_at: str
