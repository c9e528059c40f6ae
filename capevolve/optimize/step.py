"""One iteration: plan -> propose -> settle -> evaluate -> decide. Each step leaves
``optimize/pending/<n>.json``, so a resumed loop reuses what was recorded; the finished
iteration is one ledger line."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from capevolve._loop import decide
from capevolve._loop import evaluate as evaluating
from capevolve._loop import no_change as no_changes
from capevolve._policy.gate import loop_alpha
from capevolve._policy.gateable import gate_refusal
from capevolve._store.candidates import content_hash
from capevolve._store.evals import all_evals
from capevolve._store.evals_means import task_means_of, with_task_means
from capevolve._store.rundir import utc_now
from capevolve.errors import BudgetError, CandidateError, GateError
from capevolve.kinds import Decision, EvalPurpose, EventKind, Split
from capevolve.optimize import look as looks
from capevolve.optimize import screening
from capevolve.optimize.algorithms import SearchView
from capevolve.optimize.context import build_context, train_diagnosis
from capevolve.optimize.proposers.base import Proposal, ProposalContext
from capevolve.optimize.session import TRAIN_TRIALS, Session
from capevolve.optimize.spend import record_optimizer_spend, since
from capevolve.optimize.workdir import diff_stat
from capevolve.records._optimize import DiffStat, GateNumbers, IterationRecord, Outcome, Spend


class LoopStop(Exception):
    """A budget cap reached mid-iteration; the message says why."""


@dataclass
class Planned:
    """One iteration in flight."""

    iteration: int
    parent_id: str
    focus: str | None
    pending: dict[str, Any]
    ctx: ProposalContext | None = None
    proposal: Proposal | None = None
    overhead_s: float = 0.0
    rows: int = 0
    """Rollouts delivered for this iteration."""
    notes: tuple[str, ...] = ()
    measured: Measured | None = None
    on_record: Callable[[], None] | None = None
    """Called just before the record is written."""


def search_view(s: Session, clusters: tuple[str, ...] = ()) -> SearchView:
    """The best and every complete full-val evaluation's task means."""
    means = {e.candidate_id: task_means_of(s.run, e) for e in all_evals(s.run)
             if e.split == Split.VAL and e.n_trials == s.config.num_trials
             and gate_refusal(e) is None}  # complete, full-split, of purpose gate, not refused
    return SearchView(s.run.best_id, means, tuple(s.ledger), clusters)


def plan(s: Session, n: int) -> Planned:
    """Step 1: parent, focus and prepared context (resumed when recorded)."""
    clock = _clock(s)
    pending = s.files.read_pending(n)
    notes: tuple[str, ...] = ()
    if pending and pending.get("proposal") is not None and _child_available(s, n, pending):
        p = Planned(n, pending["parent_id"], pending.get("focus"), pending)
        p.notes = ("resumed: the proposal recorded before the interruption is reused",)
    else:
        if pending:
            notes = ("resumed: a proposal interrupted before it was recorded was discarded",)
            parent_id, focus = pending["parent_id"], pending.get("focus")
        else:
            parent_id = s.algorithm.choose_parent(search_view(s), s.rng(n))
            focus = None
        wants = getattr(s.proposer, "wants_diagnosis", True) or s.algorithm.focus != "all"
        diagnosis, why_not = train_diagnosis(s, parent_id) if wants else (None, None)
        if why_not:
            notes = (*notes, why_not)
        if not pending:
            clusters = tuple(str(c.get("signature")) for c in (diagnosis or {}).get("clusters", []))
            focus = s.algorithm.choose_focus(search_view(s, clusters), parent_id, n)
        pending = {"iteration": n, "parent_id": parent_id, "focus": focus,
                   "started_at": (pending or {}).get("started_at") or utc_now()}
        if s.algorithm.screens:
            pending["minibatch"] = s.minibatch_for(n)
        s.files.write_pending(n, pending)
        p = Planned(n, parent_id, focus, pending, notes=notes)
        p.ctx = build_context(s, n, parent_id, focus, diagnosis)
    clock(p)
    return p


