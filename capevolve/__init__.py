"""capevolve: evolve the capabilities of LLM agents and measure every edit honestly.

The public API is exactly ``__all__`` (locked by tests/test_public_api.py): the verbs
(:func:`create_run`, :func:`start_run`, :func:`evaluate`, :func:`gate` (and the
non-deciding :func:`explore_gate`, :func:`gate_numbers`), :func:`accept`, :func:`reject`,
:func:`finalize`, :func:`status`, :func:`diagnose`, :func:`query`, :func:`check_project`,
:func:`init_project`, :func:`doctor`, :func:`open_run`, :func:`verify`, :func:`quarantine`,
:func:`confirm`, :func:`no_change`, :func:`probe`),
the run directory (:class:`RunDir`), the adapter records and protocol, and the error tree
(:mod:`capevolve.errors`). Modules whose names start with ``_`` are internal and may change
without notice.

``capevolve.diagnose`` is at once the public subpackage and the verb: calling it diagnoses
(see :mod:`capevolve.diagnose.verb`); so is ``capevolve.optimize`` (the automated loop, see
:mod:`capevolve.optimize.verb`). ``import capevolve`` stays cheap: the verbs, and the
DuckDB, Arrow and SciPy code behind them, load on first use, and Ray only when a Ray engine
runs.
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
        confirm,
        create_run,
        doctor,
        evaluate,
        explore_gate,
        finalize,
        gate,
        gate_numbers,
        init_project,
        no_change,
        open_run,
        probe,
        quarantine,
        query,
        reject,
        start_run,
        status,
        verify,
    )
    from capevolve._loop.public_run import RunDir
    from capevolve.adapter import Adapter, Rollout, Score, Task, ToolCall, TransientError
    from capevolve.diagnose.verb import DiagnosePackage

    diagnose: DiagnosePackage  # the callable subpackage (see capevolve.diagnose.verb)
    from capevolve.optimize.verb import OptimizePackage

    optimize: OptimizePackage  # the callable subpackage (see capevolve.optimize.verb)

__version__ = "0.1.0"

_LAZY = {"RunDir": "capevolve._loop.public_run",
         **{n: "capevolve.adapter" for n in ("Adapter", "Rollout", "Score", "Task", "ToolCall",
                                            "TransientError")}}

_VERBS = frozenset({
    "accept", "check_project", "confirm", "create_run", "doctor", "evaluate", "explore_gate",
    "finalize", "gate", "gate_numbers", "init_project", "no_change", "open_run", "probe",
    "quarantine", "query", "reject", "start_run", "status", "verify",
})

__all__ = [
    "Adapter",
    "AdapterError",
    "BudgetError",
    "CandidateError",
    "CapevolveError",
    "ConfigError",
    "EngineError",
    "GateError",
    "RecordError",
    "Rollout",
    "RunDir",
    "RunDirError",
    "Score",
    "StoreError",
    "Task",
    "TestSealError",
    "ToolCall",
    "TransientError",
    "accept",
    "check_project",
    "confirm",
    "create_run",
    "diagnose",
    "doctor",
    "evaluate",
    "explore_gate",
    "finalize",
    "gate",
    "gate_numbers",
    "init_project",
    "no_change",
    "open_run",
    "optimize",
    "probe",
    "quarantine",
    "query",
    "reject",
    "start_run",
    "status",
    "verify",
]


def __getattr__(name: str) -> Any:
    """Load a verb from :mod:`capevolve._api` on first access (keeps the import cheap).

    ``diagnose`` is the :mod:`capevolve.diagnose` package, which is callable (the verb).
    """
    if name == "diagnose":
        import capevolve.diagnose

        return capevolve.diagnose
    if name == "optimize":
        import capevolve.optimize

        return capevolve.optimize
    if name in _LAZY:  # pydantic records load on first use (keeps `--help` fast)
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name in _VERBS:
        from capevolve import _api

        value = getattr(_api, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'capevolve' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
