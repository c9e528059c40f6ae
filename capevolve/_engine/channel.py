"""The private reply channel of the local engine's child processes (workers and scorers).

A child reads one JSON request per line on stdin and writes its replies on the process's
original stdout, which is kept private: file descriptor 1 is pointed at stderr before any
user code runs, so whatever an adapter prints cannot corrupt the protocol. A request or
reply may carry one *payload line* after it (``"more": true``): raw JSON bytes passed on
without being parsed by whoever does not need them (a worker's outcomes go through the
driver to a scorer this way). End of stdin (the driver closed it, or died) ends the process.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Coroutine
from typing import Any

from capevolve._engine.contain import end_forks_of
from capevolve._engine.wire import MAX_LINE, encode


class Replies:
    """Writes reply lines (and their payload line) to the private channel."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def send(self, message: dict[str, Any], payload: bytes | None = None) -> None:
        """One reply; with ``payload`` (one line of JSON, no newline inside) it follows the
        reply, which then says ``"more": true``."""
        data = encode({**message, "more": True}) + payload + b"\n" if payload is not None \
            else encode(message)
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view):]


async def requests() -> Any:
    """The requests on stdin as ``(request dict, payload bytes or None)``, until it ends."""
    import json

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        request = json.loads(line)
        payload = None
        if isinstance(request, dict) and request.get("more"):
            payload = (await reader.readline()).rstrip(b"\n")
        yield request, payload


def run_child(serve: Callable[[Replies], Coroutine[Any, Any, None]], what: str,
              at_exit: Callable[[], None] | None = None) -> None:
    """Keep the reply channel private, then ``serve`` until stdin closes; the process
    always ends with ``os._exit(0)`` (after ``at_exit``)."""
    replies = Replies(os.dup(1))
    os.dup2(2, 1)
    end_forks_of((replies.fd,))  # a fork made by user code never speaks for us
    try:
        asyncio.run(serve(replies))
    except BaseException as exc:  # noqa: BLE001 - the driver sees the end of the channel
        print(f"capevolve {what} {os.getpid()}: {type(exc).__name__}: {exc}", file=sys.stderr)
    finally:
        if at_exit is not None:
            at_exit()
        os._exit(0)  # running calls (daemon threads, children) end with the process
