"""Score the best candidate and the seed on the held-out test split, exactly once; an incomplete
or incomparable side leaves the comparison not measured.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import ExitStack
from typing import Any

from capevolve._engine.contract import Engine
from capevolve._loop import models_pin
from capevolve._loop.evaluate import evaluate
from capevolve._loop.gate_evals import gateable_val
from capevolve._loop.status import finalize_progress as progress  # noqa: F401 - re-exported
from capevolve._loop.status import run_warnings
from capevolve._policy import verdict as rule
from capevolve._store import jsonfiles, ledger, seal
from capevolve._store.evals_means import with_task_means
from capevolve._store.integrity import sha256_file
from capevolve._store.rollouts.query import RolloutStore
from capevolve._store.rundir import RunDir, utc_now
from capevolve.errors import RunDirError, TestSealError
from capevolve.kinds import SEED_ID, EventKind, Split
from capevolve.records import EvalSummary, FinalizeEntry, FinalRecord, SealRecord, TestReuse
from capevolve.stats import paired_comparison, t_quantile

SUMMARY_KEYS = tuple(k for k in EvalSummary.model_fields if k != "format_version")


def paired_delta(best: Mapping[str, Any], baseline: Mapping[str, Any],
                 clusters: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Paired delta of best over baseline on common ``task_means``, with a t-based 95% CI (CR1
    SE under ``clusters``); None below 2 common tasks."""
    common = sorted(set(best["task_means"]) & set(baseline["task_means"]))
    empty = {"delta": None, "se": None, "ci95": None, "t": None, "p_value": None, "df": None,
             "n_clusters": None, "n_compared": len(common)}
    if len(common) < 2:
        return empty
    comparison = paired_comparison({t: best["task_means"][t] for t in common},
                                   {t: baseline["task_means"][t] for t in common},
                                   clusters or None)
    ci = None
    if comparison.se is not None:
        half = 0.0 if comparison.se == 0 else t_quantile(0.975, comparison.df) * comparison.se
        ci = [comparison.delta - half, comparison.delta + half]
    return {**empty, "delta": comparison.delta, "se": comparison.se, "t": comparison.t,
            "p_value": comparison.p_value, "df": comparison.df, "ci95": ci,
            "n_clusters": comparison.n_clusters}


def val_gain(run: RunDir, best_id: str) -> float | None:
    """The paired val delta of ``best_id`` over the seed (None for the seed or without one)."""
    if best_id == SEED_ID:
        return None
    best, seed_eval = (gateable_val(run, c) for c in (best_id, SEED_ID))
    if best is None or seed_eval is None:
        return None
    return paired_delta(with_task_means(run, best), with_task_means(run, seed_eval))["delta"]


class SeedIsBest(TestSealError):
    """finalize refused: the best is the seed (no gain to confirm)."""


def seed_refusal(run: RunDir) -> str | None:
    """Why finalize would refuse without ``spend_test_ids`` (None: the best is an edit)."""
    if run.best_id != SEED_ID or run.layout.seal.is_file():
        return None  # a finalize in progress resumes whatever its seal names
    return ("finalize refused: the best is the seed (nothing was accepted), so test has no "
            "gain to confirm and scoring it would only use up the project's test ids; the "
            "run stays open. Pass --spend-test-ids to score the seed anyway (the test ids "
            "then count as used)")


def finalize(run: RunDir, engine: Engine | None = None, *,
             spend_test_ids: bool = False) -> dict[str, Any]:
    """Burn the seal, score best and seed on test and write final.json (returned), once per run;
    a seed best is refused (SeedIsBest) unless ``spend_test_ids``."""
    why = None if spend_test_ids else seed_refusal(run)
    if why is not None:
        raise SeedIsBest(why)
    taken = seal.burn(run.layout, best_id=run.best_id, baseline_id=SEED_ID)
    with ExitStack() as held:
        try:
            held.enter_context(run.locked())
        except RunDirError:  # another command writes this run: nothing was scored yet
            seal.abandon(run.layout)
            raise
        try:
            return _finalize(run, engine, taken)
        finally:
            seal.release(run.layout)  # a failed finalize lets a retry judge the seal by its rows
    raise AssertionError("unreachable")  # pragma: no cover


