"""Python's cyclic garbage collector on the hot paths of an evaluation."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG = 10_000
"""Net tracked allocations between young collections."""

_lock = threading.Lock()
_inside = 0
_saved: tuple[int, ...] = ()


def settle_worker_heap() -> None:
    """Collect, freeze what is loaded, and raise the young threshold to :data:`YOUNG`, in a
    process capevolve owns; idempotent."""
    gc.collect()
    gc.freeze()
    young, older, oldest = gc.get_threshold()
    gc.set_threshold(max(YOUNG, young), older, oldest)


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Raise the young threshold to :data:`YOUNG` meanwhile; nested and threaded uses share
    it, and the last one out restores it."""
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
