"""The owned Ray's warm pool: started actors a command claims instead of starting its own.
Each goes to one command, which kills it when done; the keeper reaps a dead command's.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import secrets
import threading
from pathlib import Path
from typing import Any

import ray

from capevolve._engine.ray.actor import RolloutActor, ScorerActor, scorers_for
from capevolve._engine.ray.owned_state import WARM_KEEPER as KEEPER
from capevolve._engine.ray.owned_state import WARM_NAMESPACE as NAMESPACE

WARM_ENV = "CAPEVOLVE_RAY_WARM"
ROLLOUT, SCORER = "rollout", "scorer"
REAP_S = 1.0
"""Seconds between reaps."""
CLAIM_TIMEOUT_S = 5.0
RETRY_S = 5.0
"""Seconds before retrying a failed start."""
REFILL_DELAY_S = 1.0
"""Replacements start late: creating one blocks the keeper, and the next claim waits."""
PROCESS_START_VARS = ("PYTHON", "LD_", "LC_", "LANG", "TZ", "MALLOC_", "OMP_", "MKL_",
                      "OPENBLAS_", "CUDA_")
"""Variables read at process start; changing one means fresh actors."""


def warm_size(num_cpus: int) -> int:
    """CAPEVOLVE_RAY_WARM (0 or invalid: off), else ``num_cpus``."""
    raw = os.environ.get(WARM_ENV, "").strip()
    if not raw:
        return max(0, num_cpus)
    try:
        return max(0, int(raw))
    except ValueError:
        return 0


def _started_at(pid: int) -> str | None:
    """Start time of ``pid`` (None: gone), to tell pid reuse."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


@ray.remote(num_cpus=0, max_restarts=0)
class WarmKeeper:
    """Keeps ``size`` warm rollout actors and their scorers, and hands them out."""

    def __init__(self, prefix: str, size: int) -> None:
        self.prefix, self.size, self.seq = prefix, size, 0
        self.free: dict[str, list[tuple[str, Any, str]]] = {ROLLOUT: [], SCORER: []}
        self.starting = {ROLLOUT: 0, SCORER: 0}
        self.claims: dict[str, tuple[Any, int, str | None]] = {}
        self.counts = {"started": 0, "handed_out": 0, "reaped": 0, "failed": 0}
        self.tasks: set[asyncio.Task] = set()

    def _spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def start(self) -> int:
        """Start filling and reaping, once; returns the size."""
        self._fill()
        self._spawn(self._reap_forever())
        return self.size

    def wanted(self, kind: str) -> int:
        """Free actors of ``kind`` to keep."""
        return self.size if kind == ROLLOUT else scorers_for(self.size)

    def _fill(self, delay_s: float = 0.0) -> None:
        for kind in (ROLLOUT, SCORER):
            while len(self.free[kind]) + self.starting[kind] < self.wanted(kind):
                self.starting[kind] += 1
                self._spawn(self._start_one(kind, delay_s))

    async def _start_one(self, kind: str, delay_s: float = 0.0) -> None:
        await asyncio.sleep(delay_s)
        self.seq += 1
        name = f"{kind}-{self.prefix}-{self.seq}"
        cls: Any = RolloutActor if kind == ROLLOUT else ScorerActor
        token = secrets.token_hex(16)
        try:
            handle = cls.options(name=name, namespace=NAMESPACE, lifetime="detached",
                                 num_cpus=0).remote(token=token)
            await handle.pid.remote()  # its process is up, capevolve's worker code loaded
        except Exception:  # noqa: BLE001 - a warm actor that cannot start: retry later
            self.counts["failed"] += 1
            await asyncio.sleep(RETRY_S)
            self.starting[kind] -= 1
            self._fill()
            return
        self.starting[kind] -= 1
        self.counts["started"] += 1
        self.free[kind].append((name, handle, token))

    async def claim(self, kind: str, n: int, pid: int) -> list[tuple[str, str]]:
        """Up to ``n`` free actors for process ``pid`` as ``(name, token)``, each given once."""
        taken = self.free.get(kind, [])[:max(0, n)]
        del self.free[kind][:len(taken)]
        born = _started_at(pid)
        for name, handle, _ in taken:
            self.claims[name] = (handle, pid, born)
        self.counts["handed_out"] += len(taken)
        self._fill(REFILL_DELAY_S)
        return [(name, token) for name, _, token in taken]

    async def stats(self) -> dict[str, Any]:
        """What the pool holds, wants and has counted."""
        return {"free": {k: [n for n, _, _ in v] for k, v in self.free.items()},
                "starting": dict(self.starting), "claimed": sorted(self.claims),
                "size": self.size, "wanted": {k: self.wanted(k) for k in self.free},
                **self.counts}

    async def _reap_forever(self) -> None:
        while True:
            await asyncio.sleep(REAP_S)
            for name, (handle, pid, born) in list(self.claims.items()):
                if born is None or _started_at(pid) != born:  # its command is gone
                    try:
                        ray.kill(handle, no_restart=True)
                    except Exception:  # noqa: BLE001,S110 - already gone is what we want
                        pass
                    del self.claims[name]
                    self.counts["reaped"] += 1


def start_keeper(session: str, num_cpus: int) -> Any | None:
    """Start the keeper (None: pool off)."""
    size = warm_size(num_cpus)
    if size <= 0:
        return None
    keeper = WarmKeeper.options(name=KEEPER, namespace=NAMESPACE).remote(  # type: ignore[attr-defined]
        session[:8], size)
    keeper.start.remote()
    return keeper


_CLAIMED: list[Any] = []
_CLAIMED_LOCK = threading.Lock()
_AT_EXIT: list[bool] = []


def starts_clean(changes: dict[str, str]) -> bool:
    """True when ``changes`` holds no process-start variable."""
    return not any(k.startswith(PROCESS_START_VARS) for k in changes)


def claim(kind: str, n: int, eligible: bool) -> list[tuple[Any, str]]:
    """Up to ``n`` warm actors as ``(handle, token)``; none unless ``eligible`` and a keeper
    answers."""
    if n <= 0 or not eligible:
        return []
    try:
        keeper = ray.get_actor(KEEPER, namespace=NAMESPACE)
        names: list[tuple[str, str]] = ray.get(keeper.claim.remote(kind, n, os.getpid()),
                                               timeout=CLAIM_TIMEOUT_S)
        claimed = [(ray.get_actor(name, namespace=NAMESPACE), token) for name, token in names]
    except Exception:  # noqa: BLE001 - no keeper, or it does not answer: fresh actors
        return []
    handles = [handle for handle, _ in claimed]
    with _CLAIMED_LOCK:
        _CLAIMED.extend(handles)
        if not _AT_EXIT:
            atexit.register(kill_claimed)  # after ray.init: runs before Ray's own shutdown
            _AT_EXIT.append(True)
    return claimed


def kill_claimed() -> None:
    """Kill the (detached) warm actors this process claimed."""
    with _CLAIMED_LOCK:
        handles, _CLAIMED[:] = list(_CLAIMED), []
    for handle in handles:
        try:
            ray.kill(handle, no_restart=True)
        except Exception:  # noqa: BLE001,S110 - killed already, or Ray is gone
            pass


def keeper_stats() -> dict[str, Any] | None:
    """:meth:`WarmKeeper.stats`, or None without a keeper."""
    try:
        keeper = ray.get_actor(KEEPER, namespace=NAMESPACE)
        stats: Any = ray.get(keeper.stats.remote(), timeout=CLAIM_TIMEOUT_S)
        return stats
    except Exception:  # noqa: BLE001 - no keeper
        return None
