"""``no_change``: record an iteration whose change could not be scored; the best is kept and no
budget iteration is spent.
"""

from __future__ import annotations

from typing import Any

from capevolve._loop.decision_records import record_decision, settle
from capevolve._store import results
from capevolve._store.rundir import RunDir
from capevolve.errors import GateError
from capevolve.kinds import EventKind


def no_change(run: RunDir, reason: str, candidate_id: str | None = None) -> dict[str, Any]:
    """Record a no_change iteration; GateError for a blank reason."""
    if not isinstance(reason, str) or not reason.strip():
        raise GateError("no-change --reason: a non-empty reason is required (why the change "
                        "could not be scored)")
    with run.locked():
        run.require_open("no-change")
        if candidate_id is not None:
            run.candidate_meta(candidate_id)
        settle(run)  # a decision a crash left without its file keeps its number
        best = run.best_id
        number = results.next_number(run.root)
        run.record(EventKind.NO_CHANGE, best_id=best, reasoning=reason.strip(),
                    candidate_id=candidate_id, iteration=number)
        record = record_decision(run, "no_change", candidate_id)
    return {"decision": "no_change", "best_id": run.best_id, "candidate_id": candidate_id,
            "result": record.iteration, "reasoning": record.reasoning}


def record_once(run: RunDir, reason: str) -> None:
    """:func:`no_change` unless one with this reason is recorded (a resumed iteration records
    once)."""
    if not any(getattr(e, "reasoning", None) == reason.strip()
               for e in run.events(EventKind.NO_CHANGE)):
        no_change(run, reason)
