"""The local worker process, where candidate code runs; end of stdin ends it and its group."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
from typing import Any

from capevolve._engine.collector import settle_worker_heap
from capevolve._engine.contain import end_forks_of
from capevolve._engine.wire import MAX_LINE, encode, job_from_wire, units_from_wire
from capevolve.errors import CapevolveError


def _send(fd: int, message: dict[str, Any]) -> None:
    """Write one reply line to the private channel ``fd``."""
    data = memoryview(encode(message))
    while data:
        data = data[os.write(fd, data):]


class ChannelLimiter:
    """The parent's limiter over the channel: ``{"limiter": "acquire", "id": n}`` out,
    ``{"op": "grant", "id": n, "at": t}`` in, ``{"limiter": "release"}`` out."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.waiting: dict[int, asyncio.Future[float | None]] = {}
        self.next_id = 0

    async def acquire(self) -> float | None:
        self.next_id += 1
        ask = self.next_id
        granted: asyncio.Future[float | None] = asyncio.get_running_loop().create_future()
        self.waiting[ask] = granted
        _send(self.fd, {"limiter": "acquire", "id": ask})
        return await granted

    def release(self) -> None:
        _send(self.fd, {"limiter": "release"})

    def grant(self, message: dict[str, Any]) -> None:
        """Resolve a waiting acquire with the parent's grant or ``error``."""
        waiter = self.waiting.pop(int(message.get("id", -1)), None)
        if waiter is None or waiter.done():
            return
        if "error" in message:
            waiter.set_exception(CapevolveError(str(message["error"])))
        else:
            at = message.get("at")
            waiter.set_result(float(at) if isinstance(at, (int, float)) else None)


async def _serve(fd: int) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    limiter = ChannelLimiter(fd)
    requests: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    tasks = {loop.create_task(_read(reader, requests, limiter)),
             loop.create_task(_handle(requests, fd, limiter))}
    done, running = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    for task in running:  # end of stdin, or a failure: the process ends
        task.cancel()
    for task in done:
        task.result()


async def _read(reader: asyncio.StreamReader, requests: asyncio.Queue[dict[str, Any]],
                limiter: ChannelLimiter) -> None:
    while line := await reader.readline():
        request = json.loads(line)
        if request.get("op") == "grant":
            limiter.grant(request)
        else:
            requests.put_nowait(request)


async def _handle(requests: asyncio.Queue[dict[str, Any]], fd: int,
                  limiter: ChannelLimiter) -> None:
    from capevolve._engine.worker import WorkerCore

    core: WorkerCore | None = None
    while True:
        request = await requests.get()
        op = request.get("op")
        try:
            if op == "init":
                core = WorkerCore(request["project_root"], request["adapter_spec"],
                                  request["slots"], request["timeout_s"], request["retries"],
                                  worker_id=f"{request['name']}-{os.getpid()}",
                                  node_id=request.get("node_id") or socket.gethostname(),
                                  isolation=request["isolation"],
                                  scratch=request.get("scratch"))
                if request.get("limited"):
                    core.limiter = limiter
                settle_worker_heap()  # the project is loaded: never rescanned by the collector
                _send(fd, {"ok": True, "pid": os.getpid(), "worker_id": core.worker_id})
            elif op == "prepare" and core is not None:
                job = job_from_wire(request["job"])
                core.jobs.pop(job.eval_id, None)  # same eval id, maybe another run: replace
                core.prepare(job)
                _send(fd, {"ok": True})
            elif op == "exchange" and core is not None:
                outcomes = await core.exchange(request["eval_id"],
                                               units_from_wire(request["units"]),
                                               request["max_wait_s"], request.get("slots"))
                _send(fd, {"ok": True, "outcomes": outcomes})
            else:
                _send(fd, {"error": f"unexpected request {op!r}"})
        except CapevolveError as exc:
            _send(fd, {"error": str(exc)})
        except KeyError as exc:
            _send(fd, {"error": f"KeyError: {exc}"})


def main() -> None:
    """Keep the reply channel private, serve until stdin closes, then end the group."""
    fd = os.dup(1)  # the reply channel
    os.dup2(2, 1)
    end_forks_of((fd,))  # a fork made by candidate code never speaks for us
    try:
        asyncio.run(_serve(fd))
    except BaseException as exc:  # noqa: BLE001 - the driver sees the end of the channel
        print(f"capevolve worker {os.getpid()}: {type(exc).__name__}: {exc}", file=sys.stderr)
    finally:
        _end_group()
        os._exit(0)  # running rollouts (daemon threads, children) end with the process


def _end_group() -> None:
    """SIGTERM the rest of this worker's group, in case the driver died."""
    if os.getpgid(0) != os.getpid():
        return  # not a group leader (started by hand): the group is not ours
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        os.killpg(0, signal.SIGTERM)
    except OSError:
        pass


if __name__ == "__main__":
    main()
