"""The public verbs: each does what the CLI command of the same name does and returns a typed
record. ``run`` is a :class:`RunDir` or a run directory's path; engine arguments pick only the
engine kind and Ray address."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capevolve._lazy import lazy_module
from capevolve._loop.public_run import RunDir, store_run
from capevolve._store.rundir import RunDir as StoreRunDir
from capevolve.config import load_config
from capevolve.errors import ConfigError
from capevolve.kinds import EngineKind, Split
from capevolve.records import (
    Accepted,
    Checkout,
    ClusterReport,
    Confirmation,
    DiagnosisRecord,
    Estimate,
    EvalRecord,
    FinalRecord,
    GateNumbers,
    GateRecord,
    Handoff,
    IterationLine,
    NoChange,
    OptimizeSummary,
    ProbeResult,
    ProjectCheck,
    ProjectInit,
    Quarantine,
    Rejected,
    RunStatus,
    UserEvent,
    Verification,
)

# The verbs' modules load when a verb first uses them; the checker sees eager imports.
# Keep both lists the same.
if TYPE_CHECKING:
    from capevolve._loop import checkout as checkouts
    from capevolve._loop import confirm as confirming
    from capevolve._loop import decide, engines, locate
    from capevolve._loop import estimate as estimating
    from capevolve._loop import evaluate as evaluating
    from capevolve._loop import finalize as finalizing
    from capevolve._loop import no_change as no_changes
    from capevolve._loop import probe as probing
    from capevolve._loop import project as projects
    from capevolve._loop import run as running
    from capevolve._loop import status as statuses
    from capevolve._loop import verify as verifying
    from capevolve._store.rollouts import query as rollout_query
else:
    confirming = lazy_module("capevolve._loop.confirm")
    decide = lazy_module("capevolve._loop.decide")
    engines = lazy_module("capevolve._loop.engines")
    estimating = lazy_module("capevolve._loop.estimate")
    locate = lazy_module("capevolve._loop.locate")
    checkouts = lazy_module("capevolve._loop.checkout")
    evaluating = lazy_module("capevolve._loop.evaluate")
    finalizing = lazy_module("capevolve._loop.finalize")
    no_changes = lazy_module("capevolve._loop.no_change")
    probing = lazy_module("capevolve._loop.probe")
    projects = lazy_module("capevolve._loop.project")
    running = lazy_module("capevolve._loop.run")
    statuses = lazy_module("capevolve._loop.status")
    verifying = lazy_module("capevolve._loop.verify")
    rollout_query = lazy_module("capevolve._store.rollouts.query")

RunLike = RunDir | str | os.PathLike[str]
"""An open :class:`RunDir`, or a run directory's path."""


def _split(value: Split | str) -> Split:
    """``value`` as a Split; ConfigError for an unknown name."""
    try:
        return Split(value)
    except ValueError:
        raise ConfigError(f"split {value!r}: expected train or val") from None


def run_dir_of(run: RunLike | StoreRunDir) -> StoreRunDir:
    """The internal run behind ``run`` (a path is opened and verified), for the verbs and the
    CLI's presenters."""
    if isinstance(run, RunDir):
        return store_run(run)
    return run if isinstance(run, StoreRunDir) else StoreRunDir.open(Path(run))


def open_run(run: RunLike) -> RunDir:
    """``run`` as a read-only RunDir; RunDirError if not a run."""
    return run if isinstance(run, RunDir) else RunDir(run_dir_of(run))


def init_project(directory: str | os.PathLike[str], *, kind: str = "adapter") -> ProjectInit:
    """Scaffold a ``kind`` (adapter or dataset) project in ``directory``; never overwrites."""
    return ProjectInit.model_validate(projects.init(Path(directory), kind))


def check_project(project: str | os.PathLike[str]) -> ProjectCheck:
    """Whether the project is runnable, with every problem in words."""
    return ProjectCheck.model_validate(projects.check(Path(project)))


def create_run(project: str | os.PathLike[str],
               run_dir: str | os.PathLike[str] | None = None) -> RunDir:
    """A new run dir: splits frozen, the seed snapshotted as the best."""
    return RunDir(running.create_run(Path(project), None if run_dir is None else Path(run_dir)))


def start_run(project: str | os.PathLike[str], run_dir: str | os.PathLike[str] | None = None,
              *, engine: EngineKind | str | None = None,
              address: str | None = None) -> Handoff:
    """:func:`create_run`, then score the seed on val."""
    config = load_config(Path(project))
    return Handoff.model_validate(running.start_run(
        Path(project), None if run_dir is None else Path(run_dir),
        engine=engines.engine_for(config.engine, engine, address)))


