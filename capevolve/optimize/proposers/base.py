"""The proposer interface: given a parent candidate and its context, edit a working copy.

A proposer has a ``name`` and ``propose(ctx) -> Proposal``; it edits ``ctx.workdir`` and nothing
else, never sees test data (``ctx.diagnosis`` is of train), and returns
``Proposal(changed=False, blocker=...)`` when it produced nothing (a no_change). The loop
decides from the files whether anything changed and refuses a protected-path edit before any
rollout. :func:`build_proposer` parses ``scripted:DIR``, ``command:"..."`` and ``llm[:options]``
(a bad spec is a ConfigError).
"""

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
    """Everything a proposer may look at for one proposal (read-only by contract)."""

    run_dir: Path
    """The run directory (proposers must not write there; it is the loop's)."""
    run_id: str
    iteration: int
    """The 1-based iteration this proposal is for."""
    parent_id: str
    parent_dir: Path
    """The parent's read-only snapshot files (``candidates/<id>/files``)."""
    workdir: Path
    """A writable copy of the parent's files: the proposer edits this directory in place."""
    editable: tuple[str, ...]
    """The capability's editable surface (``capabilities`` of the project, informational)."""
    protected: tuple[str, ...]
    """Globs (relative to the candidate) an edit must not touch."""
    files: tuple[str, ...]
    """The relative paths of the parent's files (component files a proposer may edit)."""
    diagnosis: Mapping[str, Any] | None
    """The parent's diagnosis on the train split (reflective dataset + ranked clusters:
    the DiagnosisRecord's JSON), or None when none could be made."""
    ledger: tuple[IterationRecord, ...]
    """Every earlier iteration of this loop, oldest first."""
    instructions: str
    """The text of INSTRUCTIONS.md (also written into the prepared directory)."""
    stop_condition: str = ""
    focus: str | None = None
    """The cluster label the algorithm asks this proposal to target, if any."""
    seed: int = 0
    """A per-iteration seed (derived from the run seed and the iteration) for any choice."""


@dataclass(frozen=True)
class Proposal:
    """What a proposer reports after editing ``ctx.workdir``."""

    changed: bool
    blocker: str | None = None
    spend: Spend = field(default_factory=Spend)
    detail: dict[str, Any] = field(default_factory=dict)
    focus: str | None = None
    """The cluster or component file the proposal actually targeted, if it knows."""


@runtime_checkable
class Proposer(Protocol):
    """Edits a working copy of a parent candidate (see the module docstring)."""

    name: str

    def propose(self, ctx: ProposalContext) -> Proposal:
        """Edit ``ctx.workdir`` in place and say what was done."""
        ...


@dataclass(frozen=True)
class ProposerConfig:
    """Settings every proposer builder receives (besides its own spec options)."""

    project_dir: Path
    """The project directory (for resolving relative paths in a spec)."""
    timeout_s: float = 900.0
    """Wall-time bound of one proposal (a command is killed past it: no_change)."""
    seed: int = 0
    """The run seed."""
    tail_chars: int = 2000
    """How much of a command's stdout / stderr (the end) is stored with the iteration."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Extra environment (secrets only: e.g. the variable an API key is read from)."""
    model: ModelSettings | None = None
    """The run's pinned ``models.proposer`` (the ``llm`` proposer's endpoint), if any."""
