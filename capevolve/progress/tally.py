"""One evaluation's progress counters, from the rows it received (no terminal)."""

from __future__ import annotations

import math
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from capevolve.stats.estimators import mean_and_se, task_means

ACTIVE_WINDOW_S = 10.0


def _finite(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


@dataclass
class EvalTally:
    """Counters of one evaluation, fed with the rows as they are persisted."""

    label: str
    total: int
    started: float = field(default_factory=time.monotonic)
    done: int = 0
    dispatched: int = 0  # units the dispatch ledger recorded as handed out
    retries: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    rewards: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    seen: dict[tuple[str, str], float] = field(default_factory=dict)  # (worker, node) -> t
    finished: float | None = None

    def add(self, rows: list[dict[str, Any]], now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        for row in rows:
            self.done += 1
            self.retries += max(0, int(row.get("attempts") or 1) - 1)
            reward = row.get("reward")
            if row.get("error") is not None or reward is None:
                self.errors[str(row.get("error_kind") or "unknown")] += 1
            elif not _finite(reward):
                self.errors["invalid_value"] += 1
            else:
                self.rewards[str(row.get("task_id"))].append(float(reward))
            worker = row.get("worker_id")
            if worker:
                self.seen[(str(worker), str(row.get("node_id") or "?"))] = now

    def elapsed(self, now: float | None = None) -> float:
        end = self.finished if self.finished is not None else time.monotonic() if now is None \
            else now
        return max(0.0, end - self.started)

    def rate(self, now: float | None = None) -> float | None:
        """Units per second since the start (None before the first row)."""
        elapsed = self.elapsed(now)
        return self.done / elapsed if self.done and elapsed > 0 else None

    def eta_s(self, now: float | None = None) -> float | None:
        rate = self.rate(now)
        return None if rate is None else max(0, self.total - self.done) / rate

    def in_flight(self) -> int:
        if self.finished is not None:
            return 0
        return max(0, self.dispatched - self.done)

    def mean_se(self) -> tuple[float | None, float | None, int]:
        """Mean of per-task means so far, its SE and task count (as in the evaluation record)."""
        means = task_means(self.rewards)
        mean, se = mean_and_se(list(means.values()))
        return mean, se, len(means)

    def busy(self, now: float | None = None) -> tuple[int, int]:
        """``(workers, nodes)`` that delivered a row within the active window."""
        now = time.monotonic() if now is None else now
        recent = [key for key, t in self.seen.items() if now - t <= ACTIVE_WINDOW_S]
        return len({w for w, _ in recent}), len({n for _, n in recent})


def fmt_duration(seconds: float | None) -> str:
    """``1m05s`` / ``42s`` / ``—``."""
    if seconds is None or not math.isfinite(seconds):
        return "—"
    seconds = int(round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def summary_line(t: EvalTally, now: float | None = None) -> str:
    """One plain line: ``label done/total (pct) rate ETA in-flight errors retries mean``."""
    mean, se, n = t.mean_se()
    rate = t.rate(now)
    pct = 100.0 * t.done / t.total if t.total else 100.0
    errors = ", ".join(f"{k} {v}" for k, v in sorted(t.errors.items())) or "0"
    workers, nodes = t.busy(now)
    parts = [f"{t.label}: {t.done}/{t.total} units ({pct:.0f}%)",
             f"{rate:.1f}/s" if rate is not None else "—/s",
             f"ETA {fmt_duration(t.eta_s(now))}", f"in flight {t.in_flight()}",
             f"errors {errors}", f"retries {t.retries}",
             "mean " + ("—" if mean is None else f"{mean:.3f}"
                        + ("" if se is None else f" ± {se:.3f}") + f" ({n} tasks)")]
    if workers:
        parts.append(f"busy {workers} workers on {nodes} nodes")
    return "; ".join(parts)
