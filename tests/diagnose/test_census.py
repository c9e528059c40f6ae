"""census export (batches without category vocabulary) and census check."""

from __future__ import annotations

import json

from diagnose.diag_support import make_run, write_rows

from capevolve.diagnose import census
from capevolve.diagnose.context import adapter_context


def _run(tmp_path, n_fail: int = 5):
    run = make_run(tmp_path)
    ids = run.splits.val
    write_rows(run, [{"task_id": t, "reward": 0.0, "feedback": f"wrong total {i}",
                      "output": f"answer {i}"} for i, t in enumerate(ids[:n_fail])]
               + [{"task_id": ids[n_fail], "reward": 1.0, "feedback": "fine"}])
    return run


def test_export_writes_batches_of_failing_datapoints(tmp_path):
    """5 failures in batches of 2 give 3 batch files and a manifest; no category words."""
    run = _run(tmp_path)
    out = tmp_path / "census"
    manifest = census.export(run, "val", "seed", 2, out, adapter_context(run, "val"), "be brief")
    assert manifest["failing_total"] == 5 and manifest["batches"] == [
        "batch_000.json", "batch_001.json", "batch_002.json"]
    batch = json.loads((out / "batch_000.json").read_text())
    point = batch["datapoints"][0]
    assert set(point) == {"id", "input", "output", "reference", "feedback"}
    assert point["reference"] == "ok" and point["id"].endswith("#0")
    assert batch["domain"]["notes"] == "be brief"
    text = "".join(p.read_text() for p in out.glob("batch_*.json")).lower()
    for word in ("\"kind\"", "cluster", "partial", "near_miss", "flaky", "signature",
                 "behavioral", "knowledge"):
        assert word not in text


def _doc(run, ids, **overrides):
    return {"run_dir": str(run.root), "split": "val", "tag": "seed", "failing_total": 5,
            "described": 5, "buckets": [{"name": "a", "count": 3, "examples": ids}], **overrides}


def test_check_accepts_a_consistent_census_and_reports_coverage(tmp_path):
    """Counts within described, resolvable ids: ok, with 'N of M failures described'."""
    run = _run(tmp_path)
    failing = census.failing_trials(run, "val", "seed")
    result = census.check(_doc(run, [failing[0].unit_id, failing[1].task_id], described=4),
                          failing)
    assert result["ok"], result["problems"]
    assert result["coverage"] == "4 of 5 failures described"


def test_check_rejects_bucket_counts_over_described(tmp_path):
    """Bucket counts summing above described are a problem."""
    run = _run(tmp_path)
    failing = census.failing_trials(run, "val", "seed")
    doc = _doc(run, [], described=2)
    result = census.check(doc, failing)
    assert not result["ok"] and any("more than described" in p for p in result["problems"])


def test_check_rejects_missing_fields_unknown_ids_and_wrong_totals(tmp_path):
    """failing_total/described required; ids must be failing datapoints; totals must match."""
    run = _run(tmp_path)
    failing = census.failing_trials(run, "val", "seed")
    passing = run.splits.val[5]
    problems = census.check({"buckets": []}, failing)["problems"]
    assert any(p.startswith("failing_total") for p in problems)
    assert any(p.startswith("described") for p in problems)
    result = census.check(_doc(run, [passing, "t999#0"], failing_total=7), failing)
    assert any(passing in p and "t999#0" in p for p in result["problems"])
    assert any("failing_total 7" in p for p in result["problems"])
    assert not census.check(_doc(run, []), None)["ok"]
