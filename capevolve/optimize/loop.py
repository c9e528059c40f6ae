"""The optimization loop: iterations until a stop predicate, a budget cap or ``--iterations``.

Settings are validated before any rollout; the loop holds the run lock and drives only the
public verbs."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from itertools import takewhile
from pathlib import Path
from typing import Any

from capevolve._engine.contract import Engine
from capevolve._loop import estimate as estimating
from capevolve._loop import evaluate as evaluating
from capevolve._loop import finalize as finalizing
from capevolve._loop.frozen_config import run_config
from capevolve._loop.loop_status import accept_flags
from capevolve._loop.models_pin import run_settings
from capevolve._policy import budget
from capevolve._policy.stop import PLATEAU_WINDOW, LoopState, first_met, parse_stop, plateau
from capevolve._store.evals import latest_complete_eval
from capevolve._store.iterations import LoopFiles
from capevolve._store.rundir import RunDir, utc_now
from capevolve.errors import BudgetError, ConfigError
from capevolve.kinds import Split
from capevolve.optimize import step
from capevolve.optimize.algorithms import build_algorithm
from capevolve.optimize.batch import run_batch
from capevolve.optimize.fence import ProposalFence
from capevolve.optimize.proposers.base import ProposerConfig
from capevolve.optimize.proposers.registry import build_proposer
from capevolve.optimize.session import MINIBATCH, Session
from capevolve.optimize.summary import loop_summary
from capevolve.optimize.timing import TimedEngine
from capevolve.records._optimize import IterationRecord, Outcome


@dataclass(frozen=True)
class LoopSettings:
    """What ``capevolve optimize`` was asked (None: as loop.json says, on resume)."""

    algorithm: str | None = None
    proposer: str | None = None
    iterations: int | None = None
    parallel: int = 1
    focus: str | None = None
    timeout_s: float = 900.0
    finalize: bool = False
    resume: bool = False
    spend_test_ids: bool = False
    """With ``finalize``: score test even when the best is still the seed."""
    minibatch: int | None = None
    """Pareto screen size (None: the recorded value on resume, else MINIBATCH)."""


def _resolved(files: LoopFiles, settings: LoopSettings, n_done: int) -> dict[str, Any]:
    stored = files.read_loop()
    given = {"algorithm": settings.algorithm, "proposer": settings.proposer,
             "focus": settings.focus}
    if settings.resume:
        if stored is None:
            raise ConfigError(f"--resume: {files.root.parent} has no optimize loop to resume")
        for key, value in given.items():
            if value is not None and value != stored.get(key):
                raise ConfigError(f"--resume: --{key} {value!r} differs from the loop's "
                                  f"{stored.get(key)!r} (optimize/loop.json)")
        return stored
    if stored is not None or n_done:
        raise ConfigError(f"{files.root.parent} already has an optimize loop ({n_done} "
                          "iterations); pass --resume to continue it")
    if not settings.algorithm or not settings.proposer:
        raise ConfigError("optimize: --algorithm and --proposer are required (or --resume)")
    return {**given, "focus": settings.focus or "all", "started_at": utc_now()}


def open_session(run: RunDir, settings: LoopSettings, engine: Engine) -> tuple[Session, dict]:
    """Validate everything and assemble the loop (no rollout, nothing written)."""
    for flag in ("parallel", "iterations", "minibatch"):
        value = getattr(settings, flag)
        if value is not None and value < 1:
            raise ConfigError(f"--{flag} {value}: must be at least 1")
    if not settings.timeout_s > 0:
        raise ConfigError(f"--timeout {settings.timeout_s}: must be positive")
    config = run_config(run)
    files = LoopFiles(run.root)
    ledger = files.read_ledger()
    loop = _resolved(files, settings, len(ledger))
    algorithm = build_algorithm(str(loop["algorithm"]), str(loop.get("focus") or "all"))
    proposer = build_proposer(str(loop["proposer"]), ProposerConfig(
        project_dir=Path(run.manifest.project_dir), timeout_s=settings.timeout_s,
        model=run_settings(run, "proposer")))
    stop = parse_stop(config.stop_condition)
    if config.stop_condition.strip() and not stop.predicates:
        raise ConfigError(f"stop_condition {config.stop_condition!r} parses to nothing "
                          f"(unparsed: {'; '.join(stop.unparsed)}); see `capevolve check`")
    b = config.budget
    if not (stop.predicates or settings.iterations or b.max_iterations or b.max_metric_calls
            or b.max_usd or b.stall):
        raise ConfigError("optimize: nothing would stop this loop: give --iterations, a "
                          "stop_condition or a budget cap")
    stored = (loop.get("settings") or {}).get("minibatch")
    size = settings.minibatch or (stored if isinstance(stored, int) else None) or MINIBATCH
    session = Session(run, config, files, proposer, str(loop["proposer"]), algorithm,
                      TimedEngine(engine), stop, ledger, minibatch=size)
    return session, loop


def stop_reason(s: Session, iterations: int | None, wall_s: float) -> str | None:
    """Why the loop must stop now, or None."""
    ledger = s.ledger
    if ledger and ledger[-1].detail.get("exhausted"):
        return f"the proposer has nothing more to propose ({ledger[-1].reasons[0]})"
    if iterations is not None and len(ledger) >= iterations:
        return f"--iterations {iterations} reached"
    best = latest_complete_eval(s.run, s.run.best_id, Split.VAL,
                                           n_trials=s.config.num_trials)
    state = LoopState(best_val_mean=best.mean if best else None, iterations=len(ledger),
                      metric_calls=s.run.spent.metric_calls,  # cost: runner + optimizer
                      cost_usd=s.run.spent.cost_usd, wall_s=wall_s,
                      stall=sum(1 for _ in takewhile(  # iterations since the last accept
                          lambda r: r.outcome != Outcome.ACCEPT, reversed(ledger))))
    met = first_met(s.stop, state)
    if met:
        return met
    capped = budget.exhausted(s.config.budget, s.run.spent, budget.stall_count(s.run.events()))
    return f"budget: {'; '.join(capped)}" if capped else None


def _batch_size(s: Session, settings: LoopSettings) -> int:
    k = settings.parallel
    if settings.iterations is not None:
        k = min(k, settings.iterations - len(s.ledger))
    cap = s.config.budget.max_iterations
    if cap:
        k = min(k, max(1, cap - s.run.spent.iterations))
    return max(1, k)


def _iterate(s: Session, settings: LoopSettings,
             on_iteration: Callable[[IterationRecord], None]) -> str:
    t0 = time.monotonic()
    before = sum(r.wall_s for r in s.ledger)
    while True:
        why = stop_reason(s, settings.iterations, before + time.monotonic() - t0)
        if why:
            return why
        first = len(s.ledger) + 1
        batch = [step.plan(s, n) for n in range(first, first + _batch_size(s, settings))]
        fence = ProposalFence(s.run, s.files)
        if len(batch) > 1:
            with ThreadPoolExecutor(len(batch)) as pool:
                list(pool.map(lambda p: step.propose(s, p), batch))
        else:
            step.propose(s, batch[0])
        breach, fatal = fence.breach()
        if breach:
            for planned in batch:
                step.discard(planned, breach)
        if fatal:
            for planned in batch:
                step.record_proposal(s, planned)
                record = step.no_change(s, planned)
                if record is not None:
                    on_iteration(record)
            if breach:
                return breach
            continue
        stopped = run_batch(s, batch, on_iteration)
        if stopped:
            return stopped


def _warm_up() -> None:
    """Import SciPy's special functions off the first gate's critical path."""
    with contextlib.suppress(ImportError):  # a dependency; the gate says so itself
        import scipy.special  # noqa: F401


def run_loop(run: RunDir, settings: LoopSettings, engine: Engine,
             on_iteration: Callable[[IterationRecord], None] | None = None) -> dict[str, Any]:
    """Run (or resume) the loop on ``run``; returns its summary."""
    if not settings.resume:  # cost known before it is spent
        why = estimating.refusal(estimating.estimate(run, settings.iterations,
                                                     settings.finalize))
        if why:
            raise BudgetError(f"optimize refused: {why}")
    session, loop = open_session(run, settings, engine)
    if settings.resume and settings.iterations is None:  # the loop's own cap carries over
        stored = (loop.get("settings") or {}).get("iterations")
        settings = replace(settings, iterations=stored if isinstance(stored, int) else None)
    settings = replace(settings, minibatch=session.minibatch)  # recorded in loop.json
    with run.locked():
        run.require_open("optimize")
        session.files.write_loop({**loop, "settings": asdict(settings), "stopped": None})
        warm = threading.Thread(target=_warm_up, name="warm-up", daemon=True)
        warm.start()  # while the baseline's rollouts run, not in the first iteration
        evaluating.evaluate(run, run.best_id, Split.VAL, engine=session.engine)  # baseline
        warm.join()
        why = _iterate(session, settings, on_iteration or (lambda r: None))
        signal = plateau(accept_flags(session.ledger), PLATEAU_WINDOW)
        session.files.write_loop({**loop, "settings": asdict(settings), "stopped": why,
                                  "stopped_at": utc_now(), "plateau": signal})
        final, unsealed = None, None
        if settings.finalize and not settings.spend_test_ids:
            unsealed = finalizing.seed_refusal(run)
        if settings.finalize and unsealed is None:
            final = finalizing.finalize(run, engine=session.engine,
                                        spend_test_ids=settings.spend_test_ids)
    if settings.finalize:
        from capevolve.report.markdown import write_report

        write_report(run)
    return loop_summary(session, why, signal, final, unsealed)
