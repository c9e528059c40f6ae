"""--json: every command prints exactly one JSON object, on one stdout line."""

from __future__ import annotations

import pytest
from cli.cli_support import invoke, one_json

pytestmark = pytest.mark.slow

RAW_GATE = ("gate", "--current", "0.5", "--candidate", "0.6", "--current-stderr", "0.02",
            "--candidate-stderr", "0.02", "--k-se", "1", "--json")


def test_init_json(tmp_path):
    """init --json prints one object naming the project and the files it wrote."""
    payload = one_json(invoke("init", tmp_path / "proj", "--json"))
    assert payload["project"] == str((tmp_path / "proj").resolve())
    assert "capevolve.yaml" in payload["files"]


def test_check_json(toy_copy):
    """check --json on the toy project prints one object: ok, 80 tasks, no problems, and
    the parse of the stop condition."""
    payload = one_json(invoke("check", "--project", toy_copy, "--json"))
    stop = payload.pop("stop")
    assert {k: payload[k] for k in ("ok", "project", "n_tasks", "problems")} == {
        "ok": True, "project": str(toy_copy.resolve()), "n_tasks": 80, "problems": []}
    assert payload["metrics"] is None and payload["warnings"] == []  # an adapter project
    assert [p["means"] for p in stop["predicates"]] == ["val mean >= 0.9", "10 iterations"]
    assert stop["unparsed"] == []


def test_run_json(base_run):
    """run --json prints one handoff object: run dir, best seed, baseline, next commands."""
    handoff = base_run.handoff
    assert handoff["run_dir"] == str(base_run.path.resolve())
    assert handoff["best_id"] == "seed"
    assert handoff["baseline"]["eval_id"] == "val__seed__k3"
    assert handoff["baseline"]["status"] == "complete"
    assert any("capevolve evaluate" in c for c in handoff["next"])


@pytest.mark.parametrize("step", ["run", "evaluate", "gate", "accept", "status", "finalize",
                                  "report", "query"])
def test_loop_step_json(loop, step):
    """Each step of the full loop run with --json prints exactly one JSON object."""
    one_json(loop.steps[step])


def test_raw_gate_json():
    """The raw gate form prints one JSON object with the unpaired decision."""
    payload = one_json(invoke(*RAW_GATE))
    assert payload["decision"] == "accept"
    assert payload["mode"] == "welch"
    assert payload["se"] == pytest.approx((0.02**2 + 0.02**2) ** 0.5)
    assert payload["delta"] == pytest.approx(0.1)


def test_reject_json(rejected_run):
    """reject --json prints one object recording the decision; best stays seed."""
    payload = one_json(invoke("reject", "--run-dir", rejected_run, "--candidate", "cand_001",
                              "--note", "worse", "--json"))
    decided_at = payload.pop("decided_at")
    assert decided_at and payload == {"decision": "reject", "candidate_id": "cand_001",
                                      "best_id": "seed", "note": "worse", "repeated": False,
                                      "result": 1}
    status = one_json(invoke("status", "--run-dir", rejected_run, "--json"))
    assert status["spent"]["iterations"] == 1
    assert status["stall"] == 1


def test_check_json_failed(tmp_path):
    """check --json on a broken project still prints one object (ok false) and exits 1."""
    payload = one_json(invoke("check", "--project", tmp_path, "--json"), exit_code=1)
    assert payload["ok"] is False and payload["problems"]


def test_run_dir_from_environment(base_run):
    """status reads the run dir from CAPEVOLVE_RUN_DIR when --run-dir is not given."""
    payload = one_json(invoke("status", "--json", env={"CAPEVOLVE_RUN_DIR": str(base_run.path)}))
    assert payload["run_dir"] == str(base_run.path.resolve())


def test_human_output_is_not_json(base_run):
    """Without --json, status prints readable text naming the best and the iterations."""
    result = invoke("status", "--run-dir", base_run.path)
    assert result.exit_code == 0
    assert "best seed" in result.stdout and "iterations 0" in result.stdout
    assert not result.stdout.lstrip().startswith("{")
