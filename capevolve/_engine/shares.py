"""How several runs of one engine at once share its ``engine.concurrency``.

An engine used by K evaluations at once (``optimize --parallel K``, each in its own
thread) is told ``shares = K``. Each run starting takes its part of the concurrency the
runs under way leave, divided among the runs still to come, so K runs started together
hold exactly ``engine.concurrency`` rollouts in flight in all (8 over 3: 3, 3, 2), and a
run alone (``shares`` 1) holds all of it. A part is fixed for the run's life (a worker's
slots are set when it starts): slots a finished run frees are not moved to runs under way.
"""

from __future__ import annotations

import threading


class ConcurrencyShares:
    """The concurrency of one engine, handed out to the runs under way."""

    def __init__(self, total: int) -> None:
        self.total = max(1, int(total))
        self.shares = 1
        self._taken = 0
        self._active = 0
        self._lock = threading.Lock()

    def take(self) -> int:
        """The concurrency of a run starting now (at least 1); give it back with
        :meth:`give` when the run ends."""
        with self._lock:
            to_come = max(1, self.shares - self._active)
            free = max(1, self.total - self._taken)
            part = max(1, -(-free // to_come))
            self._taken += part
            self._active += 1
            return part

    def give(self, part: int) -> None:
        with self._lock:
            self._taken -= part
            self._active -= 1
