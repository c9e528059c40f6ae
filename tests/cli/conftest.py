"""Fixtures of the CLI tests: toy project copies and run dirs built through the CLI itself."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cli.cli_support import TOY, copy_toy, describe, invoke, start_run, worse_capability

VAL_QUERY = "SELECT split, count(*) AS n FROM rollouts GROUP BY split ORDER BY split"


@dataclass(frozen=True)
class BaseRun:
    """A run of the toy project that only has its baseline (seed scored on val)."""

    path: Path
    project: Path
    handoff: dict[str, Any]


@dataclass(frozen=True)
class Loop:
    """A run taken through the whole loop; ``steps`` maps a step name to its CLI result."""

    path: Path
    project: Path
    steps: dict[str, Any]


@pytest.fixture(scope="session")
def toy_copy(tmp_path_factory) -> Path:
    """A copy of the toy project shared by tests that do not modify it."""
    return copy_toy(tmp_path_factory.mktemp("toy") / "toy")


@pytest.fixture(scope="session")
def seed_twin(tmp_path_factory) -> Path:
    """A directory whose content is identical to the toy seed capability."""
    dest = tmp_path_factory.mktemp("twin") / "seed_twin"
    shutil.copytree(TOY / "seed_capability", dest)
    return dest


@pytest.fixture(scope="session")
def worse_dir(tmp_path_factory) -> Path:
    """The toy seed capability with its compare rule removed."""
    return worse_capability(tmp_path_factory.mktemp("worse") / "worse")


@pytest.fixture(scope="session")
def base_run(tmp_path_factory, toy_copy) -> BaseRun:
    """A shared, read-only baseline run of the toy project (local engine)."""
    path = tmp_path_factory.mktemp("base") / "run"
    return BaseRun(path, toy_copy, start_run(toy_copy, path))


@pytest.fixture
def fresh_run(tmp_path, toy_copy) -> Path:
    """A new baseline run of the toy project that a test may change."""
    path = tmp_path / "run"
    start_run(toy_copy, path)
    return path


@pytest.fixture(scope="session")
def loop(tmp_path_factory, toy_copy) -> Loop:
    """The whole loop: run, evaluate improved, gate, accept, status, finalize, report, query."""
    path = tmp_path_factory.mktemp("loop") / "run"
    steps: dict[str, Any] = {}

    def step(name: str, *args: Any) -> None:
        result = invoke(*args)
        assert result.exit_code == 0, f"step {name}: {describe(result)}"
        steps[name] = result

    r = ("--run-dir", path)
    step("run", "run", "--project", toy_copy, *r, "--engine", "local", "--json")
    step("evaluate", "evaluate", *r, "--candidate", toy_copy / "improved_capability",
         "--split", "val", "--engine", "local", "--json")
    step("gate", "gate", *r, "--candidate", "cand_001", "--json")
    step("accept", "accept", *r, "--candidate", "cand_001", "--note", "adds rules", "--json")
    step("status", "status", *r, "--json")
    step("finalize", "finalize", *r, "--engine", "local", "--json")
    step("report", "report", *r, "--json")
    step("query", "query", *r, VAL_QUERY, "--json")
    return Loop(path, toy_copy, steps)


@pytest.fixture
def rejected_run(fresh_run, worse_dir) -> Path:
    """A fresh run whose cand_001 (the worse capability) was evaluated and gated: reject."""
    result = invoke("evaluate", "--run-dir", fresh_run, "--candidate", worse_dir,
                    "--engine", "local", "--json")
    assert result.exit_code == 0, describe(result)
    gate = invoke("gate", "--run-dir", fresh_run, "--candidate", "cand_001", "--json")
    assert gate.exit_code == 0, describe(gate)
    assert json.loads(gate.stdout)["decision"] == "reject", describe(gate)
    return fresh_run
