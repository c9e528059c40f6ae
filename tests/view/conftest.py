"""A toy run with three candidates on val (seed, improved, worse), both diagnosed."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

import capevolve

REPO = Path(__file__).resolve().parents[2]
TOY = REPO / "benchmarks" / "toy"


@dataclass(frozen=True)
class ViewRun:
    path: Path
    project: Path
    improved: str
    worse: str


def worse_copy(dest: Path) -> Path:
    """The seed capability without its compare rule (worse on val)."""
    text = (TOY / "seed_capability" / "system_prompt.md").read_text(encoding="utf-8")
    dest.mkdir(parents=True)
    (dest / "system_prompt.md").write_text(text.split("- To compare")[0], encoding="utf-8")
    (dest / "notes.bin").write_bytes(b"\xff\xfe\x00binary")
    return dest


@pytest.fixture(scope="session")
def view_run(tmp_path_factory) -> ViewRun:
    root = tmp_path_factory.mktemp("view")
    project = root / "toy"
    shutil.copytree(TOY, project, ignore=shutil.ignore_patterns(".capevolve", "__pycache__"))
    run_dir = root / "run"
    capevolve.start_run(project, run_dir, engine="local")
    run = capevolve.open_run(run_dir)
    improved = capevolve.evaluate(run, project / "improved_capability", "val",
                                  engine="local").candidate_id
    worse = capevolve.evaluate(run, worse_copy(root / "worse"), "val",
                               engine="local").candidate_id
    for cid in ("seed", improved, worse):
        capevolve.diagnose_candidate(run, cid, "val", project=project)
    return ViewRun(run_dir, project, improved, worse)


HOSTILE_ADAPTER = '''
from capevolve import Rollout, Score, Task

MARKUP = '<img src=x onerror="document.title=\\'pwned\\'"><script>document.title="pwned"</script>'


class Hostile:
    """Outputs and feedback full of markup: the viewer must show them as text."""

    def tasks(self):
        return [Task(id=f"h{i:02d}", input={"q": MARKUP}) for i in range(12)]

    def run_target(self, candidate, task, *, trial, seed):
        return Rollout(output=MARKUP + task.id, trace={"html": MARKUP})

    def score(self, task, rollout):
        return Score(reward=float(int(task.id[1:]) % 2), feedback="bad " + MARKUP)
'''


@pytest.fixture(scope="session")
def hostile_run(tmp_path_factory) -> Path:
    """A run whose stored rows carry HTML and script in output, feedback and trace."""
    root = tmp_path_factory.mktemp("hostile")
    project = root / "project"
    (project / "cap").mkdir(parents=True)
    (project / "cap" / "prompt.md").write_text("- be right\n", encoding="utf-8")
    (project / "adapter.py").write_text(HOSTILE_ADAPTER, encoding="utf-8")
    (project / "capevolve.yaml").write_text(
        "name: hostile\nadapter: adapter.py:Hostile\ncapability_path: cap\nnum_trials: 2\n"
        "engine: {kind: local}\n", encoding="utf-8")
    run_dir = root / "run"
    capevolve.start_run(project, run_dir, engine="local")
    return run_dir
