"""The verbs of the public API: thin, stable entry points over the application layer.

Each verb does what the CLI command of the same name does (the CLI calls these;
:func:`diagnose_candidate` and :func:`optimize_run` are ``diagnose`` and ``optimize``), under the
same rules: the deciding gate uses the frozen project's settings only, evaluate refuses the
test split, finalize scores it once, writing verbs take the run lock. A ``run`` argument is a
:class:`RunDir` or the path of a run directory (opened read-only first). Engine arguments
choose only the engine's kind (``"ray"`` / ``"local"``) and Ray address; every other engine
setting is the project's. Errors are :class:`capevolve.CapevolveError` subclasses with a
one-line message. Each returns a typed record (``to_dict()`` is the JSON ``--json`` prints).
"""

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

# The verbs' modules load when a verb first uses them (``capevolve status`` never pays for
# the Arrow, DuckDB and numpy code behind evaluate and gate); the checker sees them as
# eager imports. tests/test_lazy_api.py keeps both lists the same.
if TYPE_CHECKING:
    from capevolve._loop import checkout as checkouts
    from capevolve._loop import confirm as confirming
    from capevolve._loop import decide, engines, locate
    from capevolve._loop import estimate as estimating
    from capevolve._loop import evaluate as evaluating
    from capevolve._loop import finalize as finalizing
    from capevolve._loop import frozen_config as frozen
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
    frozen = lazy_module("capevolve._loop.frozen_config")
    no_changes = lazy_module("capevolve._loop.no_change")
    probing = lazy_module("capevolve._loop.probe")
    projects = lazy_module("capevolve._loop.project")
    running = lazy_module("capevolve._loop.run")
    statuses = lazy_module("capevolve._loop.status")
    verifying = lazy_module("capevolve._loop.verify")
    rollout_query = lazy_module("capevolve._store.rollouts.query")

RunLike = RunDir | str | os.PathLike[str]
"""A run: an open :class:`RunDir`, or the path of a run directory."""


def _split(value: Split | str) -> Split:
    """``value`` as a Split; an unknown name is a ConfigError (never a bare ValueError)."""
    try:
        return Split(value)
    except ValueError:
        raise ConfigError(f"split {value!r}: expected train or val") from None


def _writer(run: RunLike | StoreRunDir) -> StoreRunDir:
    """The run a verb reads and writes: the writer behind a public RunDir, an internal one
    as it is, or the run dir at that path (opened and verified)."""
    if isinstance(run, RunDir):
        return store_run(run)
    return run if isinstance(run, StoreRunDir) else StoreRunDir.open(Path(run))


def open_run(run: RunLike) -> RunDir:
    """``run`` itself when it is a RunDir, else the run directory at that path, opened
    read-only (nothing is created or modified; RunDirError if it is not a run)."""
    return run if isinstance(run, RunDir) else RunDir(_writer(run))


def init_project(directory: str | os.PathLike[str], *, kind: str = "adapter") -> ProjectInit:
    """Scaffold a runnable project in ``directory``: ``kind`` adapter (config, adapter
    skeleton, seed capability, PROJECT.md) or dataset (config with dataset, target and
    evaluators, data.jsonl, target.py, seed capability); refuses to overwrite one.
    Returns the project directory and the files written."""
    return ProjectInit.model_validate(projects.init(Path(directory), kind))


def check_project(project: str | os.PathLike[str]) -> ProjectCheck:
    """Is the project runnable? ``ok``, ``n_tasks`` and every problem in words (config,
    adapter import, task ids, score determinism)."""
    return ProjectCheck.model_validate(projects.check(Path(project)))


def create_run(project: str | os.PathLike[str],
               run_dir: str | os.PathLike[str] | None = None) -> RunDir:
    """Check the project, freeze its splits and snapshot the seed capability as candidate
    ``seed`` (the best) in a new run dir (default ``<project>/.capevolve/run_<utc>``).
    Runs no rollout; see :func:`start_run` for the baseline too."""
    return RunDir(running.create_run(Path(project), None if run_dir is None else Path(run_dir)))


