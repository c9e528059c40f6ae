"""Handles over the local engine's child processes: a WorkerHandle over a worker
(:mod:`capevolve._engine.child`) and a ScorerHandle over a scorer
(:mod:`capevolve._engine.score_child`).

Requests and replies are JSON lines (see :mod:`capevolve._engine.channel`). A worker's
exchange returns :class:`~capevolve._engine.contract.KeyedOutcomes`: the driver parses only
the keys, and the outcomes travel on, unparsed, as the payload line of a scorer's request,
so the driver neither decodes outcomes nor scores. A reply that never comes (the process
died, or stopped answering for ``reply_timeout_s``) is
WorkerLost, and the process is killed. :meth:`prepare` on a dead worker starts a fresh
process, so the dispatcher's recovery restarts it. Each worker leads its own process
group (so a Ctrl-C at the terminal reaches the driver only, which then ends its workers),
and the whole group is killed when the worker ends: whatever candidate code forked or
left running does not outlive the evaluation.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from capevolve._engine.contract import (
    EvalJob,
    KeyedOutcomes,
    Picked,
    RowBatch,
    ScoreJob,
    WorkerLost,
)
from capevolve._engine.plan import WorkUnit
from capevolve._engine.wire import (
    MAX_LINE,
    dumps,
    encode,
    job_to_wire,
    score_job_to_wire,
    units_to_wire,
)
from capevolve.errors import EngineError

START_TIMEOUT_S = 120.0


def _child_env() -> dict[str, str]:
    """The driver's environment; when the driver found capevolve through ``sys.path``
    (a source checkout), that directory goes first on the child's path too."""
    env = dict(os.environ)
    here = str(Path(__file__).resolve().parents[2])  # the folder holding capevolve/
    if here in {str(Path(p).resolve()) for p in sys.path if p}:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH")) if p)
    return env


_NATIVE = {signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGABRT}
HINT = ("a native crash in user code? with engine.isolation: process it is a crash row of "
        "its unit instead")


def _how(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code)
        except ValueError:
            return f"killed by signal {-code}"
        return f"killed by {name.name}" + (f"; {HINT}" if name in _NATIVE else "")
    if code is None or code == 0:
        return "still running" if code is None else "exit code 0"
    return f"exit code {code}; {HINT}"  # the worker itself only ever exits with 0


class _Child:
    """One child process speaking the channel protocol; started again on demand."""

    module = ""

    def __init__(self, name: str, init: dict[str, Any], reply_timeout_s: float) -> None:
        self.name = name
        self.init = {"op": "init", "name": name, **init}
        self.reply_timeout_s = reply_timeout_s
        self.proc: asyncio.subprocess.Process | None = None
        self.prepared: dict[str, Any] = {}
        self._lock = asyncio.Lock()  # one request at a time on the pipe

    @property
    def pid(self) -> int | None:
        """The live process id (for fault-injection tests), or None."""
        return self.proc.pid if self.proc is not None and self.proc.returncode is None else None

    async def _start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            # -P: the working directory is not put on the path (a json.py there, or a
            # candidate's file, cannot shadow a module of the child)
            sys.executable, "-P", "-m", self.module, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, env=_child_env(), limit=MAX_LINE,
            start_new_session=True)  # its own group: ended as one, no terminal signals
        self.prepared = {}
        await self._call(self.init, START_TIMEOUT_S)

    async def _prepare(self, job: Any, to_wire: Callable[[Any], dict[str, Any]]) -> None:
        if self.pid is None:
            await self._start()
        if self.prepared.get(job.eval_id) is not job:
            await self._call(_prepare_request(job, to_wire), START_TIMEOUT_S)
            self.prepared[job.eval_id] = job

    async def _call(self, message: dict[str, Any] | bytes, timeout_s: float,
                    payload: bytes | None = None) -> dict[str, Any]:
        """Send one request (and its payload line) and return the reply; a reply with a
        payload line has it under ``"payload"`` (bytes, unparsed)."""
        async with self._lock:
            return await self._exchange_lines(message, timeout_s, payload)

    async def _exchange_lines(self, message: dict[str, Any] | bytes, timeout_s: float,
                              payload: bytes | None) -> dict[str, Any]:
        proc = self.proc
        if proc is None or proc.stdin is None or proc.stdout is None:
            raise WorkerLost(f"{self.name} is not running")
        extra = b""
        try:
            if isinstance(message, bytes):  # an encoded request
                data = message
            elif payload is not None:
                data = encode({**message, "more": True}) + payload + b"\n"
            else:
                data = encode(message)
            proc.stdin.write(data)
            await proc.stdin.drain()
            async with asyncio.timeout(timeout_s):
                line = await proc.stdout.readline()
                reply = _parse(line)
                if reply is not None and reply.get("more"):
                    extra = await proc.stdout.readline()
                    if not extra.endswith(b"\n"):
                        reply = None  # the process ended halfway through its reply
        except (TimeoutError, ConnectionError, asyncio.LimitOverrunError, ValueError) as exc:
            reply, why = None, f"{type(exc).__name__}"
        else:
            why = "no reply"
        if reply is None:
            await self._kill()
            raise WorkerLost(f"{self.name} (pid {proc.pid}) lost: {why}, {_how(proc.returncode)}")
        if "error" in reply:
            raise EngineError(f"{self.name}: {reply['error']}")
        if extra:
            reply["payload"] = extra[:-1]
        return reply

    async def _kill(self) -> None:
        """Kill the process and everything left in its group (forks, leaked children)."""
        proc = self.proc
        if proc is None:
            return
        if proc.returncode is None:
            _kill_group(proc.pid)
            proc.kill()
            await proc.wait()
        _kill_group(proc.pid)

    async def close(self) -> None:
        """End the process: close its stdin (it exits at once), kill it if it lingers."""
        proc = self.proc
        if proc is None:
            return
        if proc.returncode is None and proc.stdin is not None:
            proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), timeout=5.0)
            except TimeoutError:
                pass
        await self._kill()


