"""An adapter that imports a helper module from outside its project (a module shared by
several projects, put on ``sys.path`` by the adapter) runs in the sandbox: the helper's
source is shown read-only, and nothing else beside it is."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from capevolve._engine import sandbox
from capevolve._loop.containment import adapter_sources
from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import create_run
from capevolve._project.loader import load_project
from capevolve._store.rollouts.query import RolloutStore

ADAPTER = '''
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import shared_kit  # noqa: E402
from shared_pkg.agent import reply  # noqa: E402

from capevolve import Rollout, Score, Task


class A(shared_kit.Base):
    def tasks(self):
        return [Task(id=f"t{i:02d}", input=i, target="ok") for i in range(8)]

    def run_target(self, candidate, task, *, trial, seed):
        here = Path(shared_kit.__file__).parent
        seen = []
        for name in ("notes.txt", "other.py", "shared_pkg/table.csv", "gold_kit.py"):
            try:
                seen.append(str(len((here / name).read_bytes())))
            except OSError as exc:
                seen.append(type(exc).__name__)
        return Rollout(output=" ".join([self.greet(), reply(), *seen]))

    def score(self, task, rollout):
        return Score(reward=1.0)
'''


@pytest.fixture(autouse=True)
def _forget_the_helpers(monkeypatch):
    """Each test imports its own helpers of these names: none is left in sys.modules."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield
    for name in ("shared_kit", "shared_pkg", "shared_pkg.agent"):
        sys.modules.pop(name, None)


def _tree(root: Path) -> Path:
    """A project under ``root/p`` whose adapter imports ``root/shared_kit.py`` and the
    package ``root/shared_pkg``; beside them a data file, an unrelated module and a
    gold-named module that no worker may see."""
    (root / "shared_kit.py").write_text(
        "class Base:\n    def greet(self):\n        return 'kit'\n")
    (root / "shared_pkg").mkdir()
    (root / "shared_pkg" / "__init__.py").write_text("")
    (root / "shared_pkg" / "agent.py").write_text("def reply():\n    return 'pkg'\n")
    (root / "shared_pkg" / "table.csv").write_text("gold,1\n")
    (root / "notes.txt").write_text("the answers\n")
    (root / "other.py").write_text("SECRET = 1\n")
    (root / "gold_kit.py").write_text("GOLD = 1\n")
    project = root / "p"
    (project / "seed").mkdir(parents=True)
    (project / "seed" / "prompt.md").write_text("hi\n")
    (project / "adapter.py").write_text(textwrap.dedent(ADAPTER))
    (project / "capevolve.yaml").write_text(
        "name: shared\nadapter: adapter.py:A\ncapability_path: seed\nnum_trials: 1\n"
        "splits: {train: 0.5, val: 0.25, test: 0.25, seed: 0}\n"
        "engine: {kind: local, concurrency: 2, timeout_s: 20, retries: 0}\n")
    return project


def test_the_sources_are_the_helper_module_and_package_only(tmp_path):
    project = _tree(tmp_path)
    sources = adapter_sources(load_project(project).adapter(), project)
    root = tmp_path.resolve()
    assert sources == (str(root / "shared_kit.py"), str(root / "shared_pkg"))


@pytest.mark.slow
@pytest.mark.skipif(sandbox.unavailable() is not None, reason="no sandbox here")
def test_an_adapter_importing_a_shared_helper_runs_in_the_sandbox(tmp_path):
    """The worker imports both helpers; the data file and the other modules beside them
    stay out of sight (the package's data file reads empty)."""
    project = _tree(tmp_path)
    run = create_run(project, tmp_path / "run")
    record = evaluate(run, "seed", "train")
    assert record["status"] == "complete", json.dumps(record)
    _, rows = RolloutStore(run.layout).query("SELECT output, error FROM rollouts")
    assert {r[1] for r in rows} == {None}
    assert {r[0] for r in rows} == {
        "kit pkg FileNotFoundError FileNotFoundError 0 FileNotFoundError"}
