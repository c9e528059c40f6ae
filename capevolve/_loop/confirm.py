"""``confirm``: more trials for a kept move, pooled, to relabel its confidence.

``confirm(run, C, trials=K)`` compares C with its reference: the best C was accepted over
when C is the best (its accept's ``previous_best``), else the current best. Both are
evaluated on full val back to back with num_trials + K trials; the K trials past num_trials
run on new seeds (rollout seeds derive from the trial index), shared by both sides, and are
pooled with each side's existing num_trials evaluation (``capevolve._policy.confirm``).
The result is stored as ``confirmations/<n>.json`` with the label before (the last gate's)
and after, and is never a basis for moving the best: which candidate is best is unchanged
(checked before and after). The goal's metric must be the reward (score parts are not
pooled per trial); an incomplete evaluation refuses the confirmation (missing data).
"""

from __future__ import annotations

import re
from typing import Any

from capevolve._loop.decision_records import last_gate
from capevolve._loop.evaluate import evaluate, latest_eval, run_config
from capevolve._policy.confirm import confirm_numbers
from capevolve._store import jsonfiles
from capevolve._store.rundir import RunDir, utc_now
from capevolve.errors import GateError
from capevolve.kinds import Confidence, EvalStatus, EventKind, GoalDirection, Split
from capevolve.records import AcceptEvent, EvalRecord

_NAME = re.compile(r"^(\d+)\.json$")


def _reference(run: RunDir, candidate_id: str) -> str:
    if candidate_id != run.best_id:
        return str(run.best_id)
    accepts = [e for e in run.events(EventKind.ACCEPT)
               if isinstance(e, AcceptEvent) and e.candidate_id == candidate_id]
    if not accepts or accepts[-1].previous_best is None:
        raise GateError(f"confirm: {candidate_id!r} is the best without an accept over "
                        "another candidate: there is no move to confirm")
    return accepts[-1].previous_best


def _complete(record: EvalRecord | None, what: str) -> EvalRecord:
    if record is None or record.status != EvalStatus.COMPLETE:
        why = "missing" if record is None else f"incomplete ({record.incomplete_reason})"
        raise GateError(f"confirm refused: the val evaluation of {what} is {why}")
    return record


def _trial_means(record: EvalRecord, first: int, sign: float) -> list[float]:
    return [sign * v for k, v in sorted(record.run_means.items(), key=lambda kv: int(kv[0]))
            if int(k) >= first]


def _next_path(run: RunDir) -> Any:
    folder = run.root / "confirmations"
    numbers = [int(m.group(1)) for p in folder.glob("*.json") if (m := _NAME.match(p.name))] \
        if folder.is_dir() else []
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{max(numbers, default=0) + 1}.json"


def confirm(run: RunDir, candidate_id: str, trials: int | None = None,
            **evaluate_options: Any) -> dict[str, Any]:
    """Confirm ``candidate_id``'s move (see the module docstring); returns the stored doc."""
    config = run_config(run)
    if config.goal.metric != "reward":
        raise GateError(f"confirm: goal metric {config.goal.metric!r} is a score part; "
                        "confirmation pools per-trial reward means only")
    extra = config.num_trials if trials is None else trials
    if extra < 1:
        raise GateError(f"confirm --trials {extra}: must be >= 1")
    run.candidate_meta(candidate_id)
    best_before, reference = run.best_id, _reference(run, candidate_id)
    base = config.num_trials
    existing = {c: _complete(latest_eval(run, c, Split.VAL, n_trials=base), c)
                for c in (candidate_id, reference)}
    fresh = {c: _complete(EvalRecord.model_validate(
                 evaluate(run, c, Split.VAL, n_trials=base + extra, **evaluate_options)), c)
             for c in (reference, candidate_id)}
    if run.best_id != best_before:
        raise GateError("confirm: the best moved while confirming; run it again")
    sign = -1.0 if config.goal.direction == GoalDirection.MINIMIZE else 1.0
    pooled = {c: _trial_means(existing[c], 0, sign) + _trial_means(fresh[c], base, sign)
              for c in (candidate_id, reference)}
    numbers = confirm_numbers(pooled[candidate_id], pooled[reference], config.gate.min_delta)
    gate = last_gate(run, candidate_id, reference)
    doc = {"candidate_id": candidate_id, "reference_id": reference, "best_id": run.best_id,
           "extra_trials": extra, "evals": {c: [existing[c].eval_id, fresh[c].eval_id]
                                            for c in (candidate_id, reference)},
           "pooled_trial_means": pooled, **numbers.to_dict(),
           "label_before": gate.confidence if gate else None,
           "tentative": numbers.confidence != Confidence.SIGNIFICANT,
           "confirmed_at": utc_now()}
    with run.locked():
        path = _next_path(run)
        jsonfiles.write_atomic(path, doc)
    return {**doc, "path": str(path)}
