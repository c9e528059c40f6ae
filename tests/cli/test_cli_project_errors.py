"""Bad projects: `run` exits 2 with one line naming the problem; `check` lists it and exits 1."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from cli.cli_support import copy_toy, invoke, one_json, user_error, write_project

DUPLICATE_IDS = """
class A:
    def tasks(self):
        ids = [f"t{i}" for i in range(10)] + ["t3"]
        return [Task(id=i, input=i, target=i) for i in ids]

    def run_target(self, candidate, task, *, trial, seed):
        return Rollout(output=task.target)

    def score(self, task, rollout):
        return Score(reward=1.0)
"""

UNSTABLE_AND_RANDOM = """
import random

class A:
    calls = 0

    def tasks(self):
        A.calls += 1
        ids = [f"t{i}" for i in range(10)]
        if A.calls % 2 == 0:
            ids.reverse()
        return [Task(id=i, input=i, target=i) for i in ids]

    def run_target(self, candidate, task, *, trial, seed):
        return Rollout(output=task.target)

    def score(self, task, rollout):
        return Score(reward=random.random())
"""


def _edit_config(old: str, new: str) -> Callable[[Path], None]:
    def edit(project: Path) -> None:
        path = project / "capevolve.yaml"
        text = path.read_text(encoding="utf-8")
        assert old in text
        path.write_text(text.replace(old, new), encoding="utf-8")
    return edit


def _write_config(text: str) -> Callable[[Path], None]:
    def edit(project: Path) -> None:
        (project / "capevolve.yaml").write_text(text, encoding="utf-8")
    return edit


def _remove(name: str) -> Callable[[Path], None]:
    def edit(project: Path) -> None:
        (project / name).unlink()
    return edit


# case id -> (edit of a toy copy, strings the error must contain)
CASES = {
    "unknown-key": (_edit_config("alpha: 0.05", "alpha_: 0.05"),
                    ["capevolve.yaml", "gate.alpha_"]),
    "wrong-type": (_edit_config("num_trials: 3", "num_trials: three"),
                   ["capevolve.yaml", "num_trials", "integer"]),
    "negative-trials": (_edit_config("num_trials: 3", "num_trials: -2"),
                        ["capevolve.yaml", "num_trials", "greater than or equal to 1"]),
    "bad-engine-kind": (_edit_config("kind: ray", "kind: spark"),
                        ["capevolve.yaml", "engine.kind"]),
    "malformed-yaml": (_write_config("name: toy\nadapter: [adapter.py\n"),
                       ["capevolve.yaml", "malformed YAML at line"]),
    "not-a-mapping": (_write_config("- name\n- adapter\n"),
                      ["capevolve.yaml", "mapping"]),
    "missing-config": (_remove("capevolve.yaml"), ["capevolve.yaml"]),
    "adapter-file-missing": (_remove("adapter.py"), ["adapter.py", "does not exist"]),
    "adapter-class-missing": (_edit_config("adapter.py:ToyAdapter", "adapter.py:NoSuchAdapter"),
                              ["adapter.py", "NoSuchAdapter"]),
    "capability-missing": (_edit_config("capability_path: seed_capability",
                                        "capability_path: no_such_dir"),
                           ["capevolve.yaml", "capability_path", "no_such_dir"]),
}


@pytest.fixture(params=sorted(CASES))
def broken(request, tmp_path) -> tuple[Path, list[str]]:
    """A toy copy broken in one way, with the words its error must contain."""
    edit, needles = CASES[request.param]
    project = copy_toy(tmp_path / "proj")
    edit(project)
    return project, needles


def test_run_on_broken_project(broken, tmp_path):
    """run on a broken project exits 2 with one error line naming file and field; no run dir."""
    project, needles = broken
    run_dir = tmp_path / "run"
    user_error(invoke("run", "--project", project, "--run-dir", run_dir, "--engine", "local",
                      "--json"), *needles)
    assert not run_dir.exists()


def test_check_on_broken_project(broken):
    """check --json on a broken project exits 1, ok false, and the problem names the field."""
    project, needles = broken
    payload = one_json(invoke("check", "--project", project, "--json"), exit_code=1)
    assert payload["ok"] is False and payload["n_tasks"] is None
    assert len(payload["problems"]) == 1
    for needle in needles:
        assert needle in payload["problems"][0]


def test_duplicate_task_ids(tmp_path):
    """A project whose tasks() repeats an id: run exits 2 naming the duplicate, check exits 1."""
    project = write_project(tmp_path / "dup", DUPLICATE_IDS)
    user_error(invoke("run", "--project", project, "--run-dir", tmp_path / "run",
                      "--engine", "local"), "duplicate task ids: t3")
    assert not (tmp_path / "run").exists()
    payload = one_json(invoke("check", "--project", project, "--json"), exit_code=1)
    assert payload["problems"] == ["adapter: duplicate task ids: t3"]


def test_check_lists_every_problem(tmp_path):
    """check reports every problem at once (unstable ids and a random scorer) and exits 1."""
    project = write_project(tmp_path / "two", UNSTABLE_AND_RANDOM)
    payload = one_json(invoke("check", "--project", project, "--json"), exit_code=1)
    assert len(payload["problems"]) == 2
    assert "not stable" in payload["problems"][0]
    assert "not deterministic" in payload["problems"][1]
    human = invoke("check", "--project", project)
    assert human.exit_code == 1
    assert human.stdout.splitlines()[0] == "problems:"
    assert len([line for line in human.stdout.splitlines() if line.startswith("- ")]) == 2
    user_error(invoke("run", "--project", project, "--run-dir", tmp_path / "run",
                      "--engine", "local"), "project check failed", "not stable",
               "not deterministic")


def test_check_missing_project_dir(tmp_path):
    """check on a directory that does not exist is a failed check (exit 1), not a crash."""
    payload = one_json(invoke("check", "--project", tmp_path / "nowhere", "--json"), exit_code=1)
    assert payload["ok"] is False
    assert payload["problems"] == [f"{tmp_path / 'nowhere'}: project directory does not exist"]
    assert not (tmp_path / "nowhere").exists()
