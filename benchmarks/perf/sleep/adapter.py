"""A do-nothing agent for the performance benchmark: every rollout awaits a fixed latency.

Both knobs come from the environment and are read once, at import time (in the driver and
in every Ray actor, which inherit the driver's environment on a local Ray start):

- ``CAPEVOLVE_BENCH_TASKS``: the number of tasks ``tasks()`` returns (default 1000);
- ``CAPEVOLVE_BENCH_LATENCY_MS``: how long ``run_target`` sleeps, in ms (default 100).

The output names the latency actually used, so the benchmark can check that the actors saw
the same settings as the driver.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

from capevolve.adapter import Rollout, Score, Task

N_TASKS = int(os.environ.get("CAPEVOLVE_BENCH_TASKS", "1000"))
LATENCY_MS = float(os.environ.get("CAPEVOLVE_BENCH_LATENCY_MS", "100"))
LATENCY_S = LATENCY_MS / 1000.0
OUTPUT = f"slept {LATENCY_MS:g}ms"
FEEDBACK = "x" * int(os.environ.get("CAPEVOLVE_BENCH_FEEDBACK_BYTES", "0"))
"""``CAPEVOLVE_BENCH_FEEDBACK_BYTES`` (default 0): the length of each score's feedback, to
weigh the rows scorers hand back (``profile_memory.py --feedback-bytes``)."""


class SleepAdapter:
    """N tasks; run_target sleeps L seconds; score is 1.0 for odd seeds, 0.0 for even."""

    def tasks(self) -> Iterator[Task]:
        """A stream (a generator): the driver never holds the tasks as a list."""
        return (Task(id=f"t{i:06d}", input=i) for i in range(N_TASKS))

    async def run_target(self, candidate: Path, task: Task, *, trial: int, seed: int) -> Rollout:
        await asyncio.sleep(LATENCY_S)
        return Rollout(output=OUTPUT)

    async def score(self, task: Task, rollout: Rollout) -> Score:
        return Score(reward=1.0 if task.input % 2 else 0.0, feedback=FEEDBACK)