def _clock(s: Session) -> Callable[[Planned], None]:
    """Start a clock on the calling thread; the call it returns adds the time since, less
    engine time, to a Planned's overhead and the rows delivered since to its rows."""
    t0 = time.monotonic()
    busy0, rows0 = s.engine.mine()

    def stop(p: Planned) -> None:
        busy, rows = s.engine.mine()
        p.overhead_s += (time.monotonic() - t0) - (busy - busy0)
        p.rows += rows - rows0

    return stop


def _child_available(s: Session, n: int, pending: dict[str, Any]) -> bool:
    digest = pending["proposal"].get("child_hash")
    if digest is None or s.run.find_candidate(digest):  # a recorded no_change needs no child
        return True
    work = s.files.work(n) / "candidate"
    return work.is_dir() and content_hash(work) == digest


def propose(s: Session, p: Planned) -> None:
    """Step 2: run the proposer; one that raises gives a no_change."""
    if p.ctx is None:
        return
    t0 = time.monotonic()
    try:
        p.proposal = s.proposer.propose(p.ctx)
    except Exception as exc:  # noqa: BLE001 - a proposer's failure is an iteration's result
        p.proposal = Proposal(False, f"proposer failed: {type(exc).__name__}: {exc}",
                              Spend(wall_s=time.monotonic() - t0))


def discard(p: Planned, why: str) -> None:
    """Turn the proposal into a no_change (it wrote outside its directory)."""
    if p.proposal is not None:
        p.proposal = replace(p.proposal, changed=False, blocker=f"refused: {why}")


def record_proposal(s: Session, p: Planned) -> bool:
    """Step 3: the proposal recorded in pending (its ledger line, if it leaves nothing to
    evaluate, is :func:`no_change`'s); True when the child is to be evaluated."""
    proposal, ctx = p.proposal, p.ctx
    if proposal is None:  # resumed with a recorded proposal
        return p.pending["proposal"]["child_hash"] is not None
    assert ctx is not None
    t0 = time.monotonic()
    diff = diff_stat(ctx.parent_dir, ctx.workdir)
    blocker = proposal.blocker if not proposal.changed else None
    if proposal.changed and diff.empty:
        blocker = "the proposer changed nothing"
    elif not proposal.changed and not blocker:
        blocker = "the proposer reported no change"
    digest = None if blocker else content_hash(ctx.workdir)
    if digest and (twin := s.run.find_candidate(digest)):
        blocker, digest = f"the child is identical to {twin}, already measured", None
    p.pending["proposal"] = {
        "blocker": blocker, "child_hash": digest, "focus": proposal.focus or p.focus,
        "spend": proposal.spend.model_dump(), "detail": _json_values(proposal.detail),
        "diff": diff.model_dump(mode="json")}
    s.files.write_pending(p.iteration, p.pending)
    p.overhead_s += time.monotonic() - t0
    return digest is not None


def _json_values(detail: Any) -> dict[str, Any]:
    """A proposer's detail as JSON values (others as text, NaN as null)."""
    text = json.dumps(detail if isinstance(detail, dict) else {"detail": detail},
                      default=str, allow_nan=True)
    return dict(json.loads(text, parse_constant=lambda _: None))


def no_change(s: Session, p: Planned) -> IterationRecord | None:
    """The ledger line of a recorded proposal that left nothing to evaluate, else None."""
    rec = p.pending["proposal"]
    if rec["child_hash"] is not None:
        return None
    no_changes.record_once(s.run, f"optimize iteration {p.iteration}: {rec['blocker']}")
    return _record(s, p, Outcome.NO_CHANGE, reasons=[rec["blocker"]])


def _numbers(split: Split, against: str, decision: str, child: dict[str, Any] | None,
             parent: dict[str, Any] | None, gate: dict[str, Any] | None = None) -> GateNumbers:
    g = gate or {}
    cm = g.get("candidate_mean", child.get("mean") if child else None)
    pm = g.get("best_mean", parent.get("mean") if parent else None)
    delta = g.get("delta", cm - pm if cm is not None and pm is not None else None)
    se, k_se = g.get("se"), g.get("k_se")
    return GateNumbers(split=str(split), against=against, decision=decision, parent_mean=pm,
                       child_mean=cm, delta=delta, se=se,
                       threshold=None if se is None or k_se is None else k_se * se,
                       n_tasks=g.get("n_compared"),
                       power=g.get("power"))


