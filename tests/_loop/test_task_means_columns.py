"""The summary's task means over columns equal stats.task_means exactly, for any trial
count (the vectorised path for one or two trials, math.fsum beyond)."""

from __future__ import annotations

import random

import numpy as np

from capevolve._loop import summary
from capevolve._loop.summary import _task_means
from capevolve.stats import task_means


def test_column_task_means_equal_task_means_bit_for_bit():
    """1 to 6 valid trials per task, rewards chosen so that a naive running sum would
    round differently from math.fsum: every mean is the same float, in the same order."""
    _check(random.Random(7))


def test_tasks_of_many_trials_read_a_slice_of_rows_at_a_time(monkeypatch):
    """With slices of 5 rows (groups straddling a slice, a group longer than a slice,
    runs of one- and two-trial tasks between them) the means are still task_means'."""
    monkeypatch.setattr(summary, "SLICE", 5)
    for seed in range(40):
        _check(random.Random(seed), n_tasks=60, most=12)


def _check(rng: random.Random, n_tasks: int = 400, most: int = 6) -> None:
    tasks = tuple(sorted(f"t{i:04d}" for i in range(n_tasks)))
    nasty = [1.0, 1e-16, 0.1, 0.2, 0.3, 0.7000000001, 0.6999999, 1 / 3, 2 / 3, 0.0]
    codes, rewards, by_task = [], [], {}
    for code, name in enumerate(tasks):
        n = rng.randint(0, most)  # 0: a task without a valid trial, left out
        values = [rng.choice(nasty) if rng.random() < 0.7 else rng.random() for _ in range(n)]
        codes += [code] * n
        rewards += values
        if n:
            by_task[name] = values
    columns = _task_means(tasks, np.array(codes, dtype=np.int64), np.array(rewards))
    got = columns.as_dict()
    want = task_means(by_task)
    assert list(got) == list(want)
    assert all(got[t] == want[t] and type(got[t]) is float for t in want)
    assert columns.counts.tolist() == [len(by_task[t]) for t in want]
    assert _task_means(tasks, np.array([], dtype=np.int64), np.array([])).as_dict() == {}
