"""The summary's task means over columns equal stats.task_means exactly, for any trial
count (the vectorised path for one or two trials, math.fsum beyond)."""

from __future__ import annotations

import random

import numpy as np

from capevolve._loop.evaluate import _task_means
from capevolve.stats import task_means


def test_column_task_means_equal_task_means_bit_for_bit():
    """1 to 6 valid trials per task, rewards chosen so that a naive running sum would
    round differently from math.fsum: every mean is the same float, in the same order."""
    rng = random.Random(7)
    tasks = tuple(sorted(f"t{i:04d}" for i in range(400)))
    nasty = [1.0, 1e-16, 0.1, 0.2, 0.3, 0.7000000001, 0.6999999, 1 / 3, 2 / 3, 0.0]
    codes, rewards, by_task = [], [], {}
    for code, name in enumerate(tasks):
        n = rng.randint(0, 6)  # 0: a task without a valid trial, left out
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