@dataclass
class Measured:
    """What an iteration's evaluations gave, before its decision."""

    child_id: str | None = None
    val: dict[str, Any] | None = None
    screen: GateNumbers | None = None
    early: tuple[Outcome, list[str]] | None = None
    """Outcome and reasons settled by the evaluations alone."""
    failure: Exception | None = None
    """Raised again at the decision, in iteration order."""


def measure(s: Session, p: Planned) -> None:
    """Step 4a: the evaluations, nothing in the ledger; thread-safe, and what it raises is
    kept for :func:`finish`."""
    try:
        p.measured = timed(s, p, partial(_measure, s, p))
    except Exception as exc:  # noqa: BLE001 - raised again by finish, in iteration order
        p.measured = Measured(failure=exc)


def timed(s: Session, p: Planned, work: Callable[[], Any]) -> Any:
    """Run ``work``, adding its non-engine time to ``p``'s overhead and its rows to ``p``'s."""
    stop = _clock(s)
    try:
        return work()
    finally:
        stop(p)


def minibatch(s: Session, p: Planned) -> tuple[str, ...]:
    """The iteration's train minibatch, drawn once."""
    drawn = p.pending.get("minibatch")
    if drawn is None:
        drawn = p.pending["minibatch"] = s.minibatch_for(p.iteration)
    return tuple(drawn)


def finish(s: Session, p: Planned) -> IterationRecord:
    """Step 4b and 5: gate against the best at this turn, decide, record."""
    p.on_record = partial(_clock(s), p)  # called by _record, before the record is written
    m = p.measured or Measured(failure=RuntimeError("the iteration was never measured"))
    if isinstance(m.failure, BudgetError):
        raise LoopStop(str(m.failure)) from None
    if isinstance(m.failure, CandidateError):
        child_id = s.run.find_candidate(p.pending["proposal"]["child_hash"])
        if child_id and any(getattr(e, "candidate_id", None) == child_id
                            for e in s.run.events(EventKind.TAMPER)):
            return _record(s, p, Outcome.REFUSED, child_id=child_id, reasons=[str(m.failure)])
    if m.failure is not None:
        raise m.failure
    if m.early is not None:
        return _record(s, p, m.early[0], screen=m.screen, reasons=m.early[1])
    assert m.child_id is not None and m.val is not None
    return _decide(s, p, m.child_id, m.val, m.screen)


def child_source(s: Session, p: Planned) -> str:
    """The child's candidate id once snapshotted, else its prepared directory."""
    digest = p.pending["proposal"]["child_hash"]
    return s.run.find_candidate(digest) or str(s.files.work(p.iteration) / "candidate")


def _measure(s: Session, p: Planned) -> Measured:
    run, trials = s.run, s.config.num_trials
    screen = None
    if s.algorithm.screens:
        batch = minibatch(s, p)
        parent = screening.parent_on(s, p.parent_id, batch)
        child = evaluating.evaluate(run, child_source(s, p), Split.TRAIN, n_trials=TRAIN_TRIALS,
                                    tasks=batch, purpose=EvalPurpose.SCREEN, engine=s.engine)
        p.pending["child_id"] = child["candidate_id"]
        verdict = screening.compare(with_task_means(run, child), parent)
        screen = _numbers(Split.TRAIN, p.parent_id, "pass" if verdict.passed else "killed",
                          verdict.child, verdict.parent)
        if not verdict.passed:
            return Measured(child_id=child["candidate_id"], screen=screen, early=(
                Outcome.SCREENED_OUT, [verdict.reason(p.parent_id)]))
    if loop_alpha.first_look(s.config.gate, s.config.num_trials):
        look = looks.first_look(s, child_source(s, p))
        if look is not None:
            p.pending["child_id"] = look.child["candidate_id"]
            if look.stops:
                numbers = GateNumbers(
                    split=str(Split.VAL), against=look.best_id, decision="killed",
                    parent_mean=look.best_mean, child_mean=look.child_mean,
                    delta=look.child_mean - look.best_mean, n_tasks=look.n_tasks)
                return Measured(child_id=look.child["candidate_id"], screen=numbers,
                                early=(Outcome.SCREENED_OUT, [look.reason()]))
    val = evaluating.evaluate(run, child_source(s, p), Split.VAL, n_trials=trials,
                              engine=s.engine)
    p.pending["child_id"] = val["candidate_id"]
    return Measured(child_id=val["candidate_id"], val=val, screen=screen)