def start_run(project: str | os.PathLike[str], run_dir: str | os.PathLike[str] | None = None,
              *, engine: EngineKind | str | None = None,
              address: str | None = None) -> Handoff:
    """Agent mode: :func:`create_run`, score the seed on val (the baseline), return the
    handoff (``next``: the commands to run)."""
    config = load_config(Path(project))
    return Handoff.model_validate(running.start_run(
        Path(project), None if run_dir is None else Path(run_dir),
        engine=engines.engine_for(config.engine, engine, address)))


def evaluate(run: RunLike, candidate: str | os.PathLike[str], split: Split | str = Split.VAL,
             *, n_trials: int | None = None, tasks: Sequence[str] | None = None,
             first_trial: int = 0, purpose: str | None = None, target: str | None = None,
             engine: EngineKind | str | None = None,
             address: str | None = None) -> EvalRecord:
    """Evaluate ``candidate`` (a candidate id, or a directory to snapshot) on ``split``
    (train or val; test is refused: only :func:`finalize` scores it). ``n_trials`` defaults
    to the project's ``num_trials``. Re-running resumes an incomplete evaluation and returns
    a complete one as it is. Returns the evaluation record.

    ``tasks`` (ids of the split), ``first_trial`` (trials ``first_trial ..`` only) and
    ``purpose`` (``probe``, ``screen``, ``confirm``; ``gate`` for the whole split from trial
    0, the default) make a subset evaluation: stored and budgeted like any other, with its
    own id, and never usable by a gate, accept, confirm or finalize. ``target`` (a recorded
    census bucket or val diagnose cluster) is stored with the evaluation: a gate that names
    no target audits against it."""
    opened = _writer(run)
    from capevolve._loop.local_ray import join_early

    # Ray's import and join, and claiming the warm actors, overlap the checks below
    join_early(opened, engine, address)
    config = frozen.run_config(opened).engine
    return EvalRecord.model_validate(evaluating.evaluate(
        opened, os.fspath(candidate), _split(split), n_trials=n_trials, tasks=tasks,
        first_trial=first_trial, purpose=purpose, target=target,
        engine=engines.engine_for(config, engine, address)))


def gate(run: RunLike, candidate_id: str, *, n_trials: int | None = None,
         target: str | None = None, engine: EngineKind | str | None = None,
         address: str | None = None) -> GateRecord:
    """Gate ``candidate_id`` against the current best on full val, from stored rollouts,
    with the frozen project's gate settings; records the gate. The result's ``decision`` is
    accept, reject or indecisive (missing data is never a rejection). Both sides are read
    from their evaluations made with the project's num_trials, or with ``n_trials`` (a
    matched higher-power pair: both sides evaluated with that larger count). The verdict is
    the frozen ``gate.policy``'s (strict or keep-best), with the mechanism audit recorded,
    against ``target`` (a recorded census bucket or a val diagnose cluster) when given.
    Under ``gate.alpha_spending: confirm`` (the default) a passing screen is confirmed on
    fresh val trials of both sides, run on ``engine`` / ``address``, and the fresh data
    alone decides (the record's ``confirmation``)."""
    opened = _writer(run)
    chosen = None
    if engine is not None or address is not None:
        chosen = engines.engine_for(frozen.run_config(opened).engine, engine, address)
    return GateRecord.model_validate(decide.gate_candidate(
        opened, candidate_id, n_trials=n_trials, target=target, engine=chosen))


def explore_gate(run: RunLike, candidate_id: str, *, k_se: float | None = None,
                 mode: str | None = None, min_delta: float | None = None,
                 n_trials: int | None = None) -> GateRecord:
    """:func:`gate` with other settings: recorded with ``exploratory: true`` (and the
    overrides) whenever one differs from the frozen project's, and never a basis for
    accept or set_best."""
    return GateRecord.model_validate(decide.gate_candidate(
        _writer(run), candidate_id, k_se=k_se, mode=mode, min_delta=min_delta,
        n_trials=n_trials))