def _finalize(run: RunDir, engine: Engine | None, taken: SealRecord) -> dict[str, Any]:
    best_id = str(taken.best_id)
    if run.events(EventKind.FINALIZED):
        raise TestSealError(f"{run.layout.events}: the run was already finalized (a finalized "
                            "event); the test split is scored once")
    test_ids = run.splits.ids(Split.TEST)
    entry = FinalizeEntry(test_ids_sha256=ledger.ids_digest(test_ids),
                          test_ids=sorted(test_ids), run_id=run.run_id, run_dir=str(run.root),
                          run_created_at=run.manifest.created_at, best_id=best_id,
                          started_at=utc_now())
    reuse = ledger.record(run.manifest.project_dir, entry)  # before any test rollout is run
    run.record(EventKind.FINALIZE_STARTED, best_id=best_id)
    baseline_id = str(taken.baseline_id or SEED_ID)
    best = evaluate(run, best_id, Split.TEST, engine=engine, allow_test=True)
    baseline = best if best_id == baseline_id else evaluate(
        run, baseline_id, Split.TEST, engine=engine, allow_test=True)
    best, baseline = with_task_means(run, best), with_task_means(run, baseline)
    incomparable = None if best is baseline else models_pin.pooled_refusal(
        RolloutStore(run.layout), [best["eval_id"]], [baseline["eval_id"]])
    final = final_record(best_id, best, baseline, test_ids, val_gain(run, best_id), reuse,
                         entry.test_ids_sha256, incomparable)
    final = final.model_copy(update={"containment": run_warnings(run)})
    jsonfiles.write_atomic(run.layout.final, final.to_json())
    seal.complete(run.layout, taken)
    run.record(EventKind.FINALIZED, best_id=best_id, delta=final.delta,
                final_sha256=sha256_file(run.layout.final))
    return final.to_json()


def final_record(best_id: str, best: Mapping[str, Any], baseline: Mapping[str, Any],
                 test_ids: tuple[str, ...] | list[str], val_delta: float | None,
                 reuse: TestReuse | None, test_ids_sha256: str,
                 incomparable: str | None = None) -> FinalRecord:
    """final.json from the two test evaluation records; ``incomparable`` makes the comparison
    not measured."""
    sides = [rule.TestSide(e["eval_id"], e["status"], e.get("incomplete_reason"),
                           e.get("task_means") or {}) for e in (best, baseline)]
    gap = rule.missing(sides, test_ids)
    if incomparable:
        gap.incomplete[str(best["eval_id"])] = f"not comparable: {incomparable}"
    clusters = best.get("clusters") or baseline.get("clusters")
    numbers: dict[str, Any] = {
        "n_compared": len(set(sides[0].task_means) & set(sides[1].task_means))}
    if not gap:
        numbers = paired_delta(best, baseline, clusters)
    ci = numbers.get("ci95")
    kind = rule.verdict(best_id, SEED_ID, gap, (float(ci[0]), float(ci[1])) if ci else None)
    return FinalRecord.model_validate({
        "best_id": best_id, "baseline_id": SEED_ID,
        "test": _summary(best), "test_baseline": _summary(baseline), **numbers,
        "verdict": kind, "verdict_text": rule.sentence(kind, val_delta, numbers.get("delta")),
        "missing": gap.describe(), "val_delta": val_delta,
        "test_ids_sha256": test_ids_sha256, "test_reuse": reuse})


def _summary(record: Mapping[str, Any]) -> EvalSummary:
    return EvalSummary.model_validate({k: record[k] for k in SUMMARY_KEYS if k in record})
