"""Python's cyclic garbage collector on the hot paths of an evaluation."""

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