def gate_numbers(current: float, candidate: float, current_stderr: float,
                 candidate_stderr: float, *, k_se: float | None = None,
                 min_delta: float | None = None, run: RunLike | None = None) -> GateNumbers:
    """The raw gate for means and SEs computed elsewhere (unpaired SE; nothing recorded):
    the settings are ``run``'s frozen gate (or the defaults) with ``k_se`` / ``min_delta``
    applied. Non-finite or negative inputs raise GateError."""
    frozen = _writer(run).manifest.config.gate if run is not None else None
    return GateNumbers.model_validate(decide.gate_summary(
        current, candidate, current_stderr, candidate_stderr, k_se=k_se, min_delta=min_delta,
        frozen=frozen))


def accept(run: RunLike, candidate_id: str, note: str | None = None, *,
           target: str | None = None) -> Accepted:
    """Make ``candidate_id`` the best; refused unless its latest gate against the current
    best, on the current full-val evaluations, said accept. ``note`` is recorded. With
    ``target`` (a census bucket or val diagnose cluster) the gate must have audited the move
    against it: the pair is gated again with it when its latest gate named another."""
    return Accepted.model_validate(decide.accept(_writer(run), candidate_id, note,
                                                 target=target))


def reject(run: RunLike, candidate_id: str, note: str | None = None) -> Rejected:
    """Record that ``candidate_id`` is rejected (the best stays); ``note`` is recorded."""
    return Rejected.model_validate(decide.reject(_writer(run), candidate_id, note))


def confirm(run: RunLike, candidate_id: str, *, trials: int | None = None,
            engine: EngineKind | str | None = None, address: str | None = None
            ) -> Confirmation:
    """Re-run ``candidate_id`` and its reference (the best it was kept over, or the current
    best) with ``trials`` more trials on new shared seeds, pool them with the existing ones
    and store the higher-power numbers and label (confirmations/<n>.json); the best never
    moves."""
    opened = _writer(run)
    config = frozen.run_config(opened).engine
    return Confirmation.model_validate(confirming.confirm(
        opened, candidate_id, trials, engine=engines.engine_for(config, engine, address)))


def probe(run: RunLike, candidate: str | os.PathLike[str], *,
          tasks: Sequence[str] | None = None, cluster: str | None = None,
          failing: bool = False, split: Split | str = Split.VAL,
          engine: EngineKind | str | None = None,
          address: str | None = None) -> ProbeResult:
    """Evaluate ``candidate`` on its targets only (``tasks``, the tasks of a census bucket
    or diagnose ``cluster``, or every task the best ``failing``), stored with purpose probe,
    and count how many targeted failing datapoints flipped against the best's rows of the
    same tasks; ``suggestion`` is ``no_change`` when none did. Informational: a probe can
    kill a hypothesis, never accept one (no gate reads it)."""
    opened = _writer(run)
    config = frozen.run_config(opened).engine
    return ProbeResult.model_validate(probing.probe(
        opened, os.fspath(candidate), tasks=tasks, cluster=cluster, failing=failing,
        split=_split(split), engine=engines.engine_for(config, engine, address)))


def no_change(run: RunLike, reason: str, candidate_id: str | None = None) -> NoChange:
    """Record an iteration whose change could not be scored (``reason`` mandatory): the best
    is carried forward, ``results/<n>.json`` is written, no iteration is spent."""
    return NoChange.model_validate(no_changes.no_change(_writer(run), reason, candidate_id))


