"""An engine wrapper that measures the time spent inside the engine (rollouts).

The loop passes one :class:`TimedEngine` to every evaluation of a loop, so all of them share
one engine (one Ray pool, or the local engine) and the loop can tell the framework's own
overhead (wall time minus engine time minus proposer time) from the rollouts' time.
"""

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
    """Delegates to ``inner`` and adds up the wall time of its ``run`` calls."""

    def __init__(self, inner: Engine) -> None:
        self.inner = inner
        self.busy_s = 0.0
        self.rows = 0
        self._lock = threading.Lock()

    def run(self, job: EvalJob, units: Sequence[WorkUnit], sink: RowSink,
            limit: Limit | None = None,
            ledger: DispatchLedger | None = None) -> EngineReport:
        t0 = time.monotonic()

        def counting(rows: list[dict[str, Any]]) -> None:
            with self._lock:
                self.rows += len(rows)
            sink(rows)

        try:
            return self.inner.run(job, units, counting, limit, ledger)
        finally:
            with self._lock:
                self.busy_s += time.monotonic() - t0

    def close(self) -> None:
        self.inner.close()
