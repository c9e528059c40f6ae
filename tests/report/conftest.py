"""A toy run taken through the loop: seed baseline, an accepted edit (with a note that is
HTML), a rejected edit gated against the new best, an edit refused for touching a
protected path (tampered), the best diagnosed, finalized."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

import capevolve

REPO = Path(__file__).resolve().parents[2]
TOY = REPO / "benchmarks" / "toy"
HOSTILE_NOTE = '<script>document.title="owned"</script><img src="http://127.0.0.1:9/x.png">'


@dataclass(frozen=True)
class ReportRun:
    path: Path
    project: Path


def toy_copy(dest: Path) -> Path:
    shutil.copytree(TOY, dest, ignore=shutil.ignore_patterns(".capevolve", "__pycache__"))
    return dest


def worse_than_improved(dest: Path) -> Path:
    """The improved capability without its compare rule: worse than the new best."""
    text = (TOY / "improved_capability" / "system_prompt.md").read_text(encoding="utf-8")
    dest.mkdir(parents=True)
    (dest / "system_prompt.md").write_text(text.split("- To compare")[0], encoding="utf-8")
    return dest


def tampering(dest: Path) -> Path:
    """The improved capability plus a Python file: a protected path in this project."""
    shutil.copytree(TOY / "improved_capability", dest)
    (dest / "hack.py").write_text("SCORE = 1.0\n", encoding="utf-8")
    return dest


def loop_run(root: Path) -> ReportRun:
    project = toy_copy(root / "toy")
    with (project / "capevolve.yaml").open("a", encoding="utf-8") as config:
        config.write("protected_paths: ['*.py']\n")
    run_dir = root / "run"
    capevolve.start_run(project, run_dir, engine="local")
    better = capevolve.evaluate(run_dir, project / "improved_capability", engine="local")
    assert capevolve.gate(run_dir, better.candidate_id, engine="local").decision == "accept"
    capevolve.accept(run_dir, better.candidate_id, note=HOSTILE_NOTE)
    worse = capevolve.evaluate(run_dir, worse_than_improved(root / "worse"), engine="local")
    capevolve.gate(run_dir, worse.candidate_id, engine="local")
    capevolve.reject(run_dir, worse.candidate_id, note="drops the compare rule")
    with pytest.raises(capevolve.CandidateError, match="protected paths"):
        capevolve.evaluate(run_dir, tampering(root / "tampered"), engine="local")
    capevolve.diagnose_candidate(run_dir, better.candidate_id)
    capevolve.finalize(run_dir, engine="local", spend_test_ids=True)
    return ReportRun(run_dir, project)


@pytest.fixture(scope="session")
def report_run(tmp_path_factory) -> ReportRun:
    """The finalized loop (read-only for the tests: copy it before changing anything)."""
    return loop_run(tmp_path_factory.mktemp("report"))