def diagnose_candidate(run: RunLike, candidate_id: str, split: Split | str = Split.VAL, *,
                       cluster: str = "root-cause", redact_gold: bool = False,
                       project: str | os.PathLike[str] | None = None) -> DiagnosisRecord:
    """Turn ``candidate_id``'s stored rollouts on ``split`` (train or val; test is refused)
    into a reflective dataset and root-cause clusters; writes ``diagnoses/<split>__<id>.json``
    (``.first-words.json`` in that mode) in the run and returns it. ``project`` overrides
    the project whose adapter gives targets and trajectories; ``redact_gold`` replaces
    target values quoted in feedback. (The ``capevolve diagnose`` command.)"""
    from capevolve.diagnose.diagnosis import DiagnoseOptions
    from capevolve.diagnose.diagnosis import diagnose as diagnose_run
    from capevolve.diagnose.kinds import ClusterMode as Mode

    if str(cluster) not in {m.value for m in Mode}:
        raise ConfigError(f"cluster {cluster!r}: expected one of "
                          f"{', '.join(m.value for m in Mode)}")
    options = DiagnoseOptions(split=str(_split(split)), tag=candidate_id, mode=Mode(cluster),
                              redact_gold=redact_gold,
                              project=None if project is None else Path(project))
    return DiagnosisRecord.model_validate(diagnose_run(_writer(run), options))


def optimize_run(run: RunLike, *, algorithm: str | None = None, proposer: str | None = None,
                 iterations: int | None = None, parallel: int = 1, focus: str | None = None,
                 timeout_s: float = 900.0, finalize: bool = False, resume: bool = False,
                 engine: EngineKind | str | None = None, address: str | None = None,
                 on_iteration: Callable[[IterationLine], None] | None = None,
                 minibatch: int | None = None, spend_test_ids: bool = False) -> OptimizeSummary:
    """Run an optimization loop on ``run`` (the ``capevolve optimize`` command): the
    ``algorithm`` (``hill-climb`` or ``pareto``) picks parents, the ``proposer`` spec
    (``scripted:DIR``, ``command:"... {workdir} ..."``, ``llm[:options]``) edits a copy of
    each, and every child goes evaluate -> gate -> accept | reject on full val. Stops at the
    project's stop condition, a budget cap, ``iterations`` or a proposer with nothing left;
    ``parallel`` children are proposed and evaluated concurrently on one shared engine;
    ``minibatch`` is how many train tasks a pareto child is screened on per iteration
    (default 3; a subset evaluation, never gateable); ``resume`` continues a killed loop
    with its recorded settings; ``finalize`` seals test once and writes report.md (while
    the best is the seed, test is left unscored and the run open unless ``spend_test_ids``;
    ``not_finalized`` says why). ``on_iteration`` is called with each iteration's row (as
    in the result's ``iterations``) once recorded. Bad settings raise ConfigError before
    any rollout."""
    from capevolve.optimize.loop import LoopSettings, run_loop
    from capevolve.optimize.summary import iteration_row

    opened = _writer(run)
    settings = LoopSettings(algorithm=algorithm, proposer=proposer, iterations=iterations,
                            parallel=parallel, focus=focus, timeout_s=timeout_s,
                            finalize=finalize, resume=resume, minibatch=minibatch,
                            spend_test_ids=spend_test_ids)
    chosen = engines.engine_for(frozen.run_config(opened).engine, engine, address)

    def report(record: Any) -> None:
        if on_iteration is not None:
            on_iteration(IterationLine.model_validate(iteration_row(record)))

    return OptimizeSummary.model_validate(run_loop(opened, settings, chosen, report))


def finalize(run: RunLike, *, engine: EngineKind | str | None = None,
             address: str | None = None, spend_test_ids: bool = False) -> FinalRecord:
    """Score the best and the seed on the held-out test split, once per run (the seal),
    and write final.json; returns its content. A second finalize raises TestSealError; so
    does a best that is still the seed unless ``spend_test_ids`` (its test ids then count
    as used)."""
    opened = _writer(run)
    config = frozen.run_config(opened).engine
    return FinalRecord.model_validate(finalizing.finalize(
        opened, engine=engines.engine_for(config, engine, address),
        spend_test_ids=spend_test_ids))


def estimate(run: RunLike, *, iterations: int | None = None,
             finalize: bool = True) -> Estimate:
    """What the run will spend before it spends it: the planned rollouts (the baseline,
    each iteration's full-val evaluation, finalize) times the tokens and dollars of one
    rollout (the stored rollouts', else the check probe's), as a range; reads only."""
    return Estimate.model_validate(estimating.estimate(_writer(run), iterations, finalize))


