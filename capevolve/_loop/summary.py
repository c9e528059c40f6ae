"""The statistics of an evaluation from its stored rows (the task is the unit)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from capevolve._lazy import lazy_module
from capevolve._policy.gate.thresholds import pass_count_columns
from capevolve._store.rollouts import arrowpool
from capevolve._store.rollouts.arrow_numpy import int64_array, string_array, values
from capevolve._store.rollouts.query import RolloutStore
from capevolve._store.rollouts.summary_query import read_eval_rows
from capevolve._store.rundir import RunDir
from capevolve.errors import JudgeUnavailable
from capevolve.stats import clustered_se
from capevolve.stats.estimators import (
    SLICE,
    exact_sum,
    mean_and_se_of_array,
    pass_k_table_of_histogram,
    sample_stdev,
)

if TYPE_CHECKING:
    import pyarrow.compute as pc
else:  # imported at first use: an evaluation reaches its first rollout without it
    pc = lazy_module("pyarrow.compute")

JUDGE_UNREACHABLE_ROW = f"score: {JudgeUnavailable.__name__}:"
"""How the error of a judge-unreachable row begins."""


@dataclass(frozen=True)
class TaskMeans:
    """Per-task means as columns: ``tasks`` sorted, ``means`` and ``counts`` aligned."""

    tasks: pa.Array
    means: np.ndarray
    counts: np.ndarray

    def as_dict(self) -> dict[str, float]:
        return dict(zip(self.tasks.to_pylist(), self.means.tolist(), strict=True))


def summarize(run: RunDir, eval_id: str, task_ids: tuple[str, ...],
              clusters: dict[str, str] | None = None,
              pass_threshold: float = 1.0) -> dict[str, Any]:
    """An evaluation's statistics from its stored rows, with ``task_means``."""
    stats, means, _ = summary(run, eval_id, task_ids, clusters, pass_threshold)
    return {**stats, "task_means": means.as_dict()}


def summary(run: RunDir, eval_id: str, task_ids: Sequence[str],
            clusters: dict[str, str] | None, pass_threshold: float,
            ) -> tuple[dict[str, Any], TaskMeans, int]:
    """``summarize`` without ``task_means``, plus the per-task means as columns and the
    judge-unreachable unit count, from one read."""
    rows = read_eval_rows(RolloutStore(run.layout), eval_id, JUDGE_UNREACHABLE_ROW)
    wanted = _chosen(rows.names, task_ids)  # one bool per distinct task
    use = wanted[rows.task] & rows.scored if rows.n_rows else rows.scored
    del wanted
    task, reward = rows.task[use], rows.reward[use]
    means = _task_means(rows.names, task, reward)
    mean, stderr = mean_and_se_of_array(means.means)
    stdev = sample_stdev(means.means)  # statistics.stdev's float, over distinct values
    extra: dict[str, Any] = {}
    if clusters:
        chosen_ids = frozenset(task_ids)
        extra = {"stderr_clustered": clustered_se(means.as_dict(), clusters),
                 "clusters": {t: clusters[t] for t in sorted(clusters) if t in chosen_ids}}
    n_passed, n_valid = pass_count_columns(task, reward, pass_threshold, len(rows.names))
    del task
    histogram = _histogram(n_passed, n_valid)
    del n_passed, n_valid
    n_scored = len(means.means)
    stats = {**extra,
        "mean": mean, "stderr": stderr, "n_tasks": len(task_ids), "n_scored": n_scored,
        "scored": n_scored, "stdev": stdev,
        "run_means": _run_means(rows.trial[use], reward),
        "n_errors": int(rows.n_rows - np.count_nonzero(rows.scored)), "n_rows": rows.n_rows,
        "coverage": n_scored / len(task_ids) if task_ids else 0.0,
        "pass_k": pass_k_table_of_histogram(histogram),
        "pass_threshold": pass_threshold,
    }
    lost = int(np.count_nonzero(rows.lost))
    del rows, use, reward
    arrowpool.release_unused()  # the columns' memory, before the next phase allocates
    return stats, means, lost


def _chosen(names: pa.Array, task_ids: Sequence[str]) -> np.ndarray:
    if not len(names):
        return np.zeros(0, dtype=bool)
    found = pc.is_in(names, value_set=string_array(task_ids), memory_pool=arrowpool.POOL)
    return values(found, fill=False).astype(bool, copy=True)


def _histogram(n_passed: np.ndarray, n_valid: np.ndarray) -> dict[tuple[int, int], int]:
    """Tasks per (passed, valid) pair, over tasks with a valid trial."""
    scored = n_valid > 0
    if not scored.any():
        return {}
    width = int(n_valid.max()) + 1
    keys, many = np.unique(n_passed[scored] * width + n_valid[scored], return_counts=True)
    return {(int(k) // width, int(k) % width): int(m)
            for k, m in zip(keys.tolist(), many.tolist(), strict=True)}


def _task_means(tasks: Sequence[str] | pa.Array, task: np.ndarray, reward: np.ndarray
                ) -> TaskMeans:
    """Per-task means from columns (row i: a valid trial of ``tasks[task[i]]``, ``task``
    sorted); tasks without rows are left out."""
    names = tasks if isinstance(tasks, pa.Array) else string_array(list(tasks))
    if not task.size:
        return TaskMeans(names.slice(0, 0), np.zeros(0), np.zeros(0, dtype=np.int64))
    starts = np.flatnonzero(np.r_[True, task[1:] != task[:-1]])
    counts = np.diff(np.r_[starts, task.size])
    sums = np.add.reduceat(reward, starts)
    sums /= counts
    for first, last, groups in _spans(starts, counts, np.flatnonzero(counts > 2)):
        listed = reward[first:last].tolist()
        for g in groups.tolist():
            begin, n = int(starts[g]) - first, int(counts[g])
            sums[g] = math.fsum(listed[begin:begin + n]) / n
    kept = pc.take(names, int64_array(task[starts]), memory_pool=arrowpool.POOL)
    return TaskMeans(kept, sums, counts.astype(np.int64))


def _spans(starts: np.ndarray, counts: np.ndarray, groups: np.ndarray,
           ) -> Iterator[tuple[int, int, np.ndarray]]:
    """``groups`` in runs with the rows they span: at most :data:`SLICE` rows, or one group."""
    ends = starts[groups] + counts[groups]
    at = 0
    while at < groups.size:
        first = int(starts[groups[at]])
        stop = max(int(np.searchsorted(ends, first + SLICE, side="right")), at + 1)
        yield first, int(ends[stop - 1]), groups[at:stop]
        at = stop


def _run_means(trial: np.ndarray, reward: np.ndarray) -> dict[str, float]:
    out = {}
    for k in np.unique(trial).tolist():
        picked = reward[trial == k]
        out[str(int(k))] = exact_sum(picked) / picked.size
    return out
