"""capevolve's own local Ray, shared by one user's commands: find, start, join and stop it.
Starting holds the state dir's lock, so concurrent commands start one daemon.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from capevolve._engine.ray.owned_state import (
    DAEMON_MODULE,
    KV_KEY,
    KV_NAMESPACE,
    WARM_KEEPER,
    WARM_NAMESPACE,
    OwnedRay,
    alive,
    connected_drivers,
    drivers_path,
    ensure_dir,
    env_digest,
    locked,
    read_state,
    state_dir,
    state_path,
    token_path,
    write_private,
)
from capevolve.errors import EngineError

REUSE_ENV = "CAPEVOLVE_RAY_REUSE"
IDLE_ENV = "CAPEVOLVE_RAY_IDLE_S"
DEFAULT_IDLE_S = 900.0
START_TIMEOUT_S = 300.0
"""Longest wait for the owned Ray to come up."""
STOP_TIMEOUT_S = 60.0


def reuse_enabled(configured: bool = True) -> bool:
    """``configured``, unless CAPEVOLVE_RAY_REUSE is 0 / false / no / off."""
    flag = os.environ.get(REUSE_ENV, "").strip().lower()
    return configured and flag not in ("0", "false", "no", "off")


def idle_timeout() -> float:
    """Seconds without a driver before a new owned Ray stops itself."""
    raw = os.environ.get(IDLE_ENV)
    try:
        value = float(raw) if raw else DEFAULT_IDLE_S
    except ValueError:
        raise EngineError(f"{IDLE_ENV}={raw!r}: expected a number of seconds") from None
    if not value > 0 or value != value or value == float("inf"):
        raise EngineError(f"{IDLE_ENV}={raw!r}: expected a positive, finite number of seconds")
    return value


def env_changes(state: OwnedRay) -> dict[str, str]:
    """Variables whose values the owned Ray's workers lack."""
    mine = dict(os.environ)
    return {k: mine[k] for k, digest in env_digest(mine).items() if state.env.get(k) != digest}


def _reachable(address: str) -> bool:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=2.0):
            return True
    except (OSError, ValueError):
        return False


def started_here() -> str | None:
    """The local ``ray start`` cluster's address if it answers, else None."""
    from ray._private.utils import read_ray_address

    address = read_ray_address()
    return address if address and _reachable(address) else None


def connect(directory: Path | None = None) -> OwnedRay:
    """This installation's owned Ray, started first when none is usable."""
    directory = ensure_dir(directory or state_dir())
    with locked(directory):
        return _usable(directory)


def join_owned(start: bool = True, **init_kwargs: Any) -> OwnedRay | None:
    """Join the owned Ray, starting one if none is usable (without ``start``: None)."""
    directory = ensure_dir(state_dir())
    with locked(directory):
        state = _usable(directory) if start else read_state(state_path(directory))
        if state is None or not (start or (alive(state) and _reachable(state.address))):
            return None
        join(state, **init_kwargs)
    return state


def _usable(directory: Path) -> OwnedRay:
    """Under the lock: the recorded owned Ray if reachable, else a new one."""
    path = state_path(directory)
    state = read_state(path)
    if state is not None and alive(state) and _reachable(state.address):
        return state
    if state is not None:
        _stop(state, path)
    return _start(directory, path)


JOINING = threading.Lock()
"""Held while this process starts or joins Ray."""
INIT_KWARGS: dict[str, Any] = {"log_to_driver": True, "configure_logging": False}


def join_quietly(address: str | None, reuse: bool = True) -> None:
    """Join, never start, a running Ray, ignoring errors (the engine's start raises them)."""
    import logging

    import ray

    quiet = logging.getLogger("ray._private.worker")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # "SIGTERM handler is not set" (the engine's start sets it)
    try:
        with JOINING:
            if ray.is_initialized():
                return
            address = address or os.environ.get("RAY_ADDRESS") or started_here()
            if address:
                ray.init(address=address, include_dashboard=False, **INIT_KWARGS)
            elif reuse_enabled(reuse):
                join_owned(start=False, **INIT_KWARGS)
            if ray.is_initialized():  # the first serialisation sets up Ray's serialisers
                ray.put(None)  # (its addons import pydantic.v1 and starlette): do it here
            if _JOINED:  # the first call to the warm pool's keeper (finding it)
                keeper = ray.get_actor(WARM_KEEPER, namespace=WARM_NAMESPACE)
                ray.get(keeper.stats.remote(), timeout=5.0)
    except Exception:  # noqa: BLE001,S110 - the engine's own start raises it again
        pass
    finally:
        quiet.setLevel(level)


_JOINED: dict[str, Any] = {}
"""``state`` and env ``changes`` of the owned Ray joined."""


def joined() -> tuple[OwnedRay, dict[str, str]] | None:
    """``(state, env changes)`` of the owned Ray joined, or None."""
    if not _JOINED:
        return None
    return _JOINED["state"], _JOINED["changes"]


