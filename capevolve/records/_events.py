"""The lines of events.jsonl: one model per kind capevolve records, UserEvent for the rest."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from capevolve.kinds import EvalPurpose, EvalStatus, EventKind, SpendRole, Split
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
    prev: str | None = None
    """sha256 of the previous event's line in events.jsonl (None for the first): the
    hash chain that makes an edited, removed or inserted line evident."""
    mac: str | None = None
    """HMAC-SHA256 of the line's other fields under the run's key, kept outside the run
    dir (capevolve._store.signing): a line capevolve did not write does not carry it."""


class RunCreated(EventBase):
    """The run dir was created."""

    kind: Literal[EventKind.RUN_CREATED]
    run_id: str
    """The run's id (run.json ``run_id``)."""
    key_id: str
    """Names the run's signing key in the user's key directory (not a secret)."""
    run_json_sha256: str | None = None
    """sha256 of run.json's content as written (the frozen config, the splits' checksum;
    its project_dir aside): the signature then covers every setting a decision reads.
    None in runs made before."""


class SnapshotEvent(EventBase):
    """A candidate was snapshotted."""

    kind: Literal[EventKind.SNAPSHOT]
    candidate_id: str
    """The new candidate's id."""
    hash: str
    """Its content hash."""
    source: str
    """The directory it was copied from."""


class EvalStarted(EventBase):
    """An evaluation (or its resumption) started."""

    kind: Literal[EventKind.EVAL_STARTED]
    eval_id: str
    """The evaluation."""
    candidate_id: str
    """The candidate evaluated."""
    split: Split
    """The split evaluated."""
    units: int = Field(ge=0)
    """Units planned for this attempt (the missing ones when resuming)."""
    resumed: bool
    """Whether it resumed an earlier attempt."""


class EvalFinished(EventBase):
    """An evaluation attempt finished (complete or incomplete)."""

    kind: Literal[EventKind.EVAL_FINISHED]
    eval_id: str
    """The evaluation."""
    candidate_id: str
    """The candidate evaluated."""
    split: Split
    """The split evaluated."""
    status: EvalStatus
    """complete or incomplete."""
    mean: float | None = None
    """Its mean (None when nothing is scored)."""
    stderr: float | None = None
    """Its SE."""
    n_scored: int = Field(ge=0)
    """Tasks scored."""
    purpose: EvalPurpose = EvalPurpose.GATE
    """What the evaluation is for (as its record says; checked by ``capevolve verify``)."""
    first_trial: int = Field(0, ge=0)
    """Its first trial index."""
    subset_sha256: str | None = None
    """sha256 of its task subset (None: the whole split)."""


class GateEvent(EventBase, GateRecord):
    """A gate ran (its verdict and every number behind it: see GateRecord)."""

    kind: Literal[EventKind.GATE]


class AcceptEvent(EventBase):
    """A candidate was accepted (the set_best that follows moves the best)."""

    kind: Literal[EventKind.ACCEPT]
    candidate_id: str
    """The candidate accepted."""
    previous_best: str | None
    """The best it was gated and accepted against."""
    note: str | None = None
    """Why, in the user's words."""
    delta: float | None = None
    """The passing gate's delta."""


class RejectEvent(EventBase):
    """A candidate was rejected against the current best (one iteration)."""

    kind: Literal[EventKind.REJECT]
    candidate_id: str
    """The candidate rejected."""
    best_id: str | None
    """The best it was rejected against."""
    note: str | None = None
    """Why, in the user's words."""


class SetBestEvent(EventBase):
    """The best moved (the last one names the current best)."""

    kind: Literal[EventKind.SET_BEST]
    candidate_id: str
    """The new best."""
    reason: str
    """seed (at creation) or accepted."""
    previous_best: str | None = None
    """The best before the move."""
    gate_ts: str | None = None
    """The ts of the gate event that licensed the move (None for the seed)."""


class SpendEvent(EventBase):
    """Increments of what the run spent; every field finite and non-negative."""

    kind: Literal[EventKind.SPEND]
    iterations: int = Field(0, ge=0, strict=True)
    """Decisions (accept / reject) recorded."""
    metric_calls: int = Field(0, ge=0, strict=True)
    """Rollouts dispatched (each unit handed to a worker counts, finished or not)."""
    tokens: int = Field(0, ge=0, strict=True)
    """Tokens the rollouts (and their judge calls) reported."""
    cost_usd: float = Field(0.0, ge=0, strict=True)
    """Money the rollouts (and their judge calls) reported."""
    cost_unrecorded: int = Field(0, ge=0, strict=True)
    """Rollouts whose cost is unknown."""
    wall_s: float = Field(0.0, ge=0, strict=True)
    """Wall-clock seconds of rollout work."""
    role: SpendRole | None = None
    """Who spent (runner, scorer, optimizer); None for decisions and where unknown."""
    session: str | None = None
    """The evaluate session whose dispatch journal this settles (one event per session)."""
    reconciled: bool = False
    """True when a later command settled a session that died, from its dispatch journal
    and stored rows: units dispatched without a stored row count as spent, cost unknown."""


