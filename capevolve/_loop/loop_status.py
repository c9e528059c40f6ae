"""What ``status`` and ``check`` show about the optimization loop. Read-only."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from capevolve._policy import budget
from capevolve._policy.stop import PLATEAU_WINDOW, parse_stop, plateau
from capevolve._store.iterations import LoopFiles
from capevolve._store.rundir import RunDir
from capevolve.records._optimize import IterationRecord


def stop_parse(stop_condition: str) -> dict[str, Any]:
    """The stop condition's predicates and unparsed clauses."""
    return parse_stop(stop_condition).to_dict()


def accept_flags(ledger: Sequence[IterationRecord]) -> list[bool]:
    """Accepted or not, per decided iteration (gated, or stopped at the first look)."""
    return [r.outcome == "accept" for r in ledger
            if r.gate is not None or (r.screen is not None and r.screen.split == "val")]


def loop_status(run: RunDir) -> dict[str, Any] | None:
    """The run's optimize loop at a glance (None without one)."""
    files = LoopFiles(run.root)
    loop = files.read_loop()
    ledger = files.read_ledger()
    if loop is None and not ledger:
        return None
    gated = accept_flags(ledger)
    return {"algorithm": (loop or {}).get("algorithm"), "proposer": (loop or {}).get("proposer"),
            "iterations": len(ledger),
            "outcomes": dict(sorted(Counter(str(r.outcome) for r in ledger).items())),
            "in_flight": [n for n in files.pending_iterations() if n > len(ledger)],
            "stopped": (loop or {}).get("stopped"),
            "optimizer_spend": budget.optimizer_spend(ledger),
            "plateau": plateau(gated, PLATEAU_WINDOW)}
