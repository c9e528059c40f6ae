"""capevolve: evolve the capabilities of LLM agents and measure every edit honestly."""

from capevolve.adapter import Adapter, Rollout, Score, Task, ToolCall, TransientError
from capevolve.errors import (
    AdapterError,
    BudgetError,
    CandidateError,
    CapevolveError,
    ConfigError,
    EngineError,
    GateError,
    RunDirError,
    StoreError,
    TestSealError,
)
from capevolve._store.rundir import RunDir

__version__ = "0.1.0"

__all__ = [
    "Adapter",
    "AdapterError",
    "BudgetError",
    "CandidateError",
    "CapevolveError",
    "ConfigError",
    "EngineError",
    "GateError",
    "Rollout",
    "RunDir",
    "RunDirError",
    "Score",
    "StoreError",
    "Task",
    "TestSealError",
    "ToolCall",
    "TransientError",
]
