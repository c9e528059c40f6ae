"""Versioned records of every document capevolve writes into a run dir.

Each document is a frozen pydantic v2 model that forbids unknown keys and non-finite
numbers, and carries ``format_version``. Reading goes through :func:`parse_record` (or
:func:`parse_event` for a line of ``events.jsonl``): a document whose version this
capevolve does not read, or that does not validate, is a one-line
:class:`~capevolve.errors.RunDirError` naming the file. Writing goes through the models
(``model_dump(mode="json")``), so what is stored is what validates.

Documents::

    run.json            RunManifest
    candidates/<id>/candidate.json   CandidateRecord
    evals/<eval_id>.json             EvalRecord
    evals/<eval_id>.means.parquet    its per-task means (TaskMeansFile in the record)
    events.jsonl        one Event per line (a model per EventKind; UserEvent for user kinds)
    state.json          StateRecord (a derived cache, never read back as truth)
    seal.json           SealRecord
    final.json          FinalRecord (with two EvalSummary)
    diagnoses/*.json    DiagnosisRecord (envelope typed; clusters and entries as data)
    <project>/.capevolve/finalizes.jsonl   one FinalizeEntry per finalize (with TestReuse)

The verbs that return no stored document return a :class:`Result` (``_results``). The models
live in ``_base`` (Record, Result, reading), ``_documents``, ``_events``, ``_results`` and
``_result_parts``; import
them from here.
"""

from capevolve.records._base import (
    EVENT_KIND_PATTERN,
    FORMAT_VERSION,
    JsonScalar,
    Record,
    Result,
    check_version,
    parse_record,
)
from capevolve.records._decisions import DecisionRecord
from capevolve.records._documents import (
    CandidateRecord,
    DiagnosisRecord,
    EvalRecord,
    EvalSummary,
    FinalizeEntry,
    FinalRecord,
    GateRecord,
    RunManifest,
    SealRecord,
    StateRecord,
    TaskMeansFile,
    TaskSubset,
    TestReuse,
)
from capevolve.records._events import (
    LIBRARY_EVENTS,
    USER_KINDS_BUILTIN,
    AcceptEvent,
    CompactedPart,
    DiagnosisAnnotated,
    EvalFinished,
    EvalStarted,
    Event,
    EventBase,
    Finalized,
    FinalizeStarted,
    GateEvent,
    NoChangeEvent,
    PartsCompacted,
    PartWritten,
    QuarantinedEvent,
    RejectEvent,
    RunCreated,
    SetBestEvent,
    SnapshotEvent,
    SpendEvent,
    TamperEvent,
    UserEvent,
    parse_event,
)
from capevolve.records._result_parts import (
    BudgetLeft,
    CandidateStanding,
    ConfirmTrials,
    FinalLine,
    GateLedger,
    IntRange,
    IterationLine,
    LoopLine,
    LoopSpend,
    MeanLine,
    ModelSpend,
    PerRollout,
    PlannedPower,
    ProposerSpend,
    RoleSpend,
    RunProblem,
    Spent,
    StopParse,
    StopPredicate,
    UsdRange,
)
from capevolve.records._results import (
    Accepted,
    Checkout,
    ClusterReport,
    Confirmation,
    Estimate,
    EvalLine,
    GateNumbers,
    Handoff,
    NoChange,
    OptimizeSummary,
    ProbeResult,
    ProjectCheck,
    ProjectInit,
    Quarantine,
    Rejected,
    RunStatus,
    Verification,
)

__all__ = [
    "ModelSpend",
    "RunProblem",
    "IntRange",
    "PerRollout",
    "PlannedPower",
    "UsdRange",
    "Checkout",
    "BudgetLeft",
    "CandidateStanding",
    "ConfirmTrials",
    "FinalLine",
    "GateLedger",
    "IterationLine",
    "LoopLine",
    "LoopSpend",
    "MeanLine",
    "ProposerSpend",
    "RoleSpend",
    "Spent",
    "StopParse",
    "StopPredicate",
    "Accepted",
    "ClusterReport",
    "Confirmation",
    "Estimate",
    "EvalLine",
    "GateNumbers",
    "Handoff",
    "NoChange",
    "OptimizeSummary",
    "ProbeResult",
    "ProjectCheck",
    "ProjectInit",
    "Quarantine",
    "Rejected",
    "Result",
    "RunStatus",
    "Verification",
    "DecisionRecord",
    "NoChangeEvent",
    "AcceptEvent",
    "CandidateRecord",
    "CompactedPart",
    "DiagnosisAnnotated",
    "DiagnosisRecord",
    "EVENT_KIND_PATTERN",
    "EvalFinished",
    "EvalRecord",
    "EvalStarted",
    "EvalSummary",
    "Event",
    "EventBase",
    "FORMAT_VERSION",
    "FinalRecord",
    "FinalizeEntry",
    "FinalizeStarted",
    "Finalized",
    "GateEvent",
    "GateRecord",
    "JsonScalar",
    "LIBRARY_EVENTS",
    "PartsCompacted",
    "PartWritten",
    "QuarantinedEvent",
    "Record",
    "RejectEvent",
    "RunCreated",
    "RunManifest",
    "SealRecord",
    "SetBestEvent",
    "SnapshotEvent",
    "SpendEvent",
    "StateRecord",
    "TamperEvent",
    "TaskMeansFile",
    "TaskSubset",
    "TestReuse",
    "USER_KINDS_BUILTIN",
    "UserEvent",
    "check_version",
    "parse_event",
    "parse_record",
]
