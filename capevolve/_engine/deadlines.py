"""Attempt deadlines under one loop timer: one ``timeout_s``, so they fall in start order."""

from __future__ import annotations

import asyncio
import itertools


class Deadlines:
    """Deadlines of the attempts running in one event loop."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self._live: dict[int, tuple[float, asyncio.Task]] = {}
        self._ids = itertools.count()
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def enter(self) -> int:
        """Start the current task's deadline; returns its token."""
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None, "an attempt runs in a task"
        token = next(self._ids)
        deadline = loop.time() + self.timeout_s
        self._live[token] = (deadline, task)
        if self._timer is None or self._loop is not loop:  # (a core may outlive a loop)
            self._loop, self._timer = loop, loop.call_at(deadline, self._fire)
        return token

    def leave(self, token: int) -> bool:
        """End the deadline; True when it expired, its cancellation then withdrawn (as
        ``asyncio.timeout`` does); other cancellations still propagate."""
        if self._live.pop(token, None) is not None:
            return False
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        return True

    def _fire(self) -> None:
        self._timer = None
        loop = asyncio.get_running_loop()
        now, due, later = loop.time(), [], None
        for token, (deadline, _) in self._live.items():
            if deadline > now:
                later = deadline
                break
            due.append(token)
        for token in due:
            _, task = self._live.pop(token)
            if not task.done():
                task.cancel()
        if later is not None:
            self._timer = loop.call_at(later, self._fire)