def _recorded_gate(s: Session, child_id: str) -> dict[str, Any] | None:
    """The latest deciding gate of ``child_id``."""
    for event in reversed(s.run.events(EventKind.GATE)):
        data = event.to_json()
        if data.get("candidate_id") == child_id and not data.get("exploratory") \
                and data.get("n_trials") in (None, s.config.num_trials):
            return data
    return None


def _decide(s: Session, p: Planned, child_id: str, val: dict[str, Any],
            screen: GateNumbers | None) -> IterationRecord:
    run = s.run
    gate = _recorded_gate(s, child_id)
    already_best = run.best_id == child_id
    if not already_best and (gate is None or gate.get("best_id") != run.best_id):
        try:
            gate = decide.gate_candidate(run, child_id, engine=s.engine)
        except GateError as exc:
            return _record(s, p, Outcome.INDECISIVE, child_id=child_id, screen=screen,
                           reasons=[str(exc)])
    assert gate is not None
    numbers = _numbers(Split.VAL, str(gate.get("best_id")), str(gate["decision"]), val, None,
                       gate)
    reasons = list(gate.get("reasons") or [])
    title = (p.pending["proposal"].get("detail") or {}).get("title")
    note = f"optimize iteration {p.iteration}" + (f": {title}" if title else "")
    try:
        if already_best or gate["decision"] == Decision.ACCEPT:
            decide.accept(run, child_id, note=note)
            outcome = Outcome.ACCEPT
        elif gate["decision"] == Decision.REJECT:
            decide.reject(run, child_id, note=note)
            outcome = Outcome.REJECT
        else:
            outcome = Outcome.INDECISIVE
    except BudgetError as exc:
        outcome, reasons = Outcome.INDECISIVE, [*reasons, str(exc)]
        _record(s, p, outcome, child_id=child_id, screen=screen, gate=numbers, reasons=reasons)
        raise LoopStop(str(exc)) from None
    return _record(s, p, outcome, child_id=child_id, screen=screen, gate=numbers,
                   reasons=reasons)


def _record(s: Session, p: Planned, outcome: Outcome, *, child_id: str | None = None,
            screen: GateNumbers | None = None, gate: GateNumbers | None = None,
            reasons: list[str] | None = None) -> IterationRecord:
    if p.on_record is not None:
        p.on_record()
        p.on_record = None
    rec = p.pending.get("proposal") or {}
    spend = Spend.model_validate(rec.get("spend") or {})
    started = p.pending.get("started_at") or utc_now()
    record = IterationRecord(
        iteration=p.iteration, algorithm=s.algorithm.name, proposer=s.proposer.name,
        parent_id=p.parent_id, child_id=child_id or p.pending.get("child_id"),
        child_hash=rec.get("child_hash"), focus=rec.get("focus") or p.focus,
        diff=DiffStat.model_validate(rec.get("diff") or {}), outcome=outcome,
        reasons=tuple([*(reasons or []), *p.notes]), screen=screen,
        minibatch=tuple(p.pending.get("minibatch") or ()), gate=gate, spend=spend,
        metric_calls=p.rows, wall_s=since(started),
        overhead_s=max(0.0, p.overhead_s), started_at=started, finished_at=utc_now(),
        detail=dict(rec.get("detail") or {}))
    record_optimizer_spend(s, record)
    s.files.append(record)
    s.ledger.append(record)
    return record
