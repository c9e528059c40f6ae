"""A batch of iterations after their proposals: settle, evaluate concurrently, decide in order.

With ``--parallel K`` the K children of a batch are evaluated at once, each in its own
thread calling the real ``evaluate`` verb through the loop's one shared engine, so the
engine stays busy with a population instead of one child: their dispatchers share the
engine's one in-flight budget of ``engine.concurrency`` slots (the earliest child with
units left first, and a slot one child's evaluation cannot use goes to a later one:
:mod:`capevolve._engine.shares`), and
``engine.shares = K`` only splits the worker processes (or Ray actors) they start. What
must stay sequential does:

1. the proposals are recorded and the children snapshotted in iteration order, so the
   candidate ids are the ones a sequential loop gives;
2. for an algorithm that screens, each parent's numbers on each distinct minibatch are
   made first, once (two children never evaluate the same thing at once);
3. the children's evaluations run concurrently (the run dir is thread-safe where they
   write at once: see :mod:`capevolve._store.rundir`; budget caps hold across them:
   :mod:`capevolve._loop.shared_budget`);
4. the decisions are made in iteration order, each child gated against the best at its
   turn (as a sequential loop does), and the ledger gets one line per iteration in order;
   a child is decided as soon as its evaluations and the earlier decisions are done, while
   the batch's later evaluations still run.

A budget stop met in the middle ends the batch at that iteration; the later iterations
keep their pending files and recorded evaluations, so a resumed loop decides them without
paying again. Rows, records and decisions are those of the sequential loop for a
deterministic adapter (``tests/optimize/test_parallel.py``).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from capevolve._engine import shares
from capevolve._loop.intake import resolve_candidate
from capevolve.optimize import screening, step
from capevolve.optimize.session import Session
from capevolve.records._optimize import IterationRecord


def _snapshot_in_order(s: Session, measured: list[step.Planned]) -> None:
    with s.run.locked(), s.run.serial:
        for p in measured:
            def snap(p: step.Planned = p) -> str:
                return resolve_candidate(s.run, step.child_source(s, p))
            try:
                step.timed(s, p, snap)
            except Exception:  # noqa: BLE001 - its evaluate meets it again, in order
                pass


def _parents_first(s: Session, measured: list[step.Planned]) -> None:
    """Each parent's numbers on each distinct minibatch, once, paid by its first child."""
    if not s.algorithm.screens:
        return
    seen: set[tuple[str, tuple[str, ...]]] = set()
    for p in measured:
        key = (p.parent_id, step.minibatch(s, p))
        if key in seen:
            continue
        seen.add(key)

        def screen(p: step.Planned = p) -> object:
            return screening.parent_on(s, p.parent_id, step.minibatch(s, p))
        try:
            step.timed(s, p, screen)
        except Exception:  # noqa: BLE001 - the child's own measure meets it again, in order
            pass


def _measure_in_turn(s: Session, p: step.Planned) -> None:
    """:func:`step.measure` with the engine's slots going to the earliest iteration first
    (:data:`capevolve._engine.shares.PRIORITY`): the order the decisions are made in."""
    shares.PRIORITY.set(p.iteration)  # this thread's own context (a copy)
    step.measure(s, p)


def run_batch(s: Session, batch: list[step.Planned],
              on_iteration: Callable[[IterationRecord], None]) -> str | None:
    """Settle, evaluate and decide ``batch`` (proposals made); the stop reason if a budget
    cap stopped it, else None. Each decision is made as soon as its own evaluations and
    the earlier iterations' decisions are done, while the later evaluations still run."""
    measured = [p for p in batch if step.record_proposal(s, p)]
    _snapshot_in_order(s, measured)
    _parents_first(s, measured)
    concurrent = len(measured) > 1
    s.engine.shares = max(1, len(measured))
    pool = ThreadPoolExecutor(max(1, len(measured)), thread_name_prefix="evaluate")
    try:
        futures = {id(p): pool.submit(contextvars.copy_context().run, _measure_in_turn, s, p)
                   for p in measured} if concurrent else {}
        for p in batch:
            if id(p) in futures:
                futures[id(p)].result()  # measure keeps what its evaluations raised
            elif any(p is q for q in measured):
                step.measure(s, p)
            try:
                with s.run.serial:  # between the other evaluations' bookkeeping
                    record = (step.finish(s, p) if any(p is q for q in measured)
                              else step.no_change(s, p))
            except step.LoopStop as exc:
                if s.ledger and s.ledger[-1].iteration == p.iteration:
                    on_iteration(s.ledger[-1])
                return str(exc)
            on_iteration(record)
        return None
    finally:
        pool.shutdown(wait=True)  # a batch stopped early still lets its evaluations end
        s.engine.shares = 1
