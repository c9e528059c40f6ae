"""Calling sync or async adapter methods from sync or async code."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any


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
    """Call ``fn`` from a running event loop without blocking it."""
    if inspect.iscoroutinefunction(fn):
        return await fn(*args, **kwargs)
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()  # the caller's context (a rollout's model scope)
    result = await loop.run_in_executor(executor, lambda: context.run(fn, *args, **kwargs))
    if inspect.isawaitable(result):
        return await result
    return result


class DaemonThreadPool(Executor):
    """A thread pool whose threads never block interpreter exit."""

    def __init__(self, max_workers: int) -> None:
        self._max = max_workers
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._lock = threading.Lock()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        self._queue.put((future, fn, args, kwargs))
        with self._lock:
            if self._idle == 0 and len(self._threads) < self._max:
                thread = threading.Thread(target=self._work, daemon=True,
                                          name=f"unit_{len(self._threads)}")
                self._threads.append(thread)
                thread.start()
            else:
                self._idle -= 1 if self._idle else 0
        return future

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            future, fn, args, kwargs = item
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args, **kwargs))
                except BaseException as exc:  # noqa: BLE001 - delivered to the caller
                    future.set_exception(exc)
            with self._lock:
                self._idle += 1

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop idle threads; busy ones finish (or die with the process)."""
        for _ in self._threads:
            self._queue.put(None)
