"""A WorkerHandle over a worker subprocess (:mod:`capevolve._engine.child`): a missing reply
kills its process group and is WorkerLost, and the permits it held are returned.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

from capevolve._engine import sandbox
from capevolve._engine.contract import SCRATCH_PREFIX, EvalJob, Outcome, WorkerLost
from capevolve._engine.isolation import kill_group
from capevolve._engine.materialize import unpack
from capevolve._engine.plan import WorkUnit
from capevolve._engine.wire import MAX_LINE, encode, job_to_wire, units_to_wire
from capevolve._project.taskfile import TaskFile
from capevolve.errors import EngineError

START_TIMEOUT_S = 120.0
REPLY_MARGIN_S = 60.0
"""Slack past a unit's longest run (every attempt timing out) before its reply is missing."""


def _child_env() -> dict[str, str]:
    """The driver's environment, with a source checkout of capevolve first on PYTHONPATH."""
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


class ProcessWorker:
    """A worker process running a WorkerCore; restarted on demand after a loss."""

    def __init__(self, name: str, slots: int, init: dict[str, Any], limiter: Any = None) -> None:
        self.name, self.slots = name, slots
        self.init = {"op": "init", "name": name, "slots": slots, **init,
                     "limited": limiter is not None}
        self.reply_timeout_s = init["timeout_s"] * (init["retries"] + 1) + REPLY_MARGIN_S
        self.limiter = limiter
        self.held = 0  # permits granted to the process and not yet released
        self.granting: set[asyncio.Task] = set()
        self.proc: asyncio.subprocess.Process | None = None
        self.prepared: dict[str, EvalJob] = {}
        self.sandboxed: str | None = None  # the candidate hash of the running sandbox
        self.scratch: str | None = None  # its unpacked candidate (outside the sandbox)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None and self.proc.returncode is None else None

    async def _start(self, job: EvalJob) -> None:
        # -P: the working directory is not put on the path (a json.py there, or a
        # candidate's file, cannot shadow a module of the worker)
        argv = [sys.executable, "-P", "-m", "capevolve._engine.child"]
        init = self.init
        if job.sandbox is not None:
            argv, scratch = self._sandboxed(job, argv)
            init = {**init, "scratch": scratch}
        self.proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, env=_child_env(), limit=MAX_LINE,
            start_new_session=True)  # its own group: ended as one, no terminal signals
        self.prepared = {}
        await self._call(init, START_TIMEOUT_S)

    def _sandboxed(self, job: EvalJob, argv: list[str]) -> tuple[list[str], str]:
        """The sandbox argv for ``job``'s candidate and the scratch dir it was unpacked into."""
        assert job.sandbox is not None
        sandbox.require()
        exposure = sandbox.exposure_of(job.sandbox, job.project_root)
        self._drop_scratch()
        self.scratch = tempfile.mkdtemp(prefix=SCRATCH_PREFIX)
        unpack(job.candidate_files, Path(self.scratch) / job.candidate_hash[:32])
        empty = Path(self.scratch) / "empty"  # what a hidden file shows
        empty.touch()
        self.sandboxed = job.candidate_hash
        return sandbox.command(exposure, argv, [self.scratch], str(empty)), self.scratch

    def _in_sandbox(self, job: EvalJob) -> EvalJob:
        """``job`` with its task file linked into the scratch dir, hiding the run dir."""
        if self.scratch is None or not isinstance(job.tasks, TaskFile):
            return job
        inside = Path(self.scratch) / f"{job.eval_id}.tasks"
        if not inside.exists():
            try:
                os.link(job.tasks.path, inside)
            except OSError:
                shutil.copyfile(job.tasks.path, inside)
        return dataclasses.replace(job, tasks=dataclasses.replace(job.tasks, path=str(inside)))

    def _drop_scratch(self) -> None:
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None

    async def prepare(self, job: EvalJob) -> None:
        if self.pid is not None and job.sandbox is not None \
                and self.sandboxed != job.candidate_hash:
            await self.close()  # a sandbox holds one candidate: start another for this one
        if self.pid is None:
            await self._start(job)
        if self.prepared.get(job.eval_id) is not job:
            await self._call({"op": "prepare", "job": job_to_wire(self._in_sandbox(job))},
                             START_TIMEOUT_S)
            self.prepared[job.eval_id] = job

    async def exchange(self, eval_id: str, units: list[WorkUnit],
                       max_wait_s: float) -> list[Outcome]:
        if self.pid is None:
            raise WorkerLost(f"{self.name} is not running")
        reply = await self._call({"op": "exchange", "eval_id": eval_id,
                                  "units": units_to_wire(units), "max_wait_s": max_wait_s,
                                  "slots": self.slots},  # the dispatcher may change it
                                 max_wait_s + self.reply_timeout_s)
        return reply.get("outcomes", [])

    async def _call(self, message: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        proc = self.proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        deadline = asyncio.get_running_loop().time() + timeout_s
        try:
            proc.stdin.write(encode(message))
            await proc.stdin.drain()
            while True:  # limiter requests come before the reply, or between replies
                line = await asyncio.wait_for(
                    proc.stdout.readline(),
                    timeout=max(0.0, deadline - asyncio.get_running_loop().time()))
                if not self._limiter_request(line):
                    break
        except (TimeoutError, ConnectionError, asyncio.LimitOverrunError, ValueError) as exc:
            line, why = b"", f"{type(exc).__name__}"
        else:
            why = "no reply"
        reply = _parse(line)
        if reply is None:
            await self._kill()
            raise WorkerLost(f"{self.name} (pid {proc.pid}) lost: {why}, {_how(proc.returncode)}")
        if "error" in reply:
            raise EngineError(f"{self.name}: {reply['error']}")
        return reply

    def _limiter_request(self, line: bytes) -> bool:
        """Serve ``line`` if it is a limiter request (True); grants are written back later."""
        if self.limiter is None or not line.startswith(b'{"limiter"'):
            return False
        request = json.loads(line)
        if request.get("limiter") == "release":
            if self.held > 0:  # never more than were granted to this process
                self.held -= 1
                self.limiter.release()
        elif request.get("limiter") == "acquire":
            task = asyncio.get_running_loop().create_task(self._grant(request.get("id")))
            self.granting.add(task)
            task.add_done_callback(self.granting.discard)
        return True

    async def _grant(self, ask: Any) -> None:
        proc = self.proc
        try:
            start_at = await self.limiter.acquire()
        except Exception as exc:  # noqa: BLE001 - the unit becomes an error row
            granted, answer = False, {"op": "grant", "id": ask,
                                      "error": f"{type(exc).__name__}: {exc}"}
        else:
            granted, answer = True, {"op": "grant", "id": ask, "at": start_at}
        try:
            if proc is None or proc is not self.proc or proc.returncode is not None \
                    or proc.stdin is None:
                raise ConnectionError("the process that asked is gone")
            proc.stdin.write(encode(answer))
        except (ConnectionError, RuntimeError):
            if granted:
                self.limiter.release()
            return
        self.held += granted

    async def _kill(self) -> None:
        proc = self.proc
        if proc is None:
            return
        if proc.returncode is None:
            kill_group(proc.pid)
            proc.kill()
            await proc.wait()
        kill_group(proc.pid)
        while self.held > 0:  # the permits the process held come back
            self.held -= 1
            self.limiter.release()
        self.sandboxed = None
        self._drop_scratch()

    async def close(self) -> None:
        """Close the process's stdin; kill it if it lingers."""
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


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        reply = json.loads(line) if line else None
    except ValueError:
        return None
    return reply if isinstance(reply, dict) and ("ok" in reply or "error" in reply) else None
