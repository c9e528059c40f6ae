"""Score the best candidate and the seed on the held-out test split, exactly once."""

from __future__ import annotations

from typing import Any

from scipy.stats import t as student_t

from capevolve._store import jsonfiles
from capevolve._store import seal
from capevolve._engine.contract import Engine
from capevolve._loop.evaluate import evaluate
from capevolve.kinds import EventKind, Split
from capevolve.kinds import SEED_ID
from capevolve._store.rundir import RunDir
from capevolve.stats import paired_comparison

SUMMARY_KEYS = ("eval_id", "candidate_id", "mean", "stderr", "n_tasks", "n_scored",
                "n_errors", "n_trials", "coverage", "pass_k", "status")


def paired_delta(best: dict, baseline: dict) -> dict[str, Any]:
    """Paired test delta of best over baseline from two summaries' task means, with a
    t-based 95% CI (None where fewer than 2 tasks are scored on both sides)."""
    common = sorted(set(best["task_means"]) & set(baseline["task_means"]))
    if len(common) < 2:
        return {"delta": None, "se": None, "ci95": None, "t": None, "p_value": None,
                "n_compared": len(common)}
    comparison = paired_comparison({t: best["task_means"][t] for t in common},
                                   {t: baseline["task_means"][t] for t in common})
    if comparison.se is None or comparison.exact:
        half = 0.0
    else:
        half = float(student_t.ppf(0.975, comparison.df)) * comparison.se
    return {"delta": comparison.delta, "se": comparison.se, "t": comparison.t,
            "p_value": comparison.p_value, "n_compared": len(common),
            "ci95": [comparison.delta - half, comparison.delta + half]}


def finalize(run: RunDir, engine: Engine | None = None,
             address: str | None = None) -> dict[str, Any]:
    """Burn the seal, score best and seed on test, write final.json; once per run.

    The seal is taken before the run lock, so of two finalize processes the loser fails
    with TestSealError (not a lock error).
    """
    taken = seal.burn(run.layout, best_id=run.best_id, baseline_id=SEED_ID)
    with run.locked():
        return _finalize(run, engine, address, taken)


def _finalize(run: RunDir, engine: Engine | None, address: str | None,
              taken: dict[str, Any]) -> dict[str, Any]:
    best_id = taken["best_id"]
    run.log_event(EventKind.FINALIZE_STARTED, best_id=best_id)
    best = evaluate(run, best_id, Split.TEST, engine=engine, address=address, allow_test=True)
    baseline = best if best_id == SEED_ID else evaluate(
        run, SEED_ID, Split.TEST, engine=engine, address=address, allow_test=True)
    final = {"best_id": best_id, "baseline_id": SEED_ID,
             "test": {k: best.get(k) for k in SUMMARY_KEYS},
             "test_baseline": {k: baseline.get(k) for k in SUMMARY_KEYS},
             **paired_delta(best, baseline)}
    jsonfiles.write_atomic(run.layout.final, final)
    seal.complete(run.layout, taken)
    run.log_event(EventKind.FINALIZED, best_id=best_id, delta=final["delta"])
    return final
