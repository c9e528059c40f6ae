"""The owned local Ray's warm pool: started actors a command claims instead of starting its own.

The daemon's :class:`WarmKeeper` keeps ``CAPEVOLVE_RAY_WARM`` (default: the Ray's CPUs) rollout
actors and their scorers; :meth:`WarmKeeper.claim` hands each to one command, which kills it
when done (the keeper reaps those of a dead command). :func:`claim` returns nothing unless this
process joined the owned Ray, asks no CPUs or resources and changed no start-only variable
(``PROCESS_START_VARS``).
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
from capevolve._engine.ray.owned_state import WARM_KEEPER, WARM_NAMESPACE

WARM_ENV = "CAPEVOLVE_RAY_WARM"
NAMESPACE = WARM_NAMESPACE
KEEPER = WARM_KEEPER
ROLLOUT, SCORER = "rollout", "scorer"
REAP_S = 1.0
"""How often the keeper looks for claimed actors whose command is gone."""
CLAIM_TIMEOUT_S = 5.0
RETRY_S = 5.0
"""How long the keeper waits after a warm actor failed to start before trying again."""
REFILL_DELAY_S = 1.0
"""How long a replacement waits before it starts: creating an actor holds the keeper's
event loop, and a command's next claim (its scorers, right after its rollout actors)
should not wait behind it."""
PROCESS_START_VARS = ("PYTHON", "LD_", "LC_", "LANG", "TZ", "MALLOC_", "OMP_", "MKL_",
                      "OPENBLAS_", "CUDA_")
"""Prefixes of variables a process reads when it starts (interpreter, loader, locale,
libraries already imported): a command that changes one gets fresh actors."""


def warm_size(num_cpus: int) -> int:
    """How many warm rollout actors the daemon keeps (and scorers for them, see
    :meth:`WarmKeeper.wanted`): CAPEVOLVE_RAY_WARM (0 turns the pool off), else
    ``num_cpus``. A value that is not a whole number >= 0 is 0."""
    raw = os.environ.get(WARM_ENV, "").strip()
    if not raw:
        return max(0, num_cpus)
    try:
        return max(0, int(raw))
    except ValueError:
        return 0


def _started_at(pid: int) -> str | None:
    """The start time of process ``pid`` (field 22 of /proc/<pid>/stat), None when gone:
    with the pid, it names one process even after the pid is reused."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


@ray.remote(num_cpus=0, max_restarts=0)
class WarmKeeper:
    """Keeps ``size`` warm rollout actors and their scorers free and hands them out (see
    the module)."""

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
        """Start filling the pool and reaping (call once); returns the pool size."""
        self._fill()
        self._spawn(self._reap_forever())
        return self.size

    def wanted(self, kind: str) -> int:
        """How many free actors of ``kind`` the pool keeps: ``size`` rollout actors, and
        as many scorers as they would use (one per ``SCORERS_PER``)."""
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
        """Up to ``n`` free warm actors of ``kind`` for the process ``pid``: ``(name, claim
        token)`` of each, each handed out once; replacements start at once."""
        taken = self.free.get(kind, [])[:max(0, n)]
        del self.free[kind][:len(taken)]
        born = _started_at(pid)
        for name, handle, _ in taken:
            self.claims[name] = (handle, pid, born)
        self.counts["handed_out"] += len(taken)
        self._fill(REFILL_DELAY_S)
        return [(name, token) for name, _, token in taken]

    async def stats(self) -> dict[str, Any]:
        """What the pool holds now (free names per kind, claimed names), what it keeps
        (``wanted`` per kind) and its counts."""
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
    """In the daemon: start the keeper of this owned Ray (None when the pool is off)."""
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
    """True when none of ``changes`` (this command's variables a warm actor would not have
    had when it started) is read only at a process's start."""
    return not any(k.startswith(PROCESS_START_VARS) for k in changes)


def claim(kind: str, n: int, eligible: bool) -> list[tuple[Any, str]]:
    """Up to ``n`` warm actors of ``kind`` for this process, as ``(handle, claim token)`` (see
    the module docstring); ``eligible`` is the caller's part of the rules (owned Ray joined, no
    resources asked, environment clean)."""
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
    """Kill every warm actor this process claimed (they are detached: nothing else ends
    them with this process; the keeper would, within REAP_S)."""
    with _CLAIMED_LOCK:
        handles, _CLAIMED[:] = list(_CLAIMED), []
    for handle in handles:
        try:
            ray.kill(handle, no_restart=True)
        except Exception:  # noqa: BLE001,S110 - killed already, or Ray is gone
            pass


def keeper_stats() -> dict[str, Any] | None:
    """The keeper's :meth:`WarmKeeper.stats`, None without a keeper (for tests, doctor)."""
    try:
        keeper = ray.get_actor(KEEPER, namespace=NAMESPACE)
        stats: Any = ray.get(keeper.stats.remote(), timeout=CLAIM_TIMEOUT_S)
        return stats
    except Exception:  # noqa: BLE001 - no keeper
        return None
