"""A noisy adapter for the optimize benchmarks: edits that change no behaviour still change
the draws, so a loop of no-op edits is a loop of pure noise.

Each task has a fixed success probability (from its id). A rollout succeeds with that
probability, drawn from a generator seeded by the unit seed *and* the candidate's content
hash, so two byte-different candidates with the same behaviour get independent draws.
``latency_s`` in the candidate's ``latency.txt`` (default 0) is slept per rollout, to load
the engine in the saturation figure.
"""

from __future__ import annotations

import hashlib
import random
import time
from pathlib import Path

from capevolve import Rollout, Score, Task

N_TASKS = 80


def _content(candidate: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in candidate.rglob("*") if p.is_file()):
        digest.update(path.relative_to(candidate).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


class NoisyAdapter:
    def tasks(self) -> list[Task]:
        return [Task(id=f"n{i:03d}", input=f"task {i}", target="ok",
                     metadata={"p": 0.15 + 0.7 * ((i * 37) % 100) / 100})
                for i in range(N_TASKS)]

    def run_target(self, candidate: Path, task: Task, *, trial: int, seed: int) -> Rollout:
        candidate = Path(candidate)
        latency = candidate / "latency.txt"
        if latency.is_file():
            time.sleep(float(latency.read_text()))
        rng = random.Random(f"{seed}:{_content(candidate)}")
        ok = rng.random() < task.metadata["p"]
        return Rollout(output="ok" if ok else "no", tokens=5)

    def score(self, task: Task, rollout: Rollout) -> Score:
        good = rollout.output == "ok"
        return Score(reward=1.0 if good else 0.0, feedback="fine" if good else "wrong answer")