class ProcessWorker(_Child):
    """One worker process running a WorkerCore; restarted on demand after a loss."""

    module = "capevolve._engine.child"

    def __init__(self, name: str, slots: int, init: dict[str, Any],
                 reply_timeout_s: float) -> None:
        super().__init__(name, {"slots": slots, **init}, reply_timeout_s)
        self.slots = slots

    async def prepare(self, job: EvalJob) -> None:
        await self._prepare(job, job_to_wire)

    async def exchange(self, eval_id: str, units: list[WorkUnit],
                       max_wait_s: float) -> KeyedOutcomes:
        if self.pid is None:
            raise WorkerLost(f"{self.name} is not running")
        reply = await self._call({"op": "exchange", "eval_id": eval_id,
                                  "units": units_to_wire(units), "max_wait_s": max_wait_s,
                                  "slots": self.slots},  # the dispatcher may change it
                                 max_wait_s + self.reply_timeout_s)
        keys = reply.get("keys")
        return KeyedOutcomes(keys if isinstance(keys, list) else [],
                             reply.get("payload", b"[]"))


class ProcessScorer(_Child):
    """One scorer process running a ScorerCore (the project's adapter only, never a
    candidate's files); restarted on demand after a loss. It scores the outcomes of
    :class:`ProcessWorker` exchanges, which it receives unparsed (their payload)."""

    module = "capevolve._engine.score_child"

    async def prepare(self, job: ScoreJob) -> None:
        await self._prepare(job, score_job_to_wire)

    async def score(self, eval_id: str, items: list | Picked) -> RowBatch:
        if self.pid is None:
            raise WorkerLost(f"{self.name} is not running")
        if isinstance(items, Picked):
            payload, picks = items.payload, items.picks
        else:  # (outcome, seed) pairs the dispatcher accepted (their keys are checked)
            payload = [raw for raw, _ in items]
            picks = [(i, raw["task_id"], raw["trial"], seed)
                     for i, (raw, seed) in enumerate(items)]
        if not isinstance(payload, bytes):
            payload = dumps(payload)
        reply = await self._call({"op": "score", "eval_id": eval_id, "picks": picks},
                                 self.reply_timeout_s, payload)
        columns, n = reply.get("columns"), reply.get("n")
        if not isinstance(columns, dict) or type(n) is not int:
            raise EngineError(f"{self.name}: a score reply without its columns")
        return RowBatch(columns, n)


_PREPARED: dict[int, tuple[Any, bytes]] = {}
"""The encoded ``prepare`` request of the last few jobs (by id; the job is held beside it)."""


def _prepare_request(job: Any, to_wire: Callable[[Any], dict[str, Any]]) -> bytes:
    """The ``prepare`` request of ``job``, encoded once for every child it goes to (a job
    carries every task of the split: tens of MB for a large one)."""
    key = id(job) ^ id(to_wire)
    held = _PREPARED.get(key)
    if held is None or held[0] is not job:
        held = (job, encode({"op": "prepare", "job": to_wire(job)}))
        if len(_PREPARED) >= 4:  # the jobs of the evaluations running now
            _PREPARED.pop(next(iter(_PREPARED)))
        _PREPARED[key] = held
    return held[1]


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        reply = json.loads(line) if line else None
    except ValueError:
        return None
    return reply if isinstance(reply, dict) and ("ok" in reply or "error" in reply) else None