class FinalizeStarted(EventBase):
    """finalize took the seal and starts scoring the test split."""

    kind: Literal[EventKind.FINALIZE_STARTED]
    best_id: str | None
    """The candidate being finalized."""


class Finalized(EventBase):
    """finalize wrote final.json."""

    kind: Literal[EventKind.FINALIZED]
    best_id: str | None
    """The candidate finalized."""
    delta: float | None = None
    """The paired test delta (None when not measured)."""
    final_sha256: str | None = None
    """sha256 of the final.json it wrote (verification compares the file to it)."""


class DiagnosisAnnotated(EventBase):
    """A person's judgement was recorded on a diagnosis cluster."""

    kind: Literal[EventKind.DIAGNOSIS_ANNOTATED]
    file: str
    """The diagnosis file."""
    cluster: str
    """The cluster's signature."""
    tag: str | None = None
    """The judgement tag."""
    blast_radius: list[str] | None = None
    """Passing tasks an edit for this cluster could break."""


class TamperEvent(EventBase):
    """A candidate touched protected paths; it was refused before any rollout."""

    kind: Literal[EventKind.TAMPER]
    candidate_id: str
    """The candidate refused."""
    paths: list[str]
    """The protected paths it modified, added or removed."""


class NoChangeEvent(EventBase):
    """An iteration whose change could not be scored: the best is carried forward."""

    kind: Literal[EventKind.NO_CHANGE]
    best_id: str | None
    """The best carried forward."""
    reasoning: str = Field(min_length=1)
    """Why the change could not be scored (never empty)."""
    candidate_id: str | None = None
    """The candidate the change would have been, when there was one."""
    iteration: int = Field(ge=1)
    """The decision record's number (``results/<n>.json``)."""


class PartWritten(EventBase):
    """A Parquet part of rollouts was durably renamed into place."""

    kind: Literal[EventKind.PART_WRITTEN]
    path: str
    """The part, relative to the run dir (POSIX separators)."""
    sha256: str
    """sha256 of the part's bytes."""
    size: int = Field(ge=0)
    """Its size in bytes."""
    n_rows: int = Field(ge=0)
    """Rows it holds."""


class QuarantinedEvent(EventBase):
    """``capevolve quarantine`` moved files that failed verification aside."""

    kind: Literal[EventKind.QUARANTINED]
    moved: dict[str, str]
    """Each moved file (relative to the run dir) and where it went."""
    problems: list[str]
    """The verification problems that were found, one line each."""
    reset_events: bool = False
    """Whether events.jsonl itself was set aside and restarted (its history kept aside)."""


class CompactedPart(BaseModel):
    """One Parquet part written by a compaction (as a ``part_written`` event records it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    """The part, relative to the run dir (POSIX separators)."""
    sha256: str
    """sha256 of the part's bytes."""
    size: int = Field(ge=0)
    """Its size in bytes."""
    n_rows: int = Field(ge=0)
    """Rows it holds."""


class PartsCompacted(EventBase):
    """An evaluation's parts were compacted: ``parts`` are recorded and ``retired`` are not
    parts any more, in this one line (capevolve._store.rollouts.compact)."""

    kind: Literal[EventKind.PARTS_COMPACTED]
    eval_id: str
    """The evaluation whose parts were compacted."""
    parts: list[CompactedPart] = Field(min_length=1)
    """The new parts, each holding rows of the retired ones in their order."""
    retired: list[str] = Field(min_length=1)
    """The parts they replace (relative to the run dir), removed from disk after this line."""


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
    EventKind.NO_CHANGE: NoChangeEvent,
    EventKind.PART_WRITTEN: PartWritten, EventKind.QUARANTINED: QuarantinedEvent,
    EventKind.PARTS_COMPACTED: PartsCompacted,
}
"""The kinds capevolve records itself, and their models (a user may not log these)."""

_LIBRARY_VALUES = frozenset(k.value for k in LIBRARY_EVENTS)

USER_KINDS_BUILTIN = frozenset({EventKind.NOTE.value})
"""User kinds every run accepts without registration."""

Event = (RunCreated | SnapshotEvent | EvalStarted | EvalFinished | GateEvent | AcceptEvent
         | RejectEvent | SetBestEvent | SpendEvent | FinalizeStarted | Finalized
         | DiagnosisAnnotated | TamperEvent | NoChangeEvent | PartWritten
         | QuarantinedEvent | PartsCompacted | UserEvent)


def parse_event(data: Any, source: str) -> Event:
    """One line of events.jsonl as its model (a library kind's, else UserEvent)."""
    kind = check_version(data, source).get("kind")
    model: type[EventBase] = UserEvent
    if isinstance(kind, str) and kind in _LIBRARY_VALUES:
        model = LIBRARY_EVENTS.get(EventKind(kind), UserEvent)
    return parse_record(model, data, source)  # type: ignore[return-value]
