"""The gate rule applied to stored evaluations: records plus what their rows cover.

:func:`capevolve._policy.gateable.gate_refusal` is the rule; this module feeds it the
split's task ids and the (task, trial) units the evaluation's stored rows hold, so every
decision path (gate, accept, finalize, confirm) refuses a probe, a screen, a confirm-only
trial range, a task subset, or a record hand-edited to claim otherwise.
"""

from __future__ import annotations

from capevolve._policy.gateable import StoredUnits, gate_refusal
from capevolve._store.evals import load_eval
from capevolve._store.rollouts.evalrows import eval_rows
from capevolve._store.rundir import RunDir
from capevolve.errors import GateError
from capevolve.records import EvalRecord


def stored_units(run: RunDir, eval_id: str) -> StoredUnits:
    """The (task, trial) units the stored rows of ``eval_id`` cover (errored rows too):
    the evaluation's rows read once per content (:mod:`capevolve._store.rollouts.evalrows`,
    the same deduplicated ``rollouts`` view), not a query per gate."""
    return StoredUnits.of(eval_rows(run.layout, eval_id).done_units())


def refusal(run: RunDir, record: EvalRecord, *, allow_incomplete: bool = False) -> str | None:
    """Why ``record`` cannot decide anything, from the record and its stored rows."""
    return gate_refusal(record, run.splits.ids(record.split), stored_units(run, record.eval_id),
                        allow_incomplete=allow_incomplete)


def require_gateable(run: RunDir, record: EvalRecord, verb: str, *,
                     allow_incomplete: bool = False) -> EvalRecord:
    """``record`` when it may decide; else GateError saying why (``verb`` refused)."""
    why = refusal(run, record, allow_incomplete=allow_incomplete)
    if why:
        raise GateError(f"{verb} refused: {why}; only a complete full-split evaluation of "
                        "purpose gate can be gated, accepted, confirmed against or finalized")
    return record


def require_gateable_id(run: RunDir, eval_id: str, verb: str) -> EvalRecord:
    """:func:`require_gateable` of the stored record ``eval_id``."""
    return require_gateable(run, load_eval(run, eval_id), verb)
