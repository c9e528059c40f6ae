"""A run at a glance, for ``capevolve status``; never writes into the run dir nor locks it."""

from __future__ import annotations

from typing import Any

from capevolve._loop.containment import NOT_CONTAINED
from capevolve._loop.false_accepts import false_accept_ledger
from capevolve._loop.frozen_config import run_config
from capevolve._loop.gate_evals import gateable_val
from capevolve._loop.loop_status import loop_status, stop_parse
from capevolve._loop.model_spend import model_spend
from capevolve._loop.standing import standings
from capevolve._policy import budget
from capevolve._store import seal
from capevolve._store.documents import read_final
from capevolve._store.evals import all_evals, displayed_status, eval_id_for
from capevolve._store.journal.pending import unsettled
from capevolve._store.rundir import RunDir
from capevolve.kinds import SEED_ID, EventKind, SealStatus, Split
from capevolve.records import EvalRecord

EVAL_KEYS = ("eval_id", "candidate_id", "split", "status", "mean", "stderr", "n_tasks",
             "n_scored", "n_errors", "n_trials", "coverage", "excluded", "excluded_reasons")


def evaluations(run: RunDir) -> list[dict[str, Any]]:
    """Every evaluation's summary fields, in start order (``interrupted``: its process is gone)."""
    return [{**_summary(r), "status": str(displayed_status(run, r))} for r in all_evals(run)]


def _summary(record: EvalRecord) -> dict[str, Any]:
    """The EVAL_KEYS fields of a record (dumping only those: per-task fields are large)."""
    data = record.model_dump(mode="json", include=set(EVAL_KEYS))
    return {k: data[k] for k in EVAL_KEYS}


def decisions(run: RunDir) -> list[dict[str, Any]]:
    """Gate, accept and reject events in log order."""
    kinds = {EventKind.GATE, EventKind.ACCEPT, EventKind.REJECT}
    return [e.to_json() for e in run.events() if e.kind in kinds]


def run_status(run: RunDir) -> dict[str, Any]:
    """Everything ``capevolve status`` shows."""
    config = run_config(run)
    spent = run.spent
    stall = budget.stall_count(run.events())
    best_eval = gateable_val(run, run.best_id, rows=False)
    kept = standings(run)
    by_role = budget.spend_by_role(run.events())
    return {
        "run_dir": str(run.root), "run_id": run.run_id, "project": config.name,
        "best_id": run.best_id,
        "best_val": {k: best_eval.to_json()[k] for k in ("eval_id", "mean", "stderr",
                                                         "n_scored")}
        if best_eval else None,
        "best_standing": kept.get(str(run.best_id)), "standings": kept,
        "spent": spent.to_dict(), "budget": config.budget.model_dump(),
        "budget_left": budget.remaining(config.budget, spent),
        "budget_exhausted": budget.exhausted(config.budget, spent, stall),
        "spent_by_role": by_role,
        "model_spend": model_spend(run, by_role.get("optimizer")),
        "unsettled_units": unsettled(run.layout),  # dispatched, not yet in "spent"
        "stall": stall, "stop_condition": config.stop_condition,
        "candidates": run.candidate_ids(), "evaluations": evaluations(run),
        "finalized": run.layout.final.is_file(), "final": _final(run),
        "gates": false_accept_ledger(run).to_dict(),
        "stop": stop_parse(config.stop_condition), "optimize": loop_status(run),
        "containment": run_warnings(run),
    }


def run_warnings(run: RunDir) -> list[str]:
    """What candidate code could do: the config's opt-out plus each evaluation's warnings."""
    found = ([NOT_CONTAINED] if run_config(run).engine.isolation == "none" else [])
    for record in all_evals(run):
        found += record.containment
    return list(dict.fromkeys(found))


def _final(run: RunDir) -> dict[str, Any] | None:
    """final.json's verdict and test reuse; a running or interrupted finalize's progress
    (``interrupted``); None before finalize."""
    if not run.layout.final.is_file():
        text = finalize_progress(run)
        if text is None:
            return None
        return {"verdict": "not_measured", "verdict_text": text, "delta": None,
                "ci95": None, "missing": [text], "test_reuse": None, "interrupted": True}
    final = read_final(run.layout)
    return {"verdict": str(final.verdict), "verdict_text": final.verdict_text,
            "delta": final.delta, "ci95": final.ci95, "missing": final.missing,
            "test_reuse": final.test_reuse.message if final.test_reuse else None}


def finalize_progress(run: RunDir) -> str | None:
    """How many test units an unfinished finalize has scored, in words; None before finalize or
    once complete."""
    taken = seal.read_seal(run.layout)
    if taken is None or taken.status == SealStatus.COMPLETE or run.layout.final.is_file():
        return None
    from capevolve._store.rollouts.evalrows import eval_rows  # DuckDB: only for this count

    trials = run_config(run).num_trials
    sides = {str(taken.best_id), str(taken.baseline_id or SEED_ID)}
    total = len(run.splits.ids(Split.TEST)) * trials * len(sides)
    scored = sum(len(eval_rows(run.layout, eval_id_for(Split.TEST, side, trials))
                     .done_units(valid_only=True))
                 for side in sorted(sides))
    if seal.holder_alive(run.layout):
        return f"finalize running: {scored} of {total} test units scored"
    return (f"finalize interrupted: {scored} of {total} test units scored; rerun finalize to "
            "complete")