def status(run: RunLike) -> RunStatus:
    """The run at a glance (best, spend against budget, stop condition, evaluations,
    decisions made); reads only, writes nothing."""
    return RunStatus.model_validate(statuses.run_status(_writer(run)))


def verify(run: str | os.PathLike[str]) -> Verification:
    """Every way the run's history or rows differ from what capevolve wrote (a broken or
    forged event, a part that is unrecorded, changed or missing, a deleted seal or final);
    ``ok`` when there is none. Works on a run that cannot be opened; writes nothing."""
    return Verification.model_validate(verifying.verify_run(Path(run)))


def quarantine(run: str | os.PathLike[str]) -> Quarantine:
    """The explicit repair: move what :func:`verify` refuses into ``quarantine/``, cut the
    event log back to its last verified line, and record all of it in a ``quarantined``
    event; ``left`` lists what cannot be repaired this way."""
    return Quarantine.model_validate(verifying.quarantine_run(Path(run)))


def query(run: RunLike, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run one read-only SQL query over this run's rollouts (the ``rollouts`` view);
    returns (column names, rows). Writes, other files and extensions are refused."""
    return rollout_query.RolloutStore(_writer(run).layout).query(sql)


def doctor(address: str | None = None, timeout_s: float = 60.0) -> ClusterReport:
    """Is this Ray cluster ready? The driver's and every node's versions and resources, and
    ``problems`` (``ok`` when there is none). Joins ``address`` (else RAY_ADDRESS, else a
    local Ray)."""
    from capevolve._loop.doctor import diagnose as cluster_diagnose

    return ClusterReport.model_validate(cluster_diagnose(address, timeout_s))


def refuse_unreachable_cluster(address: str | None) -> None:
    """EngineError within seconds when nothing answers at ``address`` (else RAY_ADDRESS):
    the CLI's doctor checks it before saying it is probing. Not part of ``__all__``."""
    from capevolve._loop.doctor import refuse_unreachable_cluster as refuse

    refuse(address)


def log_event(run: RunLike, kind: str, **fields: Any) -> UserEvent:
    """Record a user event in the run's log: ``note`` or a kind registered with
    :func:`register_event_kind`, its ``fields`` (JSON values) stored under ``data``. The
    kinds capevolve records itself (gate, accept, spend, ...) are refused (RecordError)."""
    return _writer(run).log_event(kind, **fields)


def register_event_kind(name: str) -> None:
    """Allow :func:`log_event` to record the user kind ``name`` in this process (lowercase
    letters, digits and ``_``; not a kind capevolve records itself)."""
    StoreRunDir.register_event_kind(name)


def run_dir_of(run: RunLike) -> StoreRunDir:
    """The internal run behind ``run`` (opened and verified from a path): for the CLI's
    presenters (report, view, diagnose, export), which read the store directly. Not part of
    ``__all__``."""
    return _writer(run)


def local_ray_down(force: bool = False) -> dict[str, Any]:
    """Stop the local Ray capevolve started for this user's commands (``capevolve down``;
    refused while another command uses it unless ``force``). Not part of ``__all__``: the
    CLI's helper."""
    from capevolve._loop.local_ray import down

    return down(force=force)


def latest_run_dir(project: str | os.PathLike[str]) -> Path:
    """The run dir of ``project`` created last under ``<project>/.capevolve/`` (what
    ``--project P`` means to a command when ``--run-dir`` is omitted); RunDirError if none.
    Not part of ``__all__``: the CLI's helper."""
    return locate.latest_run_dir(Path(project))


def checkout(run: RunLike, dest: str | os.PathLike[str],
             candidate_id: str | None = None) -> Checkout:
    """A writable copy of ``candidate_id`` (default: the current best) in ``dest``, which
    must be new or an empty directory, to edit into the next candidate (snapshots are
    read-only); nothing in the run changes."""
    return Checkout.model_validate(checkouts.checkout(_writer(run), Path(dest), candidate_id))
