"""Run many coroutines concurrently without a Task for those that never suspend.

A scorer awaits one ``async def score`` per rollout; most return without ever waiting
(scoring is CPU work), and one asyncio Task per call (creation, scheduling, its done
callback) then costs more than the call itself. :func:`gather_eager` runs the first step
of each coroutine at once, in its own copy of the context (as a Task would); only a
coroutine that suspends is finished by a Task, which drives the remaining steps in that
same context, so context variables set by the coroutine behave exactly as under a Task.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine
from typing import Any

_PENDING = object()


async def gather_eager(coros: list[Coroutine[Any, Any, Any]]) -> list[Any]:
    """The results of ``coros`` in order (like ``asyncio.gather``: an exception of one
    propagates; the others are closed)."""
    results: list[Any] = [_PENDING] * len(coros)
    later: list[asyncio.Future] = []
    index: list[int] = []
    try:
        for i, coro in enumerate(coros):
            context = contextvars.copy_context()
            try:
                yielded = context.run(coro.send, None)
            except StopIteration as stop:
                results[i] = stop.value
                continue
            later.append(asyncio.ensure_future(_finish(coro, context, yielded)))
            index.append(i)
        if later:
            for i, value in zip(index, await asyncio.gather(*later), strict=True):
                results[i] = value
    except BaseException:
        for future in later:
            future.cancel()
        for i, coro in enumerate(coros):
            if results[i] is _PENDING and i not in index:
                coro.close()
        raise
    return results


async def _finish(coro: Coroutine[Any, Any, Any], context: contextvars.Context,
                  yielded: Any) -> Any:
    """Drive a coroutine that suspended on ``yielded`` to its end, as a Task would: wait for
    the future it yielded (a bare ``yield`` is one turn of the loop), then resume it."""
    while True:
        try:
            if yielded is None:
                await asyncio.sleep(0)
            else:
                yielded._asyncio_future_blocking = False
                await asyncio.wait([yielded])
        except asyncio.CancelledError:
            coro.close()
            raise
        try:
            yielded = context.run(coro.send, None)
        except StopIteration as stop:
            return stop.value
