"""Run coroutines concurrently as Tasks whose first step runs at once."""

from __future__ import annotations

import asyncio
import contextvars
import sys
from asyncio import coroutines, format_helpers
from asyncio import tasks as _tasks
from collections.abc import Coroutine
from typing import Any


async def gather_eager(coros: list[Coroutine[Any, Any, Any]]) -> list[Any]:
    """Results of ``coros`` in order; the first exception propagates and cancels the rest."""
    loop = asyncio.get_running_loop()
    started: list[asyncio.Future] = []
    try:
        outer = _tasks.current_task(loop)
        if outer is not None:  # each first step runs as its own Task, not the caller's
            _tasks._leave_task(loop, outer)
        try:
            for coro in coros:
                started.append(_eager_task(coro, loop))
        finally:
            if outer is not None:
                _tasks._enter_task(loop, outer)
        pending = [task for task in started if not task.done()]
        if pending:
            await asyncio.wait(pending, return_when=asyncio.FIRST_EXCEPTION)
        for task in started:  # the failure, not the result of a task still running
            if task.done() and not task.cancelled() and task.exception() is not None:
                task.result()
        return [task.result() for task in started]
    except BaseException:
        for task in started:
            task.cancel()
        for coro in coros[len(started):]:
            coro.close()
        raise


def _eager_task(coro: Coroutine[Any, Any, Any], loop: asyncio.AbstractEventLoop
                ) -> asyncio.Future:
    """A Task for ``coro`` with its first step run; no current task may be set."""
    if sys.version_info >= (3, 12):
        return asyncio.Task(coro, loop=loop, eager_start=True)
    return _EagerTask(coro, loop)


class _EagerTask(_tasks._PyTask):  # type: ignore[name-defined]
    """Python 3.11's pure-Python Task, its first step run in the constructor."""

    def __init__(self, coro: Coroutine[Any, Any, Any],
                 loop: asyncio.AbstractEventLoop) -> None:
        # what Future.__init__ and Task.__init__ set, without queuing the first step
        self._loop = loop
        self._callbacks: list = []
        if loop.get_debug():
            self._source_traceback = format_helpers.extract_stack(sys._getframe(1))
        if not coroutines.iscoroutine(coro):
            self._log_destroy_pending = False
            raise TypeError(f"a coroutine was expected, got {coro!r}")
        self._name = f"Task-{_tasks._task_name_counter()}"  # type: ignore[attr-defined]
        self._num_cancels_requested = 0
        self._must_cancel = False
        self._fut_waiter = None
        self._coro = coro
        self._context = contextvars.copy_context()
        self._context.run(self._Task__step)
        if not self.done():  # (as 3.12 does: a Task done in its first step is never listed)
            _tasks._register_task(self)