def evaluate(run: RunLike, candidate: str | os.PathLike[str], split: Split | str = Split.VAL,
             *, n_trials: int | None = None, tasks: Sequence[str] | None = None,
             first_trial: int = 0, purpose: str | None = None, target: str | None = None,
             engine: EngineKind | str | None = None,
             address: str | None = None) -> EvalRecord:
    """Evaluate ``candidate`` (an id, or a directory to snapshot) on train or val, resuming
    an incomplete evaluation; a subset (``tasks``, ``first_trial``, ``purpose``) never gates."""
    opened = run_dir_of(run)
    # Ray's import and join, and claiming the warm actors, overlap the checks below
    engines.join_early(opened, engine, address)
    return EvalRecord.model_validate(evaluating.evaluate(
        opened, os.fspath(candidate), _split(split), n_trials=n_trials, tasks=tasks,
        first_trial=first_trial, purpose=purpose, target=target,
        engine=engines.engine_for(opened.manifest.config.engine, engine, address)))


def gate(run: RunLike, candidate_id: str, *, n_trials: int | None = None,
         target: str | None = None, engine: EngineKind | str | None = None,
         address: str | None = None) -> GateRecord:
    """Gate ``candidate_id`` against the best on full val with the frozen settings and record
    it; missing data never rejects."""
    opened = run_dir_of(run)
    chosen = (None if engine is None and address is None  # None: the run's own, if needed
              else engines.engine_for(opened.manifest.config.engine, engine, address))
    return GateRecord.model_validate(decide.gate_candidate(
        opened, candidate_id, n_trials=n_trials, target=target, engine=chosen))


def explore_gate(run: RunLike, candidate_id: str, *, k_se: float | None = None,
                 mode: str | None = None, min_delta: float | None = None,
                 n_trials: int | None = None) -> GateRecord:
    """:func:`gate` with other settings: exploratory, never a basis for accept."""
    return GateRecord.model_validate(decide.gate_candidate(
        run_dir_of(run), candidate_id, k_se=k_se, mode=mode, min_delta=min_delta,
        n_trials=n_trials))


def gate_numbers(current: float, candidate: float, current_stderr: float,
                 candidate_stderr: float, *, k_se: float | None = None,
                 min_delta: float | None = None, run: RunLike | None = None) -> GateNumbers:
    """The gate of means and SEs computed elsewhere, unrecorded; GateError for a bad input."""
    frozen = run_dir_of(run).manifest.config.gate if run is not None else None
    return GateNumbers.model_validate(decide.gate_summary(
        current, candidate, current_stderr, candidate_stderr, k_se=k_se, min_delta=min_delta,
        frozen=frozen))


def accept(run: RunLike, candidate_id: str, note: str | None = None, *,
           target: str | None = None) -> Accepted:
    """Make ``candidate_id`` the best; refused unless its latest gate said accept."""
    return Accepted.model_validate(decide.accept(run_dir_of(run), candidate_id, note,
                                                 target=target))


def reject(run: RunLike, candidate_id: str, note: str | None = None) -> Rejected:
    """Record that ``candidate_id`` is rejected; the best stays."""
    return Rejected.model_validate(decide.reject(run_dir_of(run), candidate_id, note))


def confirm(run: RunLike, candidate_id: str, *, trials: int | None = None,
            engine: EngineKind | str | None = None, address: str | None = None
            ) -> Confirmation:
    """Pool ``trials`` more trials of both sides of a move; the best never moves."""
    opened = run_dir_of(run)
    chosen = engines.engine_for(opened.manifest.config.engine, engine, address)
    return Confirmation.model_validate(confirming.confirm(opened, candidate_id, trials,
                                                          engine=chosen))


def probe(run: RunLike, candidate: str | os.PathLike[str], *,
          tasks: Sequence[str] | None = None, cluster: str | None = None,
          failing: bool = False, split: Split | str = Split.VAL,
          engine: EngineKind | str | None = None,
          address: str | None = None) -> ProbeResult:
    """Count the best's targeted failures ``candidate`` flips; informational, never gated."""
    opened = run_dir_of(run)
    chosen = engines.engine_for(opened.manifest.config.engine, engine, address)
    return ProbeResult.model_validate(probing.probe(
        opened, os.fspath(candidate), tasks=tasks, cluster=cluster, failing=failing,
        split=_split(split), engine=chosen))


def no_change(run: RunLike, reason: str, candidate_id: str | None = None) -> NoChange:
    """Record an iteration whose change could not be scored; no iteration is spent."""
    return NoChange.model_validate(no_changes.no_change(run_dir_of(run), reason, candidate_id))


def diagnose_candidate(run: RunLike, candidate_id: str, split: Split | str = Split.VAL, *,
                       cluster: str = "root-cause", redact_gold: bool = False,
                       project: str | os.PathLike[str] | None = None) -> DiagnosisRecord:
    """Cluster ``candidate_id``'s failures on train or val, written in the run."""
    from capevolve.diagnose.diagnosis import DiagnoseOptions
    from capevolve.diagnose.diagnosis import diagnose as diagnose_run
    from capevolve.diagnose.kinds import ClusterMode as Mode

    if str(cluster) not in {m.value for m in Mode}:
        raise ConfigError(f"cluster {cluster!r}: expected one of "
                          f"{', '.join(m.value for m in Mode)}")
    options = DiagnoseOptions(split=str(_split(split)), tag=candidate_id, mode=Mode(cluster),
                              redact_gold=redact_gold,
                              project=None if project is None else Path(project))
    return DiagnosisRecord.model_validate(diagnose_run(run_dir_of(run), options))


