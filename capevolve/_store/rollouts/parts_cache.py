"""Values read from an evaluation's parts, cached while those parts are unchanged."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

from capevolve._store.layout import Layout
from capevolve._store.rollouts.query import part_files

T = TypeVar("T")


def parts_identity(layout: Layout, eval_id: str) -> tuple:
    """(run dir, eval id, each part's path, size, mtime, ctime and inode)."""
    found = []
    for path in part_files(layout, eval_id):
        try:
            st = path.stat()
        except OSError:
            continue
        found.append((str(path), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
    return (str(layout.root), eval_id, tuple(found))


class PartsCache(Generic[T]):
    """At most ``size`` values, each valid while its evaluation's parts are unchanged."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._values: OrderedDict[tuple, T] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, layout: Layout, eval_id: str, empty: Callable[[], T],
            read: Callable[[], T]) -> T:
        """The cached value, else ``read()`` (kept); ``empty()`` when there is no part yet."""
        key = parts_identity(layout, eval_id)
        with self._lock:
            hit = self._values.get(key)
            if hit is not None:
                self._values.move_to_end(key)
                return hit
        if not key[2]:
            return empty()
        found = read()
        with self._lock:
            self._values[key] = found
            while len(self._values) > self.size:
                self._values.popitem(last=False)
        return found
