"""The benchmarks/retail project end to end: run + baseline, and the scripted edits."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from capevolve.optimize.proposers.scripted import apply_json_edit

RETAIL_PROJECT = Path(__file__).resolve().parents[2] / "benchmarks" / "retail"
EDITS = RETAIL_PROJECT / "edits"


def apply_edit(edit_file: Path, candidate: Path) -> str:
    """Apply one of the prepared edits the way the scripted proposer does."""
    edit = json.loads(edit_file.read_text(encoding="utf-8"))
    return apply_json_edit(edit, edit_file, candidate)


def _mean(results) -> float:
    per_task = [sum(s.reward for _, s in rs) / len(rs) for rs in results.values()]
    return sum(per_task) / len(per_task)


@pytest.mark.slow
def test_start_run_scores_the_seed_baseline_in_process(tmp_path):
    """start_run on the retail project (local engine) checks it, freezes splits and scores
    the seed on val with no errors and a mean in 0.3-0.5."""
    from capevolve._engine.local import LocalEngine
    from capevolve._loop.run import start_run
    from capevolve.config import EngineConfig

    handoff = start_run(RETAIL_PROJECT, tmp_path / "run",
                        engine=LocalEngine(EngineConfig(kind="local", concurrency=8)))
    baseline = handoff["baseline"]
    assert baseline["status"] == "complete"
    assert baseline["n_errors"] == 0 and baseline["n_scored"] == baseline["n_tasks"] == 30
    assert 0.3 <= baseline["mean"] <= 0.5


@pytest.mark.slow
def test_scripted_edits_move_the_mean_as_designed(tmp_path, run_trials, seed_candidate):
    """Over all tasks: 01 helps, 02 hurts, 03 helps a lot, 04 changes nothing, 05 helps;
    each edit applies to a copy of the best so far (02 and 04 are not kept)."""
    edits = sorted(EDITS.glob("[0-9]*.json"))
    assert [e.stem[:2] for e in edits] == ["01", "02", "03", "04", "05"]
    best, means = seed_candidate, {"seed": _mean(run_trials(seed_candidate))}
    results = {}
    for edit in edits:
        cand = tmp_path / edit.stem
        shutil.copytree(best, cand)
        apply_edit(edit, cand)
        results[edit.stem[:2]] = run_trials(cand)
        means[edit.stem[:2]] = _mean(results[edit.stem[:2]])
        if edit.stem[:2] not in ("02", "04"):
            best = cand
    assert means["01"] > means["seed"]
    assert means["02"] < means["01"] - 0.05
    assert means["03"] > means["01"] + 0.1
    rewards = {k: {t: [s.reward for _, s in rs] for t, rs in r.items()}
               for k, r in results.items()}
    assert rewards["04"] == rewards["03"]
    assert means["05"] > means["03"] + 0.1 and means["05"] >= 0.85


def test_apply_edit_refuses_an_ambiguous_replacement(tmp_path, writable_seed):
    """An edit whose text to replace is absent fails with a message, changing nothing."""
    edit = tmp_path / "bad.json"
    edit.write_text('{"title": "t", "why": "w", "ops": [{"file": "policy/policy.md", '
                    '"replace": ["no such text", "x"]}]}')
    before = (writable_seed / "policy" / "policy.md").read_text()
    with pytest.raises(ValueError, match="occurs 0 times"):
        apply_edit(edit, writable_seed)
    assert (writable_seed / "policy" / "policy.md").read_text() == before


def test_demo_script_is_valid_bash_and_checks_its_arguments():
    """demo.sh parses, and without arguments prints its usage and exits 2."""
    script = RETAIL_PROJECT / "demo.sh"
    assert subprocess.run(["bash", "-n", str(script)], check=False).returncode == 0
    result = subprocess.run(["bash", str(script)], check=False, capture_output=True,
                            text=True)
    assert result.returncode == 2 and "usage" in result.stderr


def test_both_project_configs_load_their_adapters():
    """benchmarks/retail and benchmarks/retail/openai load and build their adapters by path."""
    from capevolve._project.loader import load_project

    offline = load_project(RETAIL_PROJECT)
    assert type(offline.adapter()).__name__ == "RetailAdapter"
    online = load_project(RETAIL_PROJECT / "openai")
    assert online.capability_dir == (RETAIL_PROJECT / "seed_capability").resolve()
    assert type(online.adapter()).__name__ == "OpenAIRetailAdapter"
