"""The gate rule (:func:`capevolve._policy.gateable.gate_refusal`) on stored evaluations, fed
their rows so that an edited record cannot pass.
"""

from __future__ import annotations

from capevolve._loop.frozen_config import run_config
from capevolve._policy.gateable import StoredUnits, gate_refusal
from capevolve._store.evals import latest_eval
from capevolve._store.rundir import RunDir
from capevolve.errors import GateError
from capevolve.kinds import EvalStatus, Split
from capevolve.records import EvalRecord


def val_eval(run: RunDir, candidate_id: str, n_trials: int | None = None, *,
             incomplete: bool = False) -> EvalRecord | None:
    """The candidate's full-val evaluation with ``n_trials`` (default: frozen), complete (or
    also incomplete), or None."""
    trials = run_config(run).num_trials if n_trials is None else n_trials
    statuses = (EvalStatus.COMPLETE, EvalStatus.INCOMPLETE) if incomplete \
        else (EvalStatus.COMPLETE,)
    return latest_eval(run, candidate_id, Split.VAL, n_trials=trials, statuses=statuses)


def gateable_val(run: RunDir, candidate_id: str, *, rows: bool = True) -> EvalRecord | None:
    """:func:`val_eval` when it may decide, else None; ``rows`` false checks only the record."""
    record = val_eval(run, candidate_id)
    if record is None:
        return None
    why = refusal(run, record) if rows else gate_refusal(record)
    return None if why else record


def stored_units(run: RunDir, eval_id: str) -> StoredUnits:
    """The tasks and trials ``eval_id``'s stored rows cover (errored rows too)."""
    from capevolve._store.rollouts.task_rows import task_rows  # Arrow: only when rows count

    rows = task_rows(run.layout, eval_id)
    return StoredUnits(frozenset(rows.tasks), rows.trials)


def refusal(run: RunDir, record: EvalRecord, *, allow_incomplete: bool = False) -> str | None:
    """Why ``record`` cannot decide (None: it can), from the record and its rows."""
    return gate_refusal(record, run.splits.ids(record.split), stored_units(run, record.eval_id),
                        allow_incomplete=allow_incomplete)


def require_gateable(run: RunDir, record: EvalRecord, verb: str, *,
                     allow_incomplete: bool = False) -> EvalRecord:
    """``record`` when it may decide; else GateError (``verb`` refused) saying why."""
    why = refusal(run, record, allow_incomplete=allow_incomplete)
    if why:
        raise GateError(f"{verb} refused: {why}; only a complete full-split evaluation of "
                        "purpose gate can be gated, accepted, confirmed against or finalized")
    return record
