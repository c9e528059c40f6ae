"""``confirm``: K new trials on both sides of a kept move, pooled with the full-val trials, to
relabel it; never moves the best.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from capevolve._loop.decision_records import last_gate
from capevolve._loop.evaluate import evaluate
from capevolve._loop.frozen_config import run_config
from capevolve._loop.gate_evals import refusal, require_gateable, val_eval
from capevolve._loop.models_pin import pooled_refusal
from capevolve._loop.policy_inputs import trial_means
from capevolve._policy.gate.confirm import confirm_numbers
from capevolve._store import jsonfiles
from capevolve._store.evals import load_eval
from capevolve._store.rollouts.query import RolloutStore
from capevolve._store.rundir import RunDir, utc_now
from capevolve.config import GoalConfig
from capevolve.errors import GateError, RunDirError
from capevolve.kinds import Confidence, EvalPurpose, EvalStatus, EventKind, GoalDirection, Split
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


def _complete(record: EvalRecord, what: str) -> EvalRecord:
    if record.status != EvalStatus.COMPLETE:
        raise GateError(f"confirm refused: the val evaluation {record.eval_id} of {what} is "
                        f"incomplete ({record.incomplete_reason}); rerun confirm to resume it")
    return record


def _existing(run: RunDir, candidate_id: str, n_trials: int) -> EvalRecord:
    record = val_eval(run, candidate_id, n_trials)
    if record is None:
        raise GateError(f"confirm refused: {candidate_id!r} has no complete full-val "
                        f"evaluation with {n_trials} trials to pool with")
    return require_gateable(run, record, "confirm")


def _numbered(run: RunDir) -> list[tuple[int, Path]]:
    """The stored confirmations' files, by number."""
    return sorted((int(m.group(1)), p) for p in run.layout.confirmations.glob("*.json")
                  if (m := _NAME.match(p.name)))


def confirm(run: RunDir, candidate_id: str, trials: int | None = None,
            **evaluate_options: Any) -> dict[str, Any]:
    """Confirm ``candidate_id``'s move; returns the stored doc. GateError on an incomplete or
    incomparable evaluation."""
    config = run_config(run)
    extra = config.num_trials if trials is None else trials
    if extra < 1:
        raise GateError(f"confirm --trials {extra}: must be >= 1")
    run.candidate_meta(candidate_id)
    best_before, reference = run.best_id, _reference(run, candidate_id)
    base, sides = config.num_trials, (candidate_id, reference)
    existing = {c: _existing(run, c, base) for c in sides}
    fresh = {c: _complete(EvalRecord.model_validate(evaluate(
                 run, c, Split.VAL, n_trials=extra, first_trial=base,
                 purpose=EvalPurpose.CONFIRM, **evaluate_options)), c)
             for c in (reference, candidate_id)}
    if run.best_id != best_before:
        raise GateError("confirm: the best moved while confirming; run it again")
    store = RolloutStore(run.layout)
    incomparable = pooled_refusal(store, [existing[candidate_id].eval_id,
                                          fresh[candidate_id].eval_id],
                                  [existing[reference].eval_id, fresh[reference].eval_id])
    if incomparable:
        raise GateError(f"confirm refused: {incomparable}")
    pooled = {c: _pooled(store, existing[c], fresh[c], config.goal) for c in sides}
    numbers = confirm_numbers(pooled[candidate_id], pooled[reference], config.gate.min_delta)
    gate = last_gate(run, candidate_id, reference)
    doc = {"candidate_id": candidate_id, "reference_id": reference, "best_id": run.best_id,
           "extra_trials": extra, "metric": config.goal.metric,
           "trials": {"existing": [0, base - 1], "new": [base, base + extra - 1]},
           "evals": {c: [existing[c].eval_id, fresh[c].eval_id] for c in sides},
           "pooled_trial_means": pooled, **numbers,
           "label_before": gate.confidence if gate else None,
           "tentative": numbers["confidence"] != Confidence.SIGNIFICANT,
           "confirmed_at": utc_now()}
    with run.locked():
        found = _numbered(run)
        path = run.layout.confirmations / f"{found[-1][0] + 1 if found else 1}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        jsonfiles.write_atomic(path, doc)
    return {**doc, "path": str(path)}


def _pooled(store: RolloutStore, existing: EvalRecord, fresh: EvalRecord,
            goal: GoalConfig) -> list[float]:
    """Per-trial means (direction applied) over each evaluation's own trials; GateError on a gap."""
    sign = -1.0 if goal.direction == GoalDirection.MINIMIZE else 1.0
    out: list[float] = []
    for record in (existing, fresh):
        wanted = range(record.first_trial, record.first_trial + record.n_trials)
        means = trial_means(store, record.eval_id, goal.metric)
        missing = [k for k in wanted if k not in means]
        if missing:
            raise GateError(f"confirm refused: {record.eval_id} has no valid value of "
                            f"{goal.metric} on trial(s) {missing[:5]} (missing data)")
        out.extend(sign * means[k] for k in wanted)
    return out


def verified_label(run: RunDir, doc: Any) -> Confidence | None:
    """A stored confirmation's label recomputed from its rows; None unless each side has a
    gateable full-val evaluation and a complete confirm one right after it."""
    try:
        sides = (str(doc["candidate_id"]), str(doc["reference_id"]))
        pairs = [(load_eval(run, doc["evals"][c][0]), load_eval(run, doc["evals"][c][1]))
                 for c in sides]
    except (KeyError, IndexError, TypeError, RunDirError):
        return None
    config = run_config(run)
    for (old, new), side in zip(pairs, sides, strict=True):
        if old.candidate_id != side or new.candidate_id != side or refusal(run, old) \
                or new.purpose != EvalPurpose.CONFIRM or new.status != EvalStatus.COMPLETE \
                or new.first_trial != old.n_trials or new.split != Split.VAL:
            return None
    store = RolloutStore(run.layout)
    try:
        pooled = [_pooled(store, old, new, config.goal) for old, new in pairs]
    except GateError:
        return None
    return confirm_numbers(pooled[0], pooled[1], config.gate.min_delta)["confidence"]


def confirmations(run: RunDir) -> list[tuple[str, str, Confidence]]:
    """(candidate, reference, recomputed label) of each stored confirmation that checks out."""
    out = []
    for _, path in _numbered(run):
        try:
            doc = jsonfiles.read(path)
        except (OSError, ValueError):
            continue
        label = verified_label(run, doc) if isinstance(doc, dict) else None
        if label is not None:
            out.append((str(doc["candidate_id"]), str(doc["reference_id"]), label))
    return out