def join(state: OwnedRay, **init_kwargs: Any) -> None:
    """Join ``state``'s cluster as a driver; EngineError when its session does not match."""
    import ray
    from ray.experimental import internal_kv

    changes = env_changes(state)
    use_token(token_path(Path(state.state_file)))
    ray.init(address=state.address, runtime_env={"env_vars": changes} if changes else None,
             **init_kwargs)
    held = internal_kv._internal_kv_get(KV_KEY, namespace=KV_NAMESPACE)
    if held != state.session.encode():
        ray.shutdown()
        raise EngineError(f"the Ray at {state.address} is not the one capevolve started "
                          "(session mismatch); refusing it")
    _JOINED.update(state=state, changes=changes)


def auth_env(token: Path) -> dict[str, str]:
    """Variables making Ray authenticate with ``token``."""
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)}


def use_token(token: Path) -> None:
    """Authenticate with ``token``; Ray read its auth settings on import, so reload them."""
    from ray._raylet import (  # type: ignore[attr-defined]  # private; checked by its test
        AuthenticationTokenLoader,
        Config,
    )

    os.environ.pop("RAY_AUTH_TOKEN", None)
    os.environ.update(auth_env(token))
    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


def _start(directory: Path, path: Path) -> OwnedRay:
    session = secrets.token_hex(16)
    write_private(token_path(path), secrets.token_hex(32))
    temp_dir = Path(tempfile.gettempdir()) / f"capevolve-ray-{session[:10]}"
    env = {**{k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_AUTH_TOKEN")},
           **auth_env(token_path(path))}
    log_path = directory / "daemon.log"
    idle = idle_timeout()
    sys.stderr.write(f"capevolve: starting a local Ray (10-30 s the first time); it stays warm "
                     f"for later commands until {idle / 60:g} min without one "
                     f"({IDLE_ENV} sets it; `capevolve down` stops it now)\n")
    sys.stderr.flush()
    cmd = [sys.executable, "-m", DAEMON_MODULE, "--state", str(path), "--session", session,
           "--temp-dir", str(temp_dir), "--idle", repr(idle),
           "--num-cpus", str(os.cpu_count() or 1)]
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                cwd=directory, env=env)
    threading.Thread(target=proc.wait, daemon=True, name="owned-ray-reaper").start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise EngineError(f"the local Ray did not start (daemon exit {proc.returncode}); "
                              f"see {log_path}: {_last_line(log_path)}")
        state = read_state(path)
        if state is not None and state.session == session:
            return state
        time.sleep(0.1)
    proc.kill()
    raise EngineError(f"the local Ray did not start within {START_TIMEOUT_S:g}s; see {log_path}")


def _last_line(path: Path) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return "no log"
    return lines[-1] if lines else "empty log"


def _stop(state: OwnedRay, path: Path) -> bool:
    """Stop ``state``'s daemon (SIGTERM, then SIGKILL) and remove its files; True if it ran."""
    running = alive(state)
    if running:
        os.kill(state.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while alive(state) and time.monotonic() < deadline:
            time.sleep(0.1)
        if alive(state):
            os.kill(state.pid, signal.SIGKILL)  # Ray's head processes share its fate
            while alive(state):
                time.sleep(0.05)
    for stale in (path, token_path(path), drivers_path(path)):
        stale.unlink(missing_ok=True)
    temp = Path(state.temp_dir)
    if temp.parent == Path(tempfile.gettempdir()) and temp.name.startswith("capevolve-ray-"):
        shutil.rmtree(temp, ignore_errors=True)
    return running


def down(directory: Path | None = None, force: bool = False) -> dict[str, Any]:
    """Stop the owned Ray, remove its state and say what was done. EngineError while commands
    use it (unless ``force``) or if it is another user's; an invalid state is just removed."""
    directory = directory or state_dir()
    path = state_path(directory)
    if not path.exists():
        return {"stopped": False, "state": str(path), "message": "no owned Ray is running"}
    with locked(ensure_dir(directory)):
        try:
            state = read_state(path)
        except EngineError as exc:
            if path.exists() and path.stat().st_uid != os.getuid():
                raise
            path.unlink(missing_ok=True)
            return {"stopped": False, "state": str(path),
                    "message": f"removed an invalid state file: {exc}"}
        if state is None:
            return {"stopped": False, "state": str(path), "message": "no owned Ray is running"}
        busy = connected_drivers(path) if alive(state) else []
        if busy and not force:
            raise EngineError(f"the owned Ray at {state.address} is in use by "
                              f"{len(busy)} command(s) (pid {', '.join(map(str, busy))}); "
                              "stopping it would cut their evaluations short: wait, or "
                              "`capevolve down --force`")
        running = _stop(state, path)
    return {"stopped": running, "state": str(path), "address": state.address, "pid": state.pid,
            "message": (f"stopped the owned Ray at {state.address} (pid {state.pid})" if running
                        else f"removed the state of a stopped owned Ray (pid {state.pid})")}
