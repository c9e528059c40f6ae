"""Run one ``run_target`` call in a child process, so a native crash is a row, not a loss."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

from capevolve._engine.contain import UserExit
from capevolve.adapter import Rollout, Task, TransientError
from capevolve.models import Meter, ModelSettings, scope


class ChildCrash(Exception):
    """The isolated child died without returning a result."""


def _signal_name(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"


async def run_isolated(project_root: str, adapter_spec: str, candidate: Path, task: Task,
                       trial: int, seed: int, timeout_s: float,
                       settings: ModelSettings | None, meter: Meter) -> Any:
    """The child's Rollout, run in a model scope of ``settings`` with usage merged into
    ``meter``. Raises ChildCrash, TimeoutError, TransientError, UserExit or RuntimeError."""
    fd, result_path = tempfile.mkstemp(prefix="capevolve-isolated-", suffix=".json")
    os.close(fd)
    request = json.dumps([project_root, adapter_spec, str(candidate),
                          task.model_dump(mode="json"), trial, seed, result_path,
                          None if settings is None else settings.to_json()]).encode()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-P", "-m", "capevolve._engine.isolation", stdin=asyncio.subprocess.PIPE,
        stdout=sys.stderr.fileno(), stderr=sys.stderr.fileno(), start_new_session=True)
    try:
        await asyncio.wait_for(proc.communicate(request), timeout=timeout_s)
        with open(result_path, "rb") as fh:
            data = fh.read()
        if not data:
            raise ChildCrash(f"isolated run_target process died ({_signal_name(proc.returncode)})")
        status, payload, usage = json.loads(data)
        meter.merge(usage)
    finally:  # a timeout or a cancellation from outside: never leave the child running
        if proc.returncode is None:
            proc.kill()
            await asyncio.shield(proc.wait())
        kill_group(proc.pid)  # whatever the call forked or left running ends with it
        Path(result_path).unlink(missing_ok=True)
    if status == "ok":
        return _rollout(payload)
    if status == "transient":
        raise TransientError(payload)
    if status == "bad":
        return payload  # not a Rollout: the caller reports the wrong type
    if status == "exit":
        raise UserExit(payload)
    raise RuntimeError(payload)


def _rollout(payload: Any) -> Any:
    """The child's Rollout; an invalid one is rebuilt with ``model_construct``, as without
    isolation."""
    if not isinstance(payload, dict):
        return payload  # not a Rollout: the caller reports the wrong type
    try:
        return Rollout.model_validate(payload)
    except ValueError:
        fields = {k: v for k, v in payload.items() if k in Rollout.model_fields}
        return Rollout.model_construct(**fields)


def kill_group(pgid: int) -> None:
    """SIGKILL what is left of a child's process group (an isolated call's, a worker's)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _child_main() -> None:
    from capevolve._engine.contain import contained
    from capevolve._project.calls import call_sync
    from capevolve._project.loader import load_adapter

    root, spec, candidate, task, trial, seed, result_path, model = \
        json.loads(sys.stdin.buffer.read())
    meter = Meter()
    try:
        adapter = load_adapter(Path(root), spec)
        with scope(None if model is None else ModelSettings.model_validate_json(model), meter):
            rollout = call_sync(contained(adapter.run_target, "run_target"), Path(candidate),
                                Task.model_validate(task), trial=trial, seed=seed)
        result = (("ok", rollout.model_dump(warnings=False)) if isinstance(rollout, Rollout)
                  else ("bad", type(rollout).__name__))
    except TransientError as exc:
        result = ("transient", f"{type(exc).__name__}: {exc}")
    except UserExit as exc:
        result = ("exit", str(exc))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent as data
        result = ("raise", f"{type(exc).__name__}: {exc}")
    with open(result_path, "w", encoding="utf-8") as fh:
        json.dump([*result, meter.snapshot()], fh, default=repr)
        fh.flush()
    os._exit(0)  # threads the call left running (daemon or not) end here, not at a timeout


if __name__ == "__main__":
    _child_main()
