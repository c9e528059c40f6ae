"""A batch of proposed iterations: settle, evaluate concurrently, decide in order."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial

from capevolve._engine import shares
from capevolve._loop.intake import resolve_candidate
from capevolve.optimize import screening, step
from capevolve.optimize.session import Session
from capevolve.records._optimize import IterationRecord


def _snapshot_in_order(s: Session, measured: list[step.Planned]) -> None:
    with s.run.locked(), s.run.serial:
        for p in measured:
            with contextlib.suppress(Exception):  # its evaluate meets it again, in order
                step.timed(s, p, partial(resolve_candidate, s.run, step.child_source(s, p)))


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
        with contextlib.suppress(Exception):  # the child's own measure meets it again, in order
            step.timed(s, p, partial(screening.parent_on, s, p.parent_id, key[1]))


def _measure_in_turn(s: Session, p: step.Planned) -> None:
    """:func:`step.measure`, engine slots going to the earliest iteration first."""
    shares.PRIORITY.set(p.iteration)  # this thread's own context (a copy)
    step.measure(s, p)


def run_batch(s: Session, batch: list[step.Planned],
              on_iteration: Callable[[IterationRecord], None]) -> str | None:
    """Settle, evaluate and decide ``batch``; the stop reason if a budget cap stopped it."""
    measured = [p for p in batch if step.record_proposal(s, p)]
    _snapshot_in_order(s, measured)
    _parents_first(s, measured)
    concurrent = len(measured) > 1
    s.engine.share(max(1, len(measured)))
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
            assert record is not None  # a proposal not measured is a no_change
            on_iteration(record)
        return None
    finally:
        pool.shutdown(wait=True)  # a batch stopped early still lets its evaluations end
        s.engine.share(1)
