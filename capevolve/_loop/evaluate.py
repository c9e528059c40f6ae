"""Evaluate a candidate on train or val: plan -> engine -> Parquet -> DuckDB -> stats.

A rerun resumes an incomplete evaluation and returns a complete one: never a luckier draw.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from capevolve import progress
from capevolve import telemetry as otel
from capevolve._engine import collector, make_engine
from capevolve._engine.contract import Engine, EvalJob
from capevolve._engine.plan import plan_units
from capevolve._loop import containment, models_pin, shared_budget
from capevolve._loop.eval_scope import EvalScope, resolve_scope
from capevolve._loop.frozen_config import run_config
from capevolve._loop.guard import EvaluationGuard
from capevolve._loop.intake import refuse_leaks, refuse_tampering, resolve_candidate
from capevolve._loop.session import Session
from capevolve._loop.summary import summary as _summary
from capevolve._policy import budget
from capevolve._policy.breaker import Breaker
from capevolve._policy.splits import refuse_test
from capevolve._project import fingerprint as project_fingerprint
from capevolve._project.loader import Project, load_project
from capevolve._project.scoreable import reason_counts
from capevolve._project.taskfile import TaskFileWriter, without_targets
from capevolve._project.tasks import SplitTasks, load_split_tasks
from capevolve._store.candidates import pack
from capevolve._store.evals import find_eval, write_eval
from capevolve._store.evals_means import write_task_means
from capevolve._store.journal import recover as journal
from capevolve._store.rollouts import compact as compaction
from capevolve._store.rollouts.evalrows import eval_rows
from capevolve._store.rollouts.query import quarantine_bad_parts
from capevolve._store.rollouts.schema import SCHEMA_VERSION
from capevolve._store.rundir import RunDir, utc_now
from capevolve.config import MAX_TRIALS, BudgetConfig, ProjectConfig
from capevolve.errors import BudgetError, Interrupted, RunDirError, StoreError
from capevolve.kinds import EvalPurpose, EvalStatus, EventKind, Split
from capevolve.records import EvalRecord

PAUSED = "paused at a look"
"""Begins the stop reason of an evaluation run with ``trials_now``."""


def run_project(run: RunDir) -> Project:
    """The run's project, with the run's frozen config."""
    return load_project(Path(run.manifest.project_dir), config=run_config(run))


def _job(run: RunDir, project: Project, eval_id: str, split: str, candidate_id: str,
         loaded: SplitTasks, adapter: Any) -> EvalJob:
    if loaded.missing:
        raise RunDirError(f"split {split}: tasks {loaded.missing[:5]} are no longer returned "
                          "by the adapter (the task set changed after the splits were frozen)")
    sees_target = containment.sees_target(adapter)
    worker_tasks = loaded.table if sees_target else without_targets(
        loaded.table, run.layout.root / "tasks" / "blind", split)
    files = pack(run.candidate_dir(candidate_id))
    agent_model = models_pin.agent_settings(run, files)
    return EvalJob(
        run_id=run.run_id, eval_id=eval_id, split=split, candidate_id=candidate_id,
        candidate_hash=run.candidate_meta(candidate_id).hash,
        candidate_files=files, tasks=worker_tasks,
        score_tasks=None if sees_target else loaded.table,
        agent_model=agent_model,
        project_root=str(project.root),
        adapter_spec=project.config.adapter, untrusted_roots=(str(run.layout.candidates),),
        schema_version=SCHEMA_VERSION,
        sandbox=containment.sandbox_spec(run, project, adapter, agent_model is not None),
    )


def evaluate(run: RunDir, candidate: str | Path, split: str, *, n_trials: int | None = None,
             tasks: Sequence[str] | None = None, first_trial: int = 0,
             purpose: EvalPurpose | str | None = None, target: str | None = None,
             engine: Engine | None = None, allow_test: bool = False,
             trials_now: int | None = None) -> dict[str, Any]:
    """Evaluate ``candidate`` (id or directory) on ``split``; returns the eval record.
    ``target`` (a census bucket or val cluster) is stored for the gate's audit; ``trials_now``
    runs only that many trials, leaving it incomplete."""
    split = Split(split) if allow_test else refuse_test(split, "evaluate")
    config = run_config(run)
    n_trials = n_trials or config.num_trials
    if n_trials < 1:
        raise RunDirError(f"evaluate: --n-trials must be >= 1, got {n_trials}")
    if n_trials > MAX_TRIALS:
        raise RunDirError(f"evaluate: --n-trials {n_trials} is above the cap of {MAX_TRIALS} "
                          "trials per task (the limit of num_trials)")
    scope = resolve_scope(run, split, tasks, first_trial, purpose, target)
    with run.locked(), run.serial:  # the bookkeeping of concurrent evaluations, one at a time
        journal.recover(run)  # what an evaluation that died left: its rows and its spend
        compaction.settle(run)  # a compaction that died; complete evaluations not compacted
        confirming = scope.purpose == EvalPurpose.CONFIRM and split == Split.VAL
        if not allow_test and not (confirming and run.finalized()):
            run.require_open("evaluate")  # confirm may add val trials to a closed run
        candidate_id = resolve_candidate(run, candidate)
        refuse_tampering(run, config, candidate_id)
        project = run_project(run)
        refuse_leaks(run, config, candidate_id, project.adapter())
        eval_id = scope.eval_id(split, candidate_id, n_trials)
        previous = find_eval(run, eval_id)
        scope = scope.resumed(previous)
        if previous is not None and previous.refused:
            raise RunDirError(f"evaluation {eval_id} was refused and never resumes "
                              f"({previous.refused}); snapshot the candidate in a new run")
        if previous and previous.status == EvalStatus.COMPLETE and _intact(run, previous):
            return previous.to_json()
        if not allow_test:  # confirming is not a decision: only the spending caps hold it
            reasons = budget.spending_exhausted(config.budget, run.spent) if confirming else \
                budget.exhausted(config.budget, run.spent, budget.stall_count(run.events()))
            if reasons:
                raise BudgetError(f"evaluate refused: budget exhausted ({'; '.join(reasons)})"
                                  "; run `capevolve finalize`")
        running = run.shared.setdefault("evaluating", set())
        if eval_id in running:  # another thread of this process is running it now
            raise RunDirError(f"evaluation {eval_id} is already running in this process")
        running.add(eval_id)
        try:
            return _execute(run, project, config, eval_id, split, candidate_id, n_trials, engine,
                            resumed=previous is not None,
                            limit=None if allow_test else config.budget, scope=scope,
                            trials_now=trials_now)
        finally:
            running.discard(eval_id)


def _execute(run: RunDir, project: Project, config: ProjectConfig, eval_id: str, split: Split,
             candidate_id: str, n_trials: int, engine: Engine | None, resumed: bool,
             limit: BudgetConfig | None, scope: EvalScope,
             trials_now: int | None) -> dict[str, Any]:
    verify_adapter_unchanged(run, project)
    quarantine_bad_parts(run.layout)
    selected = scope.select(run.splits.ids(split))
    # one pass over the adapter's tasks (a list or a stream): the split's streamed into a
    # task file the workers read and check (the driver holds no table), never as Task
    # objects, with their exclusions and cluster keys
    adapter = project.adapter()
    loaded = load_split_tasks(adapter, run.splits.ids(split), selected,
                              into=TaskFileWriter(run.layout.root / "tasks", str(split)))
    job = _job(run, project, eval_id, split, candidate_id, loaded, adapter)
    excluded = loaded.excluded
    task_ids = tuple(t for t in selected if t not in excluded)
    done = eval_rows(run.layout, eval_id).done_units(valid_only=resumed)
    paused = None
    if trials_now is not None and trials_now < n_trials:  # a look: the later trials wait
        start = scope.first_trial + trials_now
        done = {*done, *((t, k) for t in task_ids
                         for k in range(start, scope.first_trial + n_trials))}
        paused = f"{PAUSED} after {trials_now} of {n_trials} trials"
    units = plan_units(task_ids, n_trials, config.seed, done, first_trial=scope.first_trial)
    record = {"eval_id": eval_id, "candidate_id": candidate_id, "split": str(split),
              "n_trials": n_trials, "candidate_hash": job.candidate_hash,
              "status": EvalStatus.RUNNING, "started_at": utc_now(), **scope.fields(),
              "containment": containment.warnings(config, job.score_tasks is None),
              "sandbox_network": job.sandbox.network if job.sandbox else None}
    write_eval(run, EvalRecord.model_validate(record))
    run.record(EventKind.EVAL_STARTED, eval_id=eval_id, candidate_id=candidate_id,
                split=str(split), units=len(units), resumed=resumed)
    guard = EvaluationGuard(run, project)  # what candidate code might write meanwhile
    session = Session(run, eval_id, str(split), candidate_id)
    engine = engine or make_engine(config.engine)
    # one allowance across every evaluation of this run dispatching in this process
    allowance = shared_budget.allowance(run, limit, session.token, session.tally,
                                        len(units)) if limit else None
    n_units = len(task_ids) * n_trials
    watch = progress.Watch(eval_id, len(units))  # the command's live display, if any
    breaker = Breaker(config.models.breaker.failures)

    def sink(batch: Any) -> int | None:
        breaker.see_rows(batch)  # rows in the order they finished
        return session.sink(batch)

    def dispatch_limit(dispatched: int) -> tuple[int | None, str | None]:
        if breaker.reason:  # the endpoint keeps failing: stop dispatching
            return 0, breaker.reason
        return allowance(dispatched) if allowance else (None, None)

    def end() -> StoreError | None:
        with shared_budget.ending(run, session.token):
            return session.end(guard, record)

    try:
        # only the rollouts overlap other evaluations; the collector runs less often meanwhile
        with watch, run.serial.yielded(), collector.fewer_collections():
            report = engine.run(job, units, watch.sink(sink), dispatch_limit,
                                ledger=watch.ledger(session.ledger))
    except KeyboardInterrupt:
        end()
        raise Interrupted(f"interrupted: {session.on_disk(n_units)}"
                          "; rerun to resume") from None
    except StoreError as exc:
        failure: StoreError | None = end() or exc
    except BaseException:
        end()
        raise
    else:
        failure = end()
    if failure is not None:  # a write failed: the rows on disk stay for the resume
        raise StoreError(f"{failure}; {session.on_disk(n_units)}; "
                         "rerun to resume once the cause is fixed") from None
    stats, means, judge_lost = _summary(run, eval_id, task_ids, loaded.clusters or None,
                                        config.gate.pass_threshold)
    stats["task_means_file"] = write_task_means(run, eval_id, means.tasks, means.means,
                                                means.counts)
    del means
    stats.update(excluded=len(excluded), excluded_reasons=reason_counts(excluded),
                 excluded_tasks=excluded)
    why = breaker.reason or incomplete_reason(
        stats, n_units, config.gate.min_coverage, report.stop_reason or paused) \
        or _judge_unreachable(judge_lost)
    record.update(stats, status=EvalStatus.INCOMPLETE if why else EvalStatus.COMPLETE,
                  incomplete_reason=why, finished_at=utc_now(), units_run=session.tally.rows,
                  resumed=resumed, worker_restarts=report.worker_restarts)
    stored = EvalRecord.model_validate(record)
    write_eval(run, stored)
    run.record(EventKind.EVAL_FINISHED, eval_id=eval_id, candidate_id=candidate_id,
                split=str(split), status=stored.status, mean=stored.mean,
                stderr=stored.stderr, n_scored=stored.n_scored, purpose=stored.purpose,
                first_trial=stored.first_trial,
                subset_sha256=stored.task_subset.sha256 if stored.task_subset else None)
    compaction.compact_completed(run, stored)  # its many small parts become one
    otel.evaluation_spans(run, stored)  # no-op unless tracing is on
    return stored.to_json()


def _judge_unreachable(n: int) -> str | None:
    """Why judge-unreachable units make an evaluation incomplete (None for 0): missing data."""
    return (f"the judge was unreachable on {n} unit(s) (missing data, not a score); rerun "
            "to retry them") if n else None


def _intact(run: RunDir, record: EvalRecord) -> bool:
    """A complete evaluation still has all its rows (truncated parts are quarantined)."""
    quarantine_bad_parts(run.layout)
    return len(eval_rows(run.layout, record.eval_id).units) == record.n_rows


def incomplete_reason(stats: dict[str, Any], n_units: int, min_coverage: float,
                      stop_reason: str | None) -> str | None:
    """Why an evaluation is not a measurement (None when it is complete)."""
    if stats["n_rows"] < n_units:
        return (f"stopped early: {stop_reason}" if stop_reason
                else f"{n_units - stats['n_rows']} of {n_units} units not run")
    if stats["coverage"] < min_coverage:
        return (f"coverage {stats['coverage']:.2f} below {min_coverage:g}: most units errored "
                "(missing data, not a score); rerun to retry them")
    return None


def verify_adapter_unchanged(run: RunDir, project: Project) -> None:
    """RunDirError naming the first file the scores depend on that changed since the run began."""
    project_fingerprint.verify(project, run.manifest.fingerprint)

