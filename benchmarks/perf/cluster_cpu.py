"""Where the CPU of a local cluster goes: per process kind, and per thread in the workers.

A profiling aid that ``bench_cluster.py`` runs around each CPU-bound run. :func:`snapshot`
reads ``/proc`` for this process (the driver) and every process of a local cluster
(``cluster/local_cluster.py``: each names the cluster's root in its command line or
descends from one that does), with each process's threads; :func:`delta` turns two
snapshots into CPU seconds per process kind (driver, raylet, gcs, rollout / scorer actors,
agents, ...; each process's own total, which counts threads that have ended, so only a
process that ends between the snapshots is missed), the seconds their threads were
runnable but waited for a core (``schedstat``: the machine's contention, as opposed to
waiting for work or for the GIL), and each rollout actor's busy threads.
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def _stat(path: Path) -> tuple[str, int, float] | None:
    """(comm, ppid, user+system CPU seconds) of a /proc stat file."""
    try:
        text = path.read_text()
    except OSError:
        return None
    comm = text[text.index("(") + 1:text.rindex(")")]
    fields = text.rsplit(")", 1)[1].split()
    return comm, int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK


def _runq_wait(path: Path) -> float:
    """Seconds a thread was runnable but waiting for a core (``schedstat``, field 2)."""
    try:
        return int(path.read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def _kind(cmdline: str) -> str:
    args = cmdline.split("\0")
    if args[0].startswith("ray::"):
        return args[0].split(".", 1)[0]  # ray::RolloutActor, ray::ScorerActor, ray::IDLE
    for name in ("raylet", "gcs_server", "dashboard_agent", "runtime_env_agent",
                 "log_monitor", "monitor.py", "dashboard.py", "default_worker"):
        if name in cmdline:
            return name
    scripts = [Path(a).name for a in args[1:] if a.endswith(".py")]
    if scripts:
        return scripts[0]
    return "python -c" if "-c" in args[1:2] else (Path(args[0]).name or "?")


def snapshot(root: str) -> dict[int, dict]:
    """Every process of the cluster at ``root`` plus this one: kind, CPU s, threads."""
    procs: dict[int, tuple[str, int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        st = _stat(Path(f"/proc/{entry}/stat"))
        if st is not None:
            procs[int(entry)] = (cmdline, st[1])
    mine = {pid for pid, (cmd, _) in procs.items() if root in cmd} - {os.getpid()}
    grew = True
    while grew:  # descendants of the cluster's processes (Ray workers) belong to it
        new = {pid for pid, (_, ppid) in procs.items() if ppid in mine} - mine
        grew, mine = bool(new), mine | new
    mine.add(os.getpid())
    out = {}
    for pid in mine:
        kind = "driver" if pid == os.getpid() else _kind(procs[pid][0])
        threads = {}
        total = _stat(Path(f"/proc/{pid}/stat"))
        if total is None:
            continue
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                st = _stat(Path(f"/proc/{pid}/task/{tid}/stat"))
                if st is not None:
                    wait = _runq_wait(Path(f"/proc/{pid}/task/{tid}/schedstat"))
                    threads[int(tid)] = (st[0], st[2], wait)
        except OSError:
            continue
        out[pid] = {"kind": kind, "cpu": total[2], "threads": threads}
    return out


def delta(before: dict[int, dict], after: dict[int, dict]) -> dict:
    """CPU and run-queue seconds spent between two snapshots, per kind, and each rollout
    actor thread's ``(pid, name, cpu s, run-queue s)``."""
    kinds: dict[str, float] = defaultdict(float)
    waits: dict[str, float] = defaultdict(float)
    threads: list[tuple[int, str, float, float]] = []
    for pid, proc in after.items():
        earlier = before.get(pid, {"cpu": 0.0, "threads": {}})
        kinds[proc["kind"]] += proc["cpu"] - earlier["cpu"]
        for tid, (name, cpu, wait) in proc["threads"].items():
            _, cpu_then, wait_then = earlier["threads"].get(tid, (name, 0.0, 0.0))
            spent, waited = cpu - cpu_then, wait - wait_then
            waits[proc["kind"]] += waited
            if proc["kind"] == "ray::RolloutActor" and spent >= 0.01:
                threads.append((pid, name, round(spent, 3), round(waited, 3)))
    totals = dict(sorted(((k, v) for k, v in kinds.items() if v > 0), key=lambda kv: -kv[1]))
    return {"kinds": totals, "runq_wait": {k: waits[k] for k in totals},
            "actor_threads": sorted(threads, key=lambda t: (t[0], -t[2]))}
