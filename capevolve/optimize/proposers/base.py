"""The proposer interface: ``propose(ctx)`` edits ``ctx.workdir`` and nothing else, and
returns ``Proposal(changed=False, blocker=...)`` when it produced nothing. A proposer never
sees test data."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from capevolve.models.settings import ModelSettings
from capevolve.records._optimize import IterationRecord, Spend

__all__ = ["Proposal", "ProposalContext", "Proposer", "ProposerConfig", "Spend"]


@dataclass(frozen=True)
class ProposalContext:
    """What a proposer may look at for one proposal (read-only)."""

    run_dir: Path
    """The loop's run directory; never write there."""
    run_id: str
    iteration: int
    """The 1-based iteration."""
    parent_id: str
    parent_dir: Path
    """The parent's read-only snapshot files."""
    workdir: Path
    """The parent's files, writable: edit them in place."""
    editable: tuple[str, ...]
    """The project's ``capabilities`` (informational)."""
    protected: tuple[str, ...]
    """Globs, relative to the candidate, an edit must not touch."""
    files: tuple[str, ...]
    """The parent's relative file paths."""
    diagnosis: Mapping[str, Any] | None
    """The parent's train diagnosis (a DiagnosisRecord's JSON), or None."""
    ledger: tuple[IterationRecord, ...]
    """Earlier iterations, oldest first."""
    instructions: str
    """The text of INSTRUCTIONS.md."""
    stop_condition: str = ""
    focus: str | None = None
    """The cluster this proposal should target, if any."""
    seed: int = 0
    """A per-iteration seed for any random choice."""


@dataclass(frozen=True)
class Proposal:
    """What a proposer reports after editing ``ctx.workdir``."""

    changed: bool
    blocker: str | None = None
    spend: Spend = field(default_factory=Spend)
    detail: dict[str, Any] = field(default_factory=dict)
    focus: str | None = None
    """What the proposal actually targeted, if known."""


@runtime_checkable
class Proposer(Protocol):
    """Edits a working copy of a parent candidate."""

    name: str

    def propose(self, ctx: ProposalContext) -> Proposal:
        """Edit ``ctx.workdir`` in place; say what was done."""
        ...


@dataclass(frozen=True)
class ProposerConfig:
    """What every proposer builder receives besides its spec."""

    project_dir: Path
    """The project directory, for relative paths in a spec."""
    timeout_s: float = 900.0
    """Wall-time bound of one proposal."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Extra environment: secrets only."""
    model: ModelSettings | None = None
    """The run's pinned ``models.proposer``, if any."""