def optimize_run(run: RunLike, *, algorithm: str | None = None, proposer: str | None = None,
                 iterations: int | None = None, parallel: int = 1, focus: str | None = None,
                 timeout_s: float = 900.0, finalize: bool = False, resume: bool = False,
                 engine: EngineKind | str | None = None, address: str | None = None,
                 on_iteration: Callable[[IterationLine], None] | None = None,
                 minibatch: int | None = None, spend_test_ids: bool = False) -> OptimizeSummary:
    """Run an optimization loop; ``on_iteration`` gets each recorded row. Bad settings
    raise ConfigError before any rollout."""
    from capevolve.optimize.loop import LoopSettings, run_loop
    from capevolve.optimize.summary import iteration_row

    opened = run_dir_of(run)
    settings = LoopSettings(algorithm=algorithm, proposer=proposer, iterations=iterations,
                            parallel=parallel, focus=focus, timeout_s=timeout_s,
                            finalize=finalize, resume=resume, minibatch=minibatch,
                            spend_test_ids=spend_test_ids)
    chosen = engines.engine_for(opened.manifest.config.engine, engine, address)

    def report(record: Any) -> None:
        if on_iteration is not None:
            on_iteration(IterationLine.model_validate(iteration_row(record)))

    return OptimizeSummary.model_validate(run_loop(opened, settings, chosen, report))


def finalize(run: RunLike, *, engine: EngineKind | str | None = None,
             address: str | None = None, spend_test_ids: bool = False) -> FinalRecord:
    """Score the best and the seed on test, once per run (TestSealError); while the best is
    the seed, only with ``spend_test_ids``."""
    opened = run_dir_of(run)
    return FinalRecord.model_validate(finalizing.finalize(
        opened, engine=engines.engine_for(opened.manifest.config.engine, engine, address),
        spend_test_ids=spend_test_ids))


def estimate(run: RunLike, *, iterations: int | None = None,
             finalize: bool = True) -> Estimate:
    """The run's planned rollouts, tokens and dollars, as a range; reads only."""
    return Estimate.model_validate(estimating.estimate(run_dir_of(run), iterations, finalize))


def status(run: RunLike) -> RunStatus:
    """The run at a glance; reads only."""
    return RunStatus.model_validate(statuses.run_status(run_dir_of(run)))


def verify(run: str | os.PathLike[str]) -> Verification:
    """Every way the run differs from what capevolve wrote; reads only."""
    return Verification.model_validate(verifying.verify_run(Path(run)))


def quarantine(run: str | os.PathLike[str]) -> Quarantine:
    """Set aside what :func:`verify` refuses; cut the log to its last good line."""
    return Quarantine.model_validate(verifying.quarantine_run(Path(run)))


def query(run: RunLike, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """(column names, rows) of one read-only SQL query over the ``rollouts`` view."""
    return rollout_query.RolloutStore(run_dir_of(run).layout).query(sql)


def doctor(address: str | None = None, timeout_s: float = 60.0) -> ClusterReport:
    """Whether the Ray cluster at ``address`` is ready."""
    from capevolve._loop.doctor import diagnose as cluster_diagnose

    return ClusterReport.model_validate(cluster_diagnose(address, timeout_s))


def refuse_unreachable_cluster(address: str | None) -> None:
    """EngineError within seconds when nothing answers at ``address``."""
    from capevolve._loop.doctor import refuse_unreachable_cluster as refuse

    refuse(address)


def log_event(run: RunLike, kind: str, **fields: Any) -> UserEvent:
    """Record a user event; RecordError for a kind capevolve records itself."""
    return run_dir_of(run).log_event(kind, **fields)


def register_event_kind(name: str) -> None:
    """Allow :func:`log_event` to record the kind ``name`` in this process."""
    StoreRunDir.register_event_kind(name)


def local_ray_down(force: bool = False) -> dict[str, Any]:
    """Stop capevolve's shared local Ray; refused while in use, unless ``force``."""
    return engines.down(force=force)


def latest_run_dir(project: str | os.PathLike[str]) -> Path:
    """The run dir created last under ``<project>/.capevolve/``; RunDirError if none."""
    return locate.latest_run_dir(Path(project))


def checkout(run: RunLike, dest: str | os.PathLike[str],
             candidate_id: str | None = None) -> Checkout:
    """A writable copy of ``candidate_id`` (default: the best) in a new or empty ``dest``."""
    return Checkout.model_validate(checkouts.checkout(run_dir_of(run), Path(dest), candidate_id))
