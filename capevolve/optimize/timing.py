"""An engine wrapper that measures engine time per calling thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from capevolve._engine.contract import (
    DispatchLedger,
    Engine,
    EngineReport,
    EvalJob,
    Limit,
    RowSink,
)
from capevolve._engine.plan import WorkUnit


class TimedEngine:
    """Delegates to ``inner``, adding up its ``run`` calls' time and rows per calling thread."""

    def __init__(self, inner: Engine) -> None:
        self.inner = inner
        self._lock = threading.Lock()
        self._by_thread: dict[int, list[float]] = {}  # thread -> [busy_s, rows]

    def mine(self) -> tuple[float, int]:
        """(engine seconds, rows) of the calling thread's calls so far."""
        with self._lock:
            busy, rows = self._by_thread.get(threading.get_ident(), (0.0, 0))
        return busy, int(rows)

    def share(self, k: int) -> None:
        """Tell the engine ``k`` evaluations share it (if it has the notion)."""
        if hasattr(self.inner, "shares"):
            self.inner.shares = k

    def run(self, job: EvalJob, units: Sequence[WorkUnit], sink: RowSink,
            limit: Limit | None = None,
            ledger: DispatchLedger | None = None) -> EngineReport:
        t0 = time.monotonic()
        with self._lock:
            mine = self._by_thread.setdefault(threading.get_ident(), [0.0, 0])

        def counting(rows: list[dict[str, Any]]) -> int | None:
            with self._lock:
                mine[1] += len(rows)
            return sink(rows)

        try:
            return self.inner.run(job, units, counting, limit, ledger)
        finally:
            with self._lock:
                mine[0] += time.monotonic() - t0

    def close(self) -> None:
        self.inner.close()
