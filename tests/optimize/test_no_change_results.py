"""The optimize loop's no_change iterations (a proposer that failed, or changed nothing)
write results/<n>.json with their reasoning, once, even across a resume."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.loops import loop_run

import capevolve
from capevolve._store import results


@pytest.mark.slow
def test_no_change_iterations_write_decision_records_with_their_reasoning(tmp_path):
    run = loop_run(tmp_path)
    script = tmp_path / "propose.sh"
    script.write_text('#!/bin/sh\ncase "$1" in\n  1) echo "cannot do it" >&2; exit 3 ;;\n'
                      '  *) exit 0 ;;\nesac\n')
    script.chmod(0o755)
    result = capevolve.optimize_run(run.root, engine="local", algorithm="hill-climb", iterations=2,
                                proposer=f"command:{script} {{iteration}} {{workdir}}").to_dict()
    assert [r["outcome"] for r in result["iterations"]] == ["no_change", "no_change"]
    records = results.read_all(Path(run.root))
    assert [r.decision for r in records] == ["no_change", "no_change"]
    assert records[0].reasoning.startswith("optimize iteration 1: ")
    assert "exited with status 3" in records[0].reasoning
    assert "changed nothing" in records[1].reasoning or "no change" in records[1].reasoning
    assert all(not r.aggregate and r.best_after == "seed" for r in records)
    again = capevolve.optimize_run(run.root, engine="local", resume=True).to_dict()
    assert len(results.read_all(Path(run.root))) == 2 == len(again["iterations"])
