"""One side of a gate: each val task's valid trial rewards, as columns."""

from __future__ import annotations

import functools
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from capevolve._policy.gate.thresholds import no_spread

if TYPE_CHECKING:
    import numpy as np


def group_fsum(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``math.fsum`` of each group ``values[offsets[i]:offsets[i + 1]]``."""
    import numpy as np

    bounds = offsets.tolist()
    return np.array([math.fsum(values[a:b].tolist())
                     for a, b in zip(bounds, bounds[1:], strict=False)], dtype=np.float64)


@dataclass(frozen=True)
class TaskStats:
    """Per-task statistics, aligned with ``tasks``."""

    n: np.ndarray
    """Valid trials."""
    mean: np.ndarray
    """Mean reward (NaN if n is 0)."""
    variance: np.ndarray
    """Sample variance (0 below two trials)."""
    flat: np.ndarray
    """No spread beyond tolerance (True if n < 2)."""


@dataclass(frozen=True, eq=False)
class SideOutcomes:
    """Per-task valid trial rewards of one evaluation."""

    tasks: tuple[str, ...]
    offsets: np.ndarray
    values: np.ndarray

    @classmethod
    def from_rewards(cls, rewards: Mapping[str, Sequence[float]]) -> SideOutcomes:
        """From ``{task: [valid rewards]}``."""
        import numpy as np

        tasks = tuple(sorted(rewards))
        counts = [len(rewards[t]) for t in tasks]
        offsets = np.zeros(len(tasks) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        values = np.fromiter((float(r) for t in tasks for r in rewards[t]),
                             dtype=np.float64, count=int(offsets[-1]))
        return cls(tasks, offsets, values)

    @classmethod
    def from_columns(cls, tasks: Sequence[str], offsets: np.ndarray, values: np.ndarray,
                     sign: float = 1.0) -> SideOutcomes:
        """From sorted columns, rewards times ``sign``."""
        import numpy as np

        ids = tuple(tasks)
        if any(a >= b for a, b in zip(ids, ids[1:], strict=False)):
            raise ValueError("SideOutcomes.from_columns: task ids must be sorted and unique")
        values = np.asarray(values, dtype=np.float64)
        return cls(ids, np.asarray(offsets, dtype=np.int64),
                   values if sign == 1.0 else sign * values)

    @functools.cached_property
    def stats(self) -> TaskStats:
        import numpy as np

        n = np.diff(self.offsets)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = group_fsum(self.values, self.offsets) / n
        dev = self.values - np.repeat(mean, n)
        # Python's (x - mean) ** 2 is C pow(), not x * x: float_power calls the same pow
        squares = np.float_power(dev, 2.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            variance = np.where(n >= 2, group_fsum(squares, self.offsets) / (n - 1), 0.0)
        flat = np.ones(n.size, dtype=bool)
        scored = np.flatnonzero(n > 0)
        if scored.size:
            starts = self.offsets[scored]
            spread = (np.maximum.reduceat(self.values, starts)
                      - np.minimum.reduceat(self.values, starts))
            flat[scored] = no_spread(spread)  # type: ignore[arg-type]
        return TaskStats(n=n, mean=mean, variance=variance, flat=flat)

    @functools.cached_property
    def index(self) -> dict[str, int]:
        return {t: i for i, t in enumerate(self.tasks)}

    def aligned(self, tasks: Sequence[str] | Collection[str]) -> TaskStats:
        """``stats`` at ``tasks`` in order (never run: n 0, mean NaN)."""
        import numpy as np

        key = tuple(tasks)
        hit = self._aligned.get(key)
        if hit is not None:
            return hit
        get = self.index.get
        pos = np.fromiter((get(t, -1) for t in key), dtype=np.int64, count=len(key))
        known = pos >= 0
        safe = np.where(known, pos, 0)
        stats = self.stats

        def pick(column: np.ndarray, fill: float | bool) -> np.ndarray:
            if not self.tasks:
                return np.full(pos.size, fill, dtype=column.dtype)
            return np.where(known, column[safe], fill)

        found = TaskStats(n=pick(stats.n, 0), mean=pick(stats.mean, float("nan")),
                          variance=pick(stats.variance, 0.0), flat=pick(stats.flat, True))
        if len(self._aligned) >= 8:
            self._aligned.clear()
        self._aligned[key] = found
        return found

    @functools.cached_property
    def _aligned(self) -> dict[tuple[str, ...], TaskStats]:
        return {}

    @functools.cached_property
    def scored(self) -> frozenset[str]:
        """Tasks with a valid trial."""
        n = self.stats.n.tolist()
        return frozenset(t for t, k in zip(self.tasks, n, strict=True) if k)

    def noiseless(self, tasks: Sequence[str] | Collection[str]) -> bool:
        """No task among ``tasks`` spreads across trials."""
        return bool(self.aligned(tasks).flat.all())

    def min_trials(self, tasks: Sequence[str] | Collection[str]) -> int:
        """Fewest valid trials of a scored task (0: none)."""
        counts = self.aligned(tasks).n
        counts = counts[counts > 0]
        return int(counts.min()) if counts.size else 0
