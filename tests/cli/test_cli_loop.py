"""The full agent loop through the CLI: run -> evaluate -> gate -> accept -> finalize -> report."""

from __future__ import annotations

import json

import pytest
from cli.cli_support import invoke, one_json


def _splits(loop) -> dict:
    return json.loads((loop.path / "splits.json").read_text(encoding="utf-8"))


def test_run_scores_the_seed_on_full_val(loop):
    """run freezes the splits and scores the seed on every val task (the baseline)."""
    handoff = one_json(loop.steps["run"])
    n_val = len(_splits(loop)["val"])
    assert handoff["baseline"]["n_tasks"] == n_val
    assert handoff["baseline"]["n_scored"] == n_val
    assert (loop.path / "candidates" / "seed" / "candidate.json").is_file()


def test_evaluate_snapshots_the_improved_candidate(loop):
    """evaluate of a directory snapshots it as cand_001 and scores it on full val."""
    record = one_json(loop.steps["evaluate"])
    n_val = len(_splits(loop)["val"])
    assert record["candidate_id"] == "cand_001"
    assert record["eval_id"] == "val__cand_001__k3"
    assert record["split"] == "val" and record["status"] == "complete"
    assert record["n_tasks"] == n_val and record["units_run"] == n_val * 3
    assert record["mean"] > one_json(loop.steps["run"])["baseline"]["mean"]


def test_gate_accepts_the_improved_candidate(loop):
    """gate compares cand_001 with the seed on full val and says accept."""
    gate = one_json(loop.steps["gate"])
    assert gate["decision"] == "accept"
    assert gate["candidate_id"] == "cand_001" and gate["best_id"] == "seed"
    assert gate["mode"] == "paired" and gate["coverage"] == 1.0
    assert gate["delta"] > gate["k_se"] * gate["se"] > 0


def test_accept_makes_the_candidate_best(loop):
    """accept after the passing gate makes cand_001 the best and records the note."""
    payload = one_json(loop.steps["accept"])
    assert payload.pop("decided_at")
    assert payload == {
        "decision": "accept", "candidate_id": "cand_001", "previous_best": "seed",
        "best_id": "cand_001", "delta": one_json(loop.steps["gate"])["delta"],
        "note": "adds rules", "repeated": False, "result": 1, "confidence": "significant",
        "tentative": False, "policy": "strict"}


def test_status_after_accept(loop):
    """status after the accept shows best cand_001, one iteration, both val evaluations."""
    status = one_json(loop.steps["status"])
    assert status["best_id"] == "cand_001"
    assert status["spent"]["iterations"] == 1
    assert status["best_val"]["eval_id"] == "val__cand_001__k3"
    assert status["candidates"] == ["cand_001", "seed"]
    # the gate's two evaluations, then its confirmation's: 6 fresh trials (3..8) per side
    assert [e["eval_id"] for e in status["evaluations"]] == [
        "val__seed__k3", "val__cand_001__k3", "val__cand_001__k6__confirm_t3",
        "val__seed__k6__confirm_t3"]
    assert status["finalized"] is False


def test_finalize_writes_final_json(loop):
    """finalize scores best and seed on test once and writes final.json (same as its JSON)."""
    printed = one_json(loop.steps["finalize"])
    final = json.loads((loop.path / "final.json").read_text(encoding="utf-8"))
    assert printed == final
    assert {"best_id", "baseline_id", "test", "test_baseline", "delta", "se",
            "ci95"} <= set(final)
    assert final["best_id"] == "cand_001" and final["baseline_id"] == "seed"
    assert final["test"]["eval_id"] == "test__cand_001__k3"
    assert final["test_baseline"]["eval_id"] == "test__seed__k3"
    n_test = len(_splits(loop)["test"])
    assert final["test"]["n_tasks"] == final["test_baseline"]["n_tasks"] == n_test
    low, high = final["ci95"]
    assert low <= final["delta"] <= high and final["delta"] > 0 and final["se"] > 0
    seal = json.loads((loop.path / "seal.json").read_text(encoding="utf-8"))
    assert seal["status"] == "complete"


def test_report_mentions_the_test_delta(loop):
    """report prints and writes report.md, which states the paired test delta."""
    report = one_json(loop.steps["report"])
    final = json.loads((loop.path / "final.json").read_text(encoding="utf-8"))
    assert report["report"] == str(loop.path.resolve() / "report.md")
    assert (loop.path / "report.md").read_text(encoding="utf-8") == report["markdown"]
    assert f"paired delta: {final['delta']:.3f}" in report["markdown"]
    assert "best candidate **cand_001**" in report["markdown"]


def test_query_counts_per_split(loop):
    """query returns rollout counts per split: two candidates x tasks x trials on test, and
    on val 3 gate trials plus 6 confirmation trials each."""
    splits = _splits(loop)
    payload = one_json(loop.steps["query"])
    assert payload["columns"] == ["split", "n"]
    assert payload["rows"] == [["test", 2 * 3 * len(splits["test"])],
                               ["val", 2 * (3 + 6) * len(splits["val"])]]


def test_human_status_after_finalize(loop):
    """status without --json names the best, the iterations and that the run is finalized."""
    result = invoke("status", "--run-dir", loop.path)
    assert result.exit_code == 0, result.stderr
    assert "best cand_001" in result.stdout
    assert "iterations 1 of 20" in result.stdout
    assert "\nfinalized: " in result.stdout and "test fresh" in result.stdout


def test_query_human_table(loop):
    """query without --json prints a table with a header row and one row per split."""
    result = invoke("query", "--run-dir", loop.path,
                    "SELECT split, count(*) AS n FROM rollouts GROUP BY split ORDER BY split")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["split", "n"]
    assert [line.split()[0] for line in lines[1:]] == ["test", "val"]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["paired", "welch"])
def test_gate_modes_from_the_command_line(fresh_run, toy_copy, mode):
    """gate --mode and --k-se override the configured policy for one decision."""
    evaluated = invoke("evaluate", "--run-dir", fresh_run, "--candidate",
                       toy_copy / "improved_capability", "--engine", "local", "--json")
    one_json(evaluated)
    gate = one_json(invoke("gate", "--run-dir", fresh_run, "--candidate", "cand_001",
                           "--mode", mode, "--k-se", "2.5", "--json"))
    assert gate["mode"] == mode and gate["k_se"] == 2.5
