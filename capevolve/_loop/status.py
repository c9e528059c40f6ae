"""A run at a glance: best, spend against budget, stop condition, evaluations, decisions."""

from __future__ import annotations

from typing import Any

from capevolve._policy import budget
from capevolve._store import jsonfiles
from capevolve._loop.evaluate import latest_complete_eval, run_config
from capevolve.kinds import EventKind, Split
from capevolve._store.rundir import RunDir

EVAL_KEYS = ("eval_id", "candidate_id", "split", "status", "mean", "stderr", "n_tasks",
             "n_scored", "n_errors", "n_trials", "coverage")


def evaluations(run: RunDir) -> list[dict[str, Any]]:
    """Every evaluation record (summary fields), in the order they started."""
    records = [jsonfiles.read(p) for p in run.layout.evals.glob("*.json")]
    records.sort(key=lambda r: (r.get("started_at", ""), r["eval_id"]))
    return [{k: r.get(k) for k in EVAL_KEYS} for r in records]


def decisions(run: RunDir) -> list[dict[str, Any]]:
    """Gate, accept and reject events in log order."""
    kinds = {EventKind.GATE, EventKind.ACCEPT, EventKind.REJECT}
    return [e for e in run.events() if e["kind"] in kinds]


def run_status(run: RunDir) -> dict[str, Any]:
    """Everything ``capevolve status`` shows, computed from the run dir."""
    config = run_config(run)
    spent = run.spent
    stall = budget.stall_count(run.events())
    best_eval = latest_complete_eval(run, run.best_id, Split.VAL)
    return {
        "run_dir": str(run.root), "run_id": run.run_id, "project": config.name,
        "best_id": run.best_id,
        "best_val": {k: best_eval.get(k) for k in ("eval_id", "mean", "stderr", "n_scored")}
        if best_eval else None,
        "spent": spent.to_dict(), "budget": config.budget.model_dump(),
        "budget_left": budget.remaining(config.budget, spent),
        "budget_exhausted": budget.exhausted(config.budget, spent, stall),
        "stall": stall, "stop_condition": config.stop_condition,
        "candidates": run.candidate_ids(), "evaluations": evaluations(run),
        "finalized": run.layout.final.is_file(),
    }
