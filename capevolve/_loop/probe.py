"""``probe``: evaluate a candidate on its targeted tasks only, and count the flips.

A probe is budgeted, stored and resumable, never gated, and never accepts anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from capevolve._engine.contract import Engine
from capevolve._loop.evaluate import evaluate
from capevolve._loop.frozen_config import run_config
from capevolve._loop.policy_inputs import target_tasks
from capevolve._policy.probe import failing_tasks, probe_outcome
from capevolve._policy.splits import refuse_test
from capevolve._store.evals import latest_complete_eval
from capevolve._store.rollouts.task_rows import task_rows
from capevolve._store.rundir import RunDir
from capevolve.errors import ConfigError, GateError
from capevolve.kinds import EvalPurpose, EvalStatus, Split
from capevolve.records import EvalRecord


def _targets(run: RunDir, split: Split, best_rows: dict[str, list[float]], threshold: float,
             tasks: Sequence[str] | None, cluster: str | None,
             failing: bool) -> tuple[str, list[str]]:
    """(how the targets were chosen, their ids); exactly one way must be given."""
    given = [name for name, on in (("--tasks", tasks is not None),
                                   ("--cluster", cluster is not None),
                                   ("--failing", failing)) if on]
    if len(given) != 1:
        raise ConfigError("probe: give exactly one of --tasks, --cluster or --failing"
                          + (f" (got {', '.join(given)})" if given else ""))
    if tasks is not None:
        return "tasks", list(tasks)
    if cluster is not None:
        ids = target_tasks(run, cluster, split, "--cluster")
        if not ids:
            raise ConfigError(f"probe --cluster {cluster!r}: it holds no task of {split}")
        return f"cluster {cluster}", ids
    ids = failing_tasks(best_rows, run.splits.ids(split), threshold)
    if not ids:
        raise ConfigError(f"probe --failing: the best {run.best_id!r} fails no task of "
                          f"{split}: there is nothing to flip")
    return "failing", ids


def _reference(run: RunDir, split: Split) -> EvalRecord:
    best = str(run.best_id)
    record = latest_complete_eval(run, best, split)
    if record is None:
        raise GateError(f"probe: the best {best!r} has no complete evaluation on {split} to "
                        f"compare with; run `capevolve evaluate --candidate {best} --split "
                        f"{split}` first")
    return record


def probe(run: RunDir, candidate: str | Path, *, tasks: Sequence[str] | None = None,
          cluster: str | None = None, failing: bool = False, split: str = "val",
          engine: Engine | None = None) -> dict[str, Any]:
    """Probe ``candidate`` on its targets; the outcome from both evaluations' stored rows."""
    split = refuse_test(split, "probe")
    threshold = run_config(run).gate.pass_threshold
    reference = _reference(run, split)
    best_rows = task_rows(run.layout, reference.eval_id).rewards()
    how, ids = _targets(run, split, best_rows, threshold, tasks, cluster, failing)
    record = EvalRecord.model_validate(evaluate(
        run, candidate, split, tasks=ids, n_trials=reference.n_trials,
        purpose=EvalPurpose.PROBE, engine=engine))
    result = probe_outcome(task_rows(run.layout, record.eval_id).rewards(), best_rows,
                           sorted(set(ids) - set(record.excluded_tasks)), threshold)
    if record.status != EvalStatus.COMPLETE:  # missing data kills nothing
        result.update(suggestion=None, reasoning=f"{result['reasoning']}; the probe is "
                      f"incomplete ({record.incomplete_reason}): rerun it before reading it")
    return {**result, "candidate_id": record.candidate_id, "best_id": run.best_id,
            "split": str(split), "targeted_by": how, "eval_id": record.eval_id,
            "reference_eval": reference.eval_id, "purpose": str(EvalPurpose.PROBE),
            "status": str(record.status), "n_trials": record.n_trials,
            "excluded": sorted(set(ids) & set(record.excluded_tasks)),
            "units_run": record.units_run, "gateable": False}
