"""The owned Ray's daemon. It stops, removing its state, on SIGTERM / SIGINT, after ``--idle``
seconds without another driver, or when its cluster stops answering.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import ray
from ray._private import state as ray_state  # the job table (private; tested)

from capevolve._engine.ray import owned_warm
from capevolve._engine.ray.actor import scorers_for
from capevolve._engine.ray.owned_state import (
    KV_KEY,
    KV_NAMESPACE,
    OwnedRay,
    drivers_path,
    env_digest,
    locked,
    read_state,
    token_path,
    write_private,
    write_state,
)

POLL_MAX_S = 5.0


class _Stop(Exception):
    """Raised by the SIGTERM / SIGINT handler to stop even mid-sleep."""


def _stop(signum, frame) -> None:  # noqa: ARG001 - signal handler signature
    raise _Stop(signal.Signals(signum).name)


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="owned_daemon")
    parser.add_argument("--state", required=True, type=Path)
    parser.add_argument("--session", required=True)
    parser.add_argument("--temp-dir", required=True)
    parser.add_argument("--idle", required=True, type=float)
    parser.add_argument("--num-cpus", required=True, type=int)
    return parser.parse_args(argv)


def other_drivers(own_job: str) -> tuple[list[int], float]:
    """``(pids, last_end)``: other connected drivers, and when the last other one left (0:
    never)."""
    pids, last_end = [], 0.0
    for job in ray_state.jobs():  # the GCS job table; no dashboard needed
        if job.get("JobID") == own_job:
            continue
        if job.get("IsDead"):
            last_end = max(last_end, float(job.get("EndTime") or 0) / 1000.0)
        else:
            pids.append(int(job.get("DriverPid") or 0))
    return sorted(pids), last_end


def watch(idle_s: float, state: Path, hold: ExitStack) -> str:
    """Block until the owned Ray should stop and return why; each poll records the connected
    drivers' pids for ``down``."""
    own_job = ray.get_runtime_context().get_job_id()
    directory = state.parent
    busy_until = time.time()
    poll = min(POLL_MAX_S, max(0.2, idle_s / 4))
    while True:
        time.sleep(poll)
        try:
            alive, last_end = other_drivers(own_job)
        except Exception as exc:  # noqa: BLE001 - a cluster that stops answering is gone
            return f"cluster stopped answering ({type(exc).__name__})"
        now = time.time()
        write_private(drivers_path(state), json.dumps({"pids": alive, "at": now}))
        if alive:
            busy_until = now
            continue
        idle_for = now - max(busy_until, last_end)
        if idle_for < idle_s:
            continue
        attempt = ExitStack()
        if attempt.enter_context(locked(directory, wait=False)) and not other_drivers(own_job)[0]:
            hold.enter_context(attempt)
            return f"idle for {idle_for:.0f}s (limit {idle_s:g}s)"
        attempt.close()  # a command holds the lock: it is joining, so not idle
        busy_until = now


def main(argv: list[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    hold = ExitStack()  # the state dir's lock once an idle stop took it; released at exit
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _stop)
    start_env = dict(os.environ)  # the starter set the auth variables (read at import)
    try:
        ray.init(address="local", num_cpus=args.num_cpus, include_dashboard=False,
                 configure_logging=False, log_to_driver=False, _temp_dir=args.temp_dir)
        for signum in (signal.SIGTERM, signal.SIGINT):  # again: ray.init may set its own
            signal.signal(signum, _stop)
        from ray.experimental import internal_kv

        internal_kv._internal_kv_put(KV_KEY, args.session.encode(), overwrite=True,
                                     namespace=KV_NAMESPACE)
        write_state(args.state, OwnedRay(
            address=ray.get_runtime_context().gcs_address, pid=os.getpid(), uid=os.getuid(),
            session=args.session, ray_version=ray.__version__, python=sys.executable,
            temp_dir=args.temp_dir, num_cpus=args.num_cpus, idle_timeout_s=args.idle,
            started_at=time.time(), state_file=str(args.state), env=env_digest(start_env)))
        print(f"owned Ray {args.session[:8]} up", flush=True)
        keeper = owned_warm.start_keeper(args.session, args.num_cpus)  # noqa: F841 - held
        size = owned_warm.warm_size(args.num_cpus) if keeper else 0
        print(f"warm pool: {size} rollout actor(s) and "
              f"{scorers_for(size)} scorer(s)", flush=True)
        try:
            reason = watch(args.idle, args.state, hold)
        except _Stop as stop:
            reason = f"{stop} (capevolve down)"
        print(f"owned Ray {args.session[:8]} stopping: {reason}", flush=True)
    except _Stop as stop:
        print(f"owned Ray {args.session[:8]} stopped while starting: {stop}", flush=True)
    finally:
        _cleanup(args)
        hold.close()
    return 0


def _cleanup(args: argparse.Namespace) -> None:
    """Stop Ray; remove the state files if still this daemon's, and the temp dir."""
    for signum in (signal.SIGTERM, signal.SIGINT):  # a second `down` must not cut this short
        signal.signal(signum, signal.SIG_IGN)
    try:
        ray.shutdown()
    finally:
        try:
            state = read_state(args.state)
        except Exception:  # noqa: BLE001 - not ours to judge here; leave it
            state = None
        if state is not None and state.session == args.session:
            args.state.unlink(missing_ok=True)
            token_path(args.state).unlink(missing_ok=True)
            drivers_path(args.state).unlink(missing_ok=True)
        shutil.rmtree(args.temp_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
