"""The lines of events.jsonl: one model per kind capevolve records, UserEvent for the rest."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from capevolve.kinds import EvalStatus, EventKind, Split
from capevolve.records._base import EVENT_KIND_PATTERN, Record, check_version, parse_record
from capevolve.records._documents import GateRecord

# -- events ---------------------------------------------------------------------------------

class EventBase(Record):
    """Fields every line of events.jsonl carries."""

    kind: str
    """What happened."""
    ts: str
    """UTC time, ISO 8601 with microseconds."""
    pid: int
    """The process that recorded it."""


class RunCreated(EventBase):
    kind: Literal[EventKind.RUN_CREATED]
    run_id: str


class SnapshotEvent(EventBase):
    kind: Literal[EventKind.SNAPSHOT]
    candidate_id: str
    hash: str
    source: str


class EvalStarted(EventBase):
    kind: Literal[EventKind.EVAL_STARTED]
    eval_id: str
    candidate_id: str
    split: Split
    units: int = Field(ge=0)
    resumed: bool


class EvalFinished(EventBase):
    kind: Literal[EventKind.EVAL_FINISHED]
    eval_id: str
    candidate_id: str
    split: Split
    status: EvalStatus
    mean: float | None = None
    stderr: float | None = None
    n_scored: int = Field(ge=0)


class GateEvent(EventBase, GateRecord):
    kind: Literal[EventKind.GATE]


class AcceptEvent(EventBase):
    kind: Literal[EventKind.ACCEPT]
    candidate_id: str
    previous_best: str | None
    note: str | None = None
    delta: float | None = None


class RejectEvent(EventBase):
    kind: Literal[EventKind.REJECT]
    candidate_id: str
    best_id: str | None
    note: str | None = None


class SetBestEvent(EventBase):
    kind: Literal[EventKind.SET_BEST]
    candidate_id: str
    reason: str
    """seed (at creation) or accepted."""
    previous_best: str | None = None
    gate_ts: str | None = None
    """The ts of the gate event that licensed the move (None for the seed)."""


class SpendEvent(EventBase):
    """Increments of what the run spent; every field finite and non-negative."""

    kind: Literal[EventKind.SPEND]
    iterations: int = Field(0, ge=0, strict=True)
    metric_calls: int = Field(0, ge=0, strict=True)
    tokens: int = Field(0, ge=0, strict=True)
    cost_usd: float = Field(0.0, ge=0, strict=True)
    cost_unrecorded: int = Field(0, ge=0, strict=True)
    wall_s: float = Field(0.0, ge=0, strict=True)


class FinalizeStarted(EventBase):
    kind: Literal[EventKind.FINALIZE_STARTED]
    best_id: str | None


class Finalized(EventBase):
    kind: Literal[EventKind.FINALIZED]
    best_id: str | None
    delta: float | None = None


class DiagnosisAnnotated(EventBase):
    kind: Literal[EventKind.DIAGNOSIS_ANNOTATED]
    file: str
    cluster: str
    tag: str | None = None
    blast_radius: list[str] | None = None


class TamperEvent(EventBase):
    kind: Literal[EventKind.TAMPER]
    candidate_id: str
    paths: list[str]


class UserEvent(EventBase):
    """An event of a user's own kind (``note`` or a registered kind); fields as data."""

    kind: str = Field(pattern=EVENT_KIND_PATTERN)
    data: dict[str, Any] = Field(default_factory=dict)
    """The user's fields (JSON values)."""


LIBRARY_EVENTS: dict[EventKind, type[EventBase]] = {
    EventKind.RUN_CREATED: RunCreated, EventKind.SNAPSHOT: SnapshotEvent,
    EventKind.EVAL_STARTED: EvalStarted, EventKind.EVAL_FINISHED: EvalFinished,
    EventKind.GATE: GateEvent, EventKind.ACCEPT: AcceptEvent, EventKind.REJECT: RejectEvent,
    EventKind.SET_BEST: SetBestEvent, EventKind.SPEND: SpendEvent,
    EventKind.FINALIZE_STARTED: FinalizeStarted, EventKind.FINALIZED: Finalized,
    EventKind.DIAGNOSIS_ANNOTATED: DiagnosisAnnotated, EventKind.TAMPER: TamperEvent,
}
"""The kinds capevolve records itself, and their models (a user may not log these)."""

_LIBRARY_VALUES = frozenset(k.value for k in LIBRARY_EVENTS)

USER_KINDS_BUILTIN = frozenset({EventKind.NOTE.value})
"""User kinds every run accepts without registration."""

Event = (RunCreated | SnapshotEvent | EvalStarted | EvalFinished | GateEvent | AcceptEvent
         | RejectEvent | SetBestEvent | SpendEvent | FinalizeStarted | Finalized
         | DiagnosisAnnotated | TamperEvent | UserEvent)


def parse_event(data: Any, source: str) -> Event:
    """One line of events.jsonl as its model (a library kind's, else UserEvent)."""
    kind = check_version(data, source).get("kind")
    model: type[EventBase] = UserEvent
    if isinstance(kind, str) and kind in _LIBRARY_VALUES:
        model = LIBRARY_EVENTS.get(EventKind(kind), UserEvent)
    return parse_record(model, data, source)  # type: ignore[return-value]
