"""The lines of events.jsonl: a model per library kind, UserEvent for the rest."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from capevolve.kinds import EvalPurpose, EvalStatus, EventKind, SpendRole, Split
from capevolve.records._base import EVENT_KIND_PATTERN, Record, Result, check_version, parse_record
from capevolve.records._documents import GateRecord

# -- events ---------------------------------------------------------------------------------

class EventBase(Record):
    """Fields every line of events.jsonl carries."""

    kind: str
    """What happened."""
    ts: str
    """UTC time, ISO 8601 with microseconds."""
    pid: int
    """The recording process."""
    prev: str | None = None
    """sha256 of the previous line: the hash chain."""
    mac: str | None = None
    """HMAC-SHA256 of the other fields under the run's key."""


class RunCreated(EventBase):
    """The run dir was created."""

    kind: Literal[EventKind.RUN_CREATED]
    run_id: str
    """The run's id."""
    key_id: str
    """Names the run's signing key."""
    run_json_sha256: str | None = None
    """sha256 of run.json as written, project_dir aside."""


class SnapshotEvent(EventBase):
    """A candidate was snapshotted."""

    kind: Literal[EventKind.SNAPSHOT]
    candidate_id: str
    """The new candidate."""
    hash: str
    """Its content hash."""
    source: str
    """The directory copied."""


class _EvalEvent(EventBase):
    """Fields of an evaluation's events."""

    eval_id: str
    """The evaluation."""
    candidate_id: str
    """The candidate evaluated."""
    split: Split
    """The split evaluated."""


class EvalStarted(_EvalEvent):
    """An evaluation (or its resumption) started."""

    kind: Literal[EventKind.EVAL_STARTED]
    units: int = Field(ge=0)
    """Units planned for this attempt."""
    resumed: bool
    """Whether it resumed an earlier attempt."""


class EvalFinished(_EvalEvent):
    """An evaluation attempt finished."""

    kind: Literal[EventKind.EVAL_FINISHED]
    status: EvalStatus
    """complete or incomplete."""
    mean: float | None = None
    """Its mean; None: nothing scored."""
    stderr: float | None = None
    """Its SE."""
    n_scored: int = Field(ge=0)
    """Tasks scored."""
    purpose: EvalPurpose = EvalPurpose.GATE
    """Its purpose, as its record says."""
    first_trial: int = Field(0, ge=0)
    """Its first trial index."""
    subset_sha256: str | None = None
    """sha256 of its task subset, if any."""


class GateEvent(EventBase, GateRecord):
    """A gate ran (see GateRecord)."""

    kind: Literal[EventKind.GATE]


class AcceptEvent(EventBase):
    """A candidate was accepted."""

    kind: Literal[EventKind.ACCEPT]
    candidate_id: str
    """The candidate accepted."""
    previous_best: str | None
    """The best it was accepted against."""
    note: str | None = None
    """The user's note."""
    delta: float | None = None
    """The passing gate's delta."""


class RejectEvent(EventBase):
    """A candidate was rejected."""

    kind: Literal[EventKind.REJECT]
    candidate_id: str
    """The candidate rejected."""
    best_id: str | None
    """The best it was rejected against."""
    note: str | None = None
    """The user's note."""


class SetBestEvent(EventBase):
    """The best moved."""

    kind: Literal[EventKind.SET_BEST]
    candidate_id: str
    """The new best."""
    reason: str
    """seed or accepted."""
    previous_best: str | None = None
    """The best before."""
    gate_ts: str | None = None
    """ts of the licensing gate event."""


class SpendEvent(EventBase):
    """Increments of the run's spend."""

    kind: Literal[EventKind.SPEND]
    iterations: int = Field(0, ge=0, strict=True)
    """Decisions recorded."""
    metric_calls: int = Field(0, ge=0, strict=True)
    """Rollouts dispatched, finished or not."""
    tokens: int = Field(0, ge=0, strict=True)
    """Tokens reported by rollouts and judges."""
    cost_usd: float = Field(0.0, ge=0, strict=True)
    """Dollars reported by rollouts and judges."""
    cost_unrecorded: int = Field(0, ge=0, strict=True)
    """Rollouts of unknown cost."""
    wall_s: float = Field(0.0, ge=0, strict=True)
    """Wall-clock seconds of rollout work."""
    role: SpendRole | None = None
    """Who spent, if known."""
    session: str | None = None
    """The evaluate session settled."""
    reconciled: bool = False
    """Settled for a dead session: dispatched units count."""


class FinalizeStarted(EventBase):
    """finalize took the seal."""

    kind: Literal[EventKind.FINALIZE_STARTED]
    best_id: str | None
    """The candidate finalized."""


class Finalized(EventBase):
    """finalize wrote final.json."""

    kind: Literal[EventKind.FINALIZED]
    best_id: str | None
    """The candidate finalized."""
    delta: float | None = None
    """The paired test delta."""
    final_sha256: str | None = None
    """sha256 of the final.json written."""


