"""A re-entrant lock a thread can hand back while its engine runs."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class Baton:
    """Evaluations in threads hold it for bookkeeping and yield it while their engine runs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owner: int | None = None
        self._depth = 0

    def __enter__(self) -> Baton:
        me = threading.get_ident()
        if self._owner != me:
            self._lock.acquire()
            self._owner = me
        self._depth += 1
        return self

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        if self._depth == 0:
            self._owner = None
            self._lock.release()

    @contextmanager
    def yielded(self) -> Iterator[None]:
        """Release the baton for the block if held, then retake it at the same depth."""
        if self._owner != threading.get_ident():
            yield
            return
        depth, self._depth, self._owner = self._depth, 0, None
        self._lock.release()
        try:
            yield
        finally:
            self._lock.acquire()
            self._owner, self._depth = threading.get_ident(), depth
