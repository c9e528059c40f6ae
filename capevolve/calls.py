"""Calling adapter methods that may be sync or async, from sync or async code."""

from __future__ import annotations

import asyncio
import inspect
from concurrent.futures import Executor
from typing import Any, Callable


def call_sync(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``fn`` from synchronous code; a coroutine result is run to completion."""
    result = fn(*args, **kwargs)
    if inspect.isawaitable(result):
        return asyncio.run(_await(result))
    return result


async def _await(awaitable: Any) -> Any:
    return await awaitable


async def call_async(
    fn: Callable[..., Any], *args: Any, executor: Executor | None = None, **kwargs: Any
) -> Any:
    """Call ``fn`` from a running event loop without blocking it.

    ``async def`` methods are awaited directly; plain functions run in ``executor`` (a thread
    pool sized to the engine's concurrency), so blocking adapters do not stall the loop.
    """
    if inspect.iscoroutinefunction(fn):
        return await fn(*args, **kwargs)
    loop = asyncio.get_running_loop()
    result = await loop.run_in_executor(executor, lambda: fn(*args, **kwargs))
    if inspect.isawaitable(result):
        return await result
    return result