class DiagnosisAnnotated(EventBase):
    """A judgement on a diagnosis cluster."""

    kind: Literal[EventKind.DIAGNOSIS_ANNOTATED]
    file: str
    """The diagnosis file."""
    cluster: str
    """The cluster's signature."""
    tag: str | None = None
    """The judgement tag."""
    blast_radius: list[str] | None = None
    """Passing tasks a fix could break."""


class TamperEvent(EventBase):
    """A candidate touched protected paths."""

    kind: Literal[EventKind.TAMPER]
    candidate_id: str
    """The candidate refused."""
    paths: list[str]
    """The protected paths it changed."""


class NoChangeEvent(EventBase):
    """An iteration whose change could not be scored."""

    kind: Literal[EventKind.NO_CHANGE]
    best_id: str | None
    """The best carried forward."""
    reasoning: str = Field(min_length=1)
    """Why (never empty)."""
    candidate_id: str | None = None
    """The would-be candidate, if any."""
    iteration: int = Field(ge=1)
    """The decision record's number."""


class PartWritten(EventBase):
    """A Parquet part was renamed into place."""

    kind: Literal[EventKind.PART_WRITTEN]
    path: str
    """Relative to the run dir."""
    sha256: str
    """sha256 of its bytes."""
    size: int = Field(ge=0)
    """Size in bytes."""
    n_rows: int = Field(ge=0)
    """Rows."""


class QuarantinedEvent(EventBase):
    """``capevolve quarantine`` set files aside."""

    kind: Literal[EventKind.QUARANTINED]
    moved: dict[str, str]
    """Each moved file -> its new place."""
    problems: list[str]
    """The problems found, one line each."""
    reset_events: bool = False
    """Whether events.jsonl was restarted."""


class CompactedPart(Result):
    """A part a compaction wrote."""

    path: str
    """Relative to the run dir."""
    sha256: str
    """sha256 of its bytes."""
    size: int = Field(ge=0)
    """Size in bytes."""
    n_rows: int = Field(ge=0)
    """Rows."""


class PartsCompacted(EventBase):
    """``parts`` replaced an evaluation's ``retired`` parts."""

    kind: Literal[EventKind.PARTS_COMPACTED]
    eval_id: str
    """The evaluation."""
    parts: list[CompactedPart] = Field(min_length=1)
    """The new parts, in the retired rows' order."""
    retired: list[str] = Field(min_length=1)
    """The parts replaced, deleted after this line."""


class UserEvent(EventBase):
    """An event of a user kind."""

    kind: str = Field(pattern=EVENT_KIND_PATTERN)
    data: dict[str, Any] = Field(default_factory=dict)
    """The user's fields."""


LIBRARY_EVENTS: dict[EventKind, type[EventBase]] = {
    EventKind.RUN_CREATED: RunCreated, EventKind.SNAPSHOT: SnapshotEvent,
    EventKind.EVAL_STARTED: EvalStarted, EventKind.EVAL_FINISHED: EvalFinished,
    EventKind.GATE: GateEvent, EventKind.ACCEPT: AcceptEvent, EventKind.REJECT: RejectEvent,
    EventKind.SET_BEST: SetBestEvent, EventKind.SPEND: SpendEvent,
    EventKind.FINALIZE_STARTED: FinalizeStarted, EventKind.FINALIZED: Finalized,
    EventKind.DIAGNOSIS_ANNOTATED: DiagnosisAnnotated, EventKind.TAMPER: TamperEvent,
    EventKind.NO_CHANGE: NoChangeEvent,
    EventKind.PART_WRITTEN: PartWritten, EventKind.QUARANTINED: QuarantinedEvent,
    EventKind.PARTS_COMPACTED: PartsCompacted,
}
"""The kinds capevolve records itself, which users may not log."""

_LIBRARY_VALUES = frozenset(k.value for k in LIBRARY_EVENTS)

USER_KINDS_BUILTIN = frozenset({EventKind.NOTE.value})
"""User kinds accepted without registration."""

Event = (RunCreated | SnapshotEvent | EvalStarted | EvalFinished | GateEvent | AcceptEvent
         | RejectEvent | SetBestEvent | SpendEvent | FinalizeStarted | Finalized
         | DiagnosisAnnotated | TamperEvent | NoChangeEvent | PartWritten
         | QuarantinedEvent | PartsCompacted | UserEvent)


def parse_event(data: Any, source: str) -> Event:
    """One events.jsonl line as its model."""
    kind = check_version(data, source).get("kind")
    model: type[EventBase] = UserEvent
    if isinstance(kind, str) and kind in _LIBRARY_VALUES:
        model = LIBRARY_EVENTS.get(EventKind(kind), UserEvent)
    return parse_record(model, data, source)  # type: ignore[return-value]
