#!/usr/bin/env python3
"""Start and stop a local two-node Ray cluster on this machine (``make cluster-up`` /
``make cluster-down``, and the integration test).

``up`` starts a head node (GCS, job server / dashboard) and a second node that joins it
with ``ray start --address``, each with its own CPUs, custom resources and its own
``--temp-dir`` under ``--root`` (so each node unpacks a job's working_dir at its own path,
as on separate machines). It writes ``<root>/cluster.json`` (addresses and the process
groups it started). ``down`` stops exactly those processes: the process groups of the two
``ray start`` calls and every process whose command line names ``<root>`` (Ray workers),
SIGTERM then SIGKILL. It never runs ``ray stop``, which would stop every Ray on the machine.

Token authentication stays on: ``up`` uses ``RAY_AUTH_TOKEN`` if set, else the token of
``ray get-auth-token --generate`` (``~/.ray/auth_token``); every client (``ray job submit``,
``capevolve --address``) needs ``RAY_AUTH_MODE=token`` and the same token.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_ROOT = "/tmp/capevolve-cluster"  # short: Ray's socket paths must fit in 107 bytes


def _ray() -> str:
    here = Path(sys.executable).parent / "ray"
    return str(here) if here.exists() else (shutil.which("ray") or "ray")


def auth_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment every process of the cluster (and every client) runs with."""
    env = dict(os.environ if base is None else base)
    env.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    env.pop("RAY_ADDRESS", None)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    if env.get("RAY_AUTH_MODE", "token") == "token":
        env["RAY_AUTH_MODE"] = "token"
        if not env.get("RAY_AUTH_TOKEN"):
            token = subprocess.run([_ray(), "get-auth-token", "--generate"], env=env,
                                   check=True, capture_output=True, text=True).stdout
            env["RAY_AUTH_TOKEN"] = token.strip().splitlines()[-1]
    return env


def _start(args: list[str], env: dict[str, str], log: Path, timeout_s: float) -> int:
    """Run one ``ray start`` in its own process group; returns that group's id."""
    with open(log, "w") as out:
        proc = subprocess.Popen([_ray(), "start", *args, "--disable-usage-stats"], env=env,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            code = "timeout"
    if code != 0:
        raise RuntimeError(f"ray start {args[0]} failed ({code}); see {log}:\n"
                           + log.read_text()[-3000:])
    return proc.pid


def up(root: Path, port: int, dashboard_port: int, agent_ports: tuple[int, int],
       client_port: int, head_cpus: int, worker_cpus: int, head_resources: str,
       worker_resources: str, timeout_s: float = 90.0) -> dict:
    """Start the head and the second node; returns (and writes) the cluster description."""
    root.mkdir(parents=True, exist_ok=True)
    env = auth_env()
    state = {"root": str(root), "gcs_address": f"127.0.0.1:{port}",
             "dashboard_url": f"http://127.0.0.1:{dashboard_port}", "pgids": []}
    (root / "cluster.json").write_text(json.dumps(state))  # down works even if up fails
    common = ["--node-ip-address=127.0.0.1"]
    state["pgids"].append(_start(
        ["--head", f"--port={port}", "--dashboard-host=127.0.0.1",
         f"--dashboard-port={dashboard_port}", f"--dashboard-agent-listen-port={agent_ports[0]}",
         f"--ray-client-server-port={client_port}", f"--num-cpus={head_cpus}",
         f"--resources={head_resources}", f"--temp-dir={root / 'head'}", *common],
        env, root / "head.log", timeout_s))
    (root / "cluster.json").write_text(json.dumps(state))
    if worker_cpus <= 0:  # a one-node cluster (the benchmark's baseline)
        return state
    state["pgids"].append(_start(
        [f"--address=127.0.0.1:{port}", f"--dashboard-agent-listen-port={agent_ports[1]}",
         f"--num-cpus={worker_cpus}", f"--resources={worker_resources}",
         f"--temp-dir={root / 'worker'}", *common], env, root / "worker.log", timeout_s))
    (root / "cluster.json").write_text(json.dumps(state))
    return state


def _ancestors() -> set[int]:
    """This process and its parents (a shell whose command line names the root is not
    part of the cluster)."""
    pids, pid = set(), os.getpid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


def _processes(root: str, pgids: set[int]) -> list[int]:
    found, mine = [], _ancestors()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in mine:
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().decode(errors="replace")
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] == "Z":  # a zombie is already dead
            continue
        if root in cmdline or int(fields[2]) in pgids:
            found.append(int(entry))
    return found


def down(root: Path, grace_s: float = 10.0) -> int:
    """Stop the processes this root's ``up`` started; returns how many were still alive."""
    try:
        state = json.loads((root / "cluster.json").read_text())
    except (OSError, ValueError):
        state = {"pgids": []}
    pgids = set(state.get("pgids", []))
    targets = _processes(str(root), pgids)
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        for pid in _processes(str(root), pgids):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait_s
        while _processes(str(root), pgids) and time.monotonic() < deadline:
            time.sleep(0.2)
    left = _processes(str(root), pgids)
    if left:
        raise RuntimeError(f"processes still alive after SIGKILL: {left}")
    return len(targets)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("up", "down"))
    parser.add_argument("--root", type=Path, default=Path(DEFAULT_ROOT))
    parser.add_argument("--port", type=int, default=6379, help="GCS port of the head")
    parser.add_argument("--dashboard-port", type=int, default=8265, help="job server port")
    parser.add_argument("--agent-ports", type=int, nargs=2, default=(52365, 52366))
    parser.add_argument("--client-port", type=int, default=10001)
    parser.add_argument("--head-cpus", type=int, default=1)
    parser.add_argument("--worker-cpus", type=int, default=1, help="0: no second node")
    parser.add_argument("--head-resources", default='{"head_node": 1}')
    parser.add_argument("--worker-resources", default='{"worker_node": 1}')
    args = parser.parse_args()
    if args.action == "down":
        print(f"stopped {down(args.root)} processes of {args.root}")
        return
    try:
        state = up(args.root, args.port, args.dashboard_port, tuple(args.agent_ports),
                   args.client_port, args.head_cpus, args.worker_cpus, args.head_resources,
                   args.worker_resources)
    except Exception:
        down(args.root)
        raise
    print(json.dumps(state))


if __name__ == "__main__":
    main()
