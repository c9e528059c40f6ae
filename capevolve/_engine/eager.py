"""Run many coroutines concurrently without a Task for those that never suspend.

A scorer awaits one ``async def score`` per rollout; most return without ever waiting
(scoring is CPU work), and one asyncio Task per call (creation, scheduling, its done
callback) then costs more than the call itself. :func:`gather_eager` runs the first step
of each coroutine at once, in its own copy of the context (as a Task would); only a
coroutine that suspends is finished by a Task, which drives the remaining steps in that
same context, so context variables set by the coroutine behave exactly as under a Task.

During that first step the coroutine is its own current task, as under a Task:
``asyncio.current_task()`` returns a :class:`_FirstStep` that stands for the Task that
will run the rest of the coroutine. What user code does with it there (an
``asyncio.timeout`` or a TaskGroup entered before the first await, ``cancel()``) reaches
that Task, so a timeout that expires cancels this coroutine at its await (and becomes
its ``TimeoutError``), never the caller's task. A cancellation of the finishing Task is
thrown into the coroutine at the await it is suspended on, as a Task does.
"""

from __future__ import annotations

import asyncio
import contextvars
from asyncio import tasks as _tasks
from collections.abc import Coroutine
from typing import Any

_PENDING = object()


class _FirstStep:
    """The current task of a coroutine during the first step :func:`gather_eager` runs in
    the caller: cancel requests are kept until the Task that finishes the coroutine exists
    (:attr:`task`), then go to it; once it exists every other Task attribute is its."""

    __slots__ = ("task", "finished", "_cancels", "_message")

    def __init__(self) -> None:
        self.task: asyncio.Task | None = None
        self.finished = False  # the first step returned: there is nothing left to run
        self._cancels = 0
        self._message: Any = None

    def cancel(self, msg: Any = None) -> bool:
        if self.task is not None:
            return self.task.cancel(msg)
        if self.finished:
            return False
        self._cancels += 1
        self._message = msg
        return True

    def cancelling(self) -> int:
        return self.task.cancelling() if self.task is not None else self._cancels

    def uncancel(self) -> int:
        if self.task is not None:
            return self.task.uncancel()
        self._cancels = max(0, self._cancels - 1)
        return self._cancels

    def done(self) -> bool:
        return self.task.done() if self.task is not None else self.finished

    def __getattr__(self, name: str) -> Any:
        task = object.__getattribute__(self, "task")
        if task is None:
            raise AttributeError(f"{name!r}: a coroutine's first step has no Task yet")
        return getattr(task, name)

    def attach(self, task: asyncio.Task) -> None:
        """``task``, now running, finishes the coroutine: the cancel requests made so far
        are made of it (so the coroutine's next await raises CancelledError, as under its
        own Task), and later ones go to it."""
        self.task = task
        for _ in range(self._cancels):
            task.cancel(self._message)


async def gather_eager(coros: list[Coroutine[Any, Any, Any]]) -> list[Any]:
    """The results of ``coros`` in order (like ``asyncio.gather``: an exception of one
    propagates; the others are closed)."""
    results: list[Any] = [_PENDING] * len(coros)
    later: list[asyncio.Future] = []
    index: list[int] = []
    try:
        _start(coros, results, later, index)
        if later:
            for i, value in zip(index, await asyncio.gather(*later), strict=True):
                results[i] = value
    except BaseException:
        for future in later:
            future.cancel()
        for i, coro in enumerate(coros):
            if results[i] is _PENDING:
                coro.close()  # not started, or its Task was cancelled before it ran
        raise
    return results


def _start(coros: list[Coroutine[Any, Any, Any]], results: list[Any],
           later: list[asyncio.Future], index: list[int]) -> None:
    """Run the first step of each coroutine, in its own context and as its own current
    task (the caller's task is left meanwhile: no await happens here); a coroutine that
    returned has its result in ``results``, one that suspended a Task in ``later``."""
    loop = asyncio.get_running_loop()
    outer = _tasks.current_task(loop)
    if outer is not None:
        _tasks._leave_task(loop, outer)
    try:
        for i, coro in enumerate(coros):
            context, me = contextvars.copy_context(), _FirstStep()
            _tasks._enter_task(loop, me)  # type: ignore[arg-type]  # stands for one
            try:
                yielded = context.run(coro.send, None)
            except StopIteration as stop:
                me.finished = True
                results[i] = stop.value
                continue
            finally:
                _tasks._leave_task(loop, me)  # type: ignore[arg-type]
            later.append(loop.create_task(_finish(coro, context, yielded, me)))
            index.append(i)
    finally:
        if outer is not None:
            _tasks._enter_task(loop, outer)


async def _finish(coro: Coroutine[Any, Any, Any], context: contextvars.Context,
                  yielded: Any, me: _FirstStep) -> Any:
    """Drive a coroutine that suspended on ``yielded`` to its end, as a Task would: wait for
    the future it yielded (a bare ``yield`` is one turn of the loop), then resume it; a
    cancellation of this Task cancels that future and is thrown into the coroutine."""
    me.attach(asyncio.current_task())  # type: ignore[arg-type]  # runs in its Task
    while True:
        try:
            if yielded is None:
                await asyncio.sleep(0)
            else:
                yielded._asyncio_future_blocking = False
                await asyncio.wait([yielded])
        except asyncio.CancelledError as exc:
            if yielded is not None:
                yielded.cancel()
            thrown: BaseException | None = exc
        else:
            thrown = None
        try:
            yielded = (context.run(coro.send, None) if thrown is None
                       else context.run(coro.throw, thrown))
        except StopIteration as stop:
            return stop.value
