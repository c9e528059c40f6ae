"""``capevolve init``: a runnable starter project to edit into a real one."""

from __future__ import annotations

import os
from pathlib import Path

from capevolve._project import scaffold_dataset
from capevolve.errors import ConfigError

CONFIG = """\
name: {name}
adapter: adapter.py:MyAdapter
capability_path: seed_capability
capabilities: [system-prompt]
splits: {{train: 0.5, val: 0.25, test: 0.25, seed: 0}}
num_trials: 3
gate: {{mode: paired, alpha: 0.05, min_delta: 0.02, min_coverage: 0.6, no_regression: true}}
budget: {{max_iterations: 20, max_metric_calls: 0, max_usd: 0, stall: 0}}
stop_condition: "val mean >= 0.9 or 10 iterations"
engine: {{kind: ray, address: null, workers: auto, concurrency: 64, timeout_s: 600, retries: 2}}
"""

ADAPTER = '''\
"""Adapter of {name}: replace the simulated agent in run_target with your real one."""

import random
from pathlib import Path

from capevolve import Rollout, Score, Task

COLORS = ["red", "green", "blue", "yellow", "purple", "orange", "black", "white"]


class MyAdapter:
    """Tasks: name the color a word describes. The 'agent' knows a color when the
    capability's system prompt mentions it, and guesses otherwise."""

    # the simulated agent reads the answer (task.target); delete this line once run_target
    # calls your real agent, which must never see it
    run_target_sees_target = True

    def tasks(self) -> list[Task]:
        things = ["sky", "grass", "sun", "coal", "snow", "plum", "carrot", "cherry"]
        answers = ["blue", "green", "yellow", "black", "white", "purple", "orange", "red"]
        return [
            Task(id=f"q{{i:02d}}", input=f"What color is the {{thing}}? ({{i}})", target=answer)
            for i, (thing, answer) in enumerate(zip(things * 4, answers * 4))
        ]

    def run_target(self, candidate: Path, task: Task, *, trial: int, seed: int) -> Rollout:
        # A candidate without its prompt is a broken edit: it runs with no prompt and
        # fails. Rollout(error=...) is only for infrastructure failures (a timeout, a
        # provider outage): those are missing data, never a score.
        prompt_file = candidate / "system_prompt.md"
        prompt = prompt_file.read_text(encoding="utf-8").lower() if prompt_file.is_file() else ""
        rng = random.Random(seed)
        knows = task.target in prompt
        answer = task.target if knows and rng.random() < 0.9 else rng.choice(COLORS)
        return Rollout(output=answer, trace=[{{"role": "user", "content": task.input}}])

    def score(self, task: Task, rollout: Rollout) -> Score:
        if rollout.output == task.target:
            return Score(reward=1.0, feedback="correct color")
        return Score(reward=0.0, feedback="named a color the object does not have")
'''

PROMPT = """\
# System prompt

- Answer with a single lowercase color word.
- Grass is green; the sky is blue.
"""

PROJECT_MD = """\
# {name}

A capevolve project. Files:

- `capevolve.yaml` — the configuration (splits, trials, gate, budget, engine).
- `adapter.py` — tasks, the agent (`run_target`) and the scorer (`score`).
- `seed_capability/` — the capability the agent starts from; editors change copies of it.

Try it:

    capevolve check --project .
    capevolve run --project .
"""


def _created_dirs(root: Path, rels: list[str]) -> list[Path]:
    """The directories writing ``rels`` under ``root`` would create (outermost first)."""
    wanted = {root, *((root / rel).parent for rel in rels)}
    dirs: set[Path] = set()
    for folder in wanted:
        for path in (folder, *folder.parents):
            if path.exists():
                break
            dirs.add(path)
    return sorted(dirs, key=lambda p: len(p.parts))


def init_project(directory: Path | str, kind: str = "adapter") -> list[str]:
    """Write a starter project into ``directory``; refuses to overwrite a project."""
    if kind not in ("adapter", "dataset"):
        raise ConfigError(f"init: --kind must be adapter or dataset, got {kind!r}")
    root = Path(directory)
    try:
        os.fspath(root).encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(f"{os.fsencode(root)!r}: the path is not UTF-8") from None
    if root.exists() and not root.is_dir():
        raise ConfigError(f"{root}: exists and is not a directory")
    if (root / "capevolve.yaml").exists():
        raise ConfigError(f"{root / 'capevolve.yaml'}: a project already exists here")
    name = root.resolve().name or "project"
    files = scaffold_dataset.files(name) if kind == "dataset" else {
        "capevolve.yaml": CONFIG.format(name=name),
        "adapter.py": ADAPTER.format(name=name),
        "seed_capability/system_prompt.md": PROMPT,
        "PROJECT.md": PROJECT_MD.format(name=name),
    }
    if any((root / rel).exists() for rel in files):
        taken = sorted(rel for rel in files if (root / rel).exists())
        raise ConfigError(f"{root / taken[0]}: exists; init writes only into a directory "
                          "without the starter files")
    new_dirs, written = _created_dirs(root, list(files)), []
    try:
        for folder in new_dirs:
            folder.mkdir()
        for rel, text in files.items():
            path = root / rel
            written.append(path)
            path.write_text(text, encoding="utf-8")
    except OSError as exc:
        for path in written:
            path.unlink(missing_ok=True)
        for folder in reversed(new_dirs):
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
        where = exc.filename if exc.filename is not None else root
        raise ConfigError(f"{where}: cannot create the project ({exc.strerror})") from None
    return sorted(files)
