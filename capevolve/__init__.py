"""capevolve: evolve the capabilities of LLM agents and measure every edit honestly.

The public API is exactly ``__all__``, loaded on first use; ``_`` modules are internal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from capevolve.errors import (
    AdapterError,
    BudgetError,
    CandidateError,
    CapevolveError,
    ConfigError,
    EngineError,
    GateError,
    RecordError,
    RunDirError,
    StoreError,
    TestSealError,
)

if TYPE_CHECKING:
    from capevolve._api import (
        accept,
        check_project,
        checkout,
        confirm,
        create_run,
        diagnose_candidate,
        doctor,
        estimate,
        evaluate,
        explore_gate,
        finalize,
        gate,
        gate_numbers,
        init_project,
        log_event,
        no_change,
        open_run,
        optimize_run,
        probe,
        quarantine,
        query,
        register_event_kind,
        reject,
        start_run,
        status,
        verify,
    )
    from capevolve._loop.public_run import RunDir
    from capevolve.adapter import Adapter, Rollout, Score, Task, ToolCall, TransientError
    from capevolve.kinds import (
        Confidence,
        Decision,
        EngineKind,
        EvalPurpose,
        EvalStatus,
        EventKind,
        GateMode,
        GatePolicy,
        Split,
        Standing,
        TestVerdict,
    )
    from capevolve.records import (
        Accepted,
        BudgetLeft,
        CandidateRecord,
        CandidateStanding,
        Checkout,
        ClusterReport,
        Confirmation,
        ConfirmTrials,
        DiagnosisRecord,
        Estimate,
        EvalLine,
        EvalRecord,
        Event,
        FinalLine,
        FinalRecord,
        GateLedger,
        GateNumbers,
        GateRecord,
        Handoff,
        IntRange,
        IterationLine,
        LoopLine,
        LoopSpend,
        MeanLine,
        ModelSpend,
        NoChange,
        OptimizeSummary,
        PerRollout,
        PlannedPower,
        ProbeResult,
        ProjectCheck,
        ProjectInit,
        ProposerSpend,
        Quarantine,
        Rejected,
        RoleSpend,
        RunManifest,
        RunProblem,
        RunStatus,
        Spent,
        StopParse,
        StopPredicate,
        UsdRange,
        UserEvent,
        Verification,
    )

__version__ = "0.1.0"

_KINDS = ("Confidence", "Decision", "EngineKind", "EvalPurpose", "EvalStatus", "EventKind",
          "GateMode", "GatePolicy", "Split", "Standing", "TestVerdict")
_ADAPTER = ("Adapter", "Rollout", "Score", "Task", "ToolCall", "TransientError")

# where each lazily loaded name lives, beside the verbs (lowercase: capevolve._api) and the
# records (the rest: capevolve.records); pydantic records load on first use: `--help` stays fast
_LAZY = {"RunDir": "capevolve._loop.public_run",
         **{n: "capevolve.adapter" for n in _ADAPTER},
         **{n: "capevolve.kinds" for n in _KINDS}}

_SUBPACKAGES = frozenset({"diagnose", "optimize", "stats"})

__all__ = [
    "Accepted",
    "Adapter",
    "AdapterError",
    "BudgetError",
    "BudgetLeft",
    "CandidateError",
    "CandidateRecord",
    "CandidateStanding",
    "CapevolveError",
    "Checkout",
    "ClusterReport",
    "Confidence",
    "ConfigError",
    "ConfirmTrials",
    "Confirmation",
    "Decision",
    "DiagnosisRecord",
    "EngineError",
    "EngineKind",
    "Estimate",
    "EvalLine",
    "EvalPurpose",
    "EvalRecord",
    "EvalStatus",
    "Event",
    "EventKind",
    "FinalLine",
    "FinalRecord",
    "GateError",
    "GateLedger",
    "GateMode",
    "GateNumbers",
    "GatePolicy",
    "GateRecord",
    "Handoff",
    "IntRange",
    "IterationLine",
    "LoopLine",
    "LoopSpend",
    "MeanLine",
    "ModelSpend",
    "NoChange",
    "OptimizeSummary",
    "PerRollout",
    "PlannedPower",
    "ProbeResult",
    "ProjectCheck",
    "ProjectInit",
    "ProposerSpend",
    "Quarantine",
    "RecordError",
    "Rejected",
    "RoleSpend",
    "Rollout",
    "RunDir",
    "RunDirError",
    "RunManifest",
    "RunProblem",
    "RunStatus",
    "Score",
    "Spent",
    "Split",
    "Standing",
    "StopParse",
    "StopPredicate",
    "StoreError",
    "Task",
    "TestSealError",
    "TestVerdict",
    "ToolCall",
    "TransientError",
    "UsdRange",
    "UserEvent",
    "Verification",
    "accept",
    "check_project",
    "checkout",
    "confirm",
    "create_run",
    "diagnose_candidate",
    "doctor",
    "estimate",
    "evaluate",
    "explore_gate",
    "finalize",
    "gate",
    "gate_numbers",
    "init_project",
    "log_event",
    "no_change",
    "open_run",
    "optimize_run",
    "probe",
    "quarantine",
    "query",
    "register_event_kind",
    "reject",
    "start_run",
    "status",
    "verify",
]


def __getattr__(name: str) -> Any:
    """Load a public name or subpackage on first access."""
    import importlib

    if name in _SUBPACKAGES:
        return importlib.import_module(f"capevolve.{name}")
    if name not in __all__:
        raise AttributeError(f"module 'capevolve' has no attribute {name!r}")
    home = _LAZY.get(name) or ("capevolve._api" if name[0].islower() else "capevolve.records")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
