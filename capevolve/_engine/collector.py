"""Python's cyclic garbage collector on the hot paths of an evaluation.

Every unit allocates a few dozen container objects (its task, coroutines, outcome,
rows), and hundreds of units are held at once, so many of them outlive a young
collection. With CPython's default thresholds (a young collection every 700 net
allocations) the collector then runs every few units, and the full collections it
triggers rescan every object of the process: in a Ray actor, whose imported modules
(Ray, pydantic, the adapter) are over 100,000 tracked objects, that was about a quarter of
the CPU a rollout costs. Two measures, each in one place:

- :func:`settle_worker_heap`, in a process capevolve owns (a Ray rollout or scorer actor,
  a local worker) once its code is loaded: what is loaded is collected once and then
  frozen (``gc.freeze``: never rescanned), and young objects are collected every
  :data:`YOUNG` allocations.
- :func:`fewer_collections`, around an evaluation in the driver, which may be the
  caller's own process: only the young threshold is raised, and the caller's thresholds
  are put back when the last evaluation running in the process ends.

Only cyclic garbage waits longer to be freed: objects without cycles are freed by their
reference counts as before.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG = 10_000
"""Net allocations of tracked objects between young collections (CPython's default: 700)."""

_lock = threading.Lock()
_inside = 0
_saved: tuple[int, ...] = ()


def settle_worker_heap() -> None:
    """Collect, freeze what is loaded, and collect young objects every :data:`YOUNG`
    allocations (for a process capevolve owns; idempotent, and cheap to call again)."""
    gc.collect()
    gc.freeze()
    young, older, oldest = gc.get_threshold()
    gc.set_threshold(max(YOUNG, young), older, oldest)


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Raise the young threshold to :data:`YOUNG` for the duration (nested or concurrent
    uses in threads share one change; the thresholds found are restored by the last)."""
    global _inside, _saved
    with _lock:
        if _inside == 0:
            _saved = gc.get_threshold()
            if _saved[0] and _saved[0] < YOUNG:  # 0: the caller disabled it; keep that
                gc.set_threshold(YOUNG, *_saved[1:])
        _inside += 1
    try:
        yield
    finally:
        with _lock:
            _inside -= 1
            if _inside == 0:
                gc.set_threshold(*_saved)
