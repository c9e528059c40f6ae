"""compare: the per-task paired table, checked against the stored rows by SQL."""

from __future__ import annotations

import json

import pytest

import capevolve
from capevolve._store.rundir import RunDir
from capevolve.errors import CapevolveError, RunDirError
from capevolve.view.compare import FAIL_TO_PASS, PASS_TO_FAIL, compare

pytestmark = pytest.mark.slow


def _means_by_sql(run_dir, candidate_id):
    _, rows = capevolve.query(run_dir, f"""
        SELECT task_id, avg(reward) FROM rollouts
        WHERE split = 'val' AND candidate_id = '{candidate_id}' AND reward IS NOT NULL
        GROUP BY task_id""")
    return dict(rows)


def test_table_matches_stored_rows(view_run):
    run = RunDir.open(view_run.path)
    result = compare(run, "seed", view_run.improved)
    seed, improved = (_means_by_sql(view_run.path, c) for c in ("seed", view_run.improved))
    assert [r["task_id"] for r in result["tasks"]] == list(run.splits.ids("val"))
    for row in result["tasks"]:
        assert row["mean_a"] == pytest.approx(seed[row["task_id"]])
        assert row["mean_b"] == pytest.approx(improved[row["task_id"]])
        assert row["delta"] == pytest.approx(row["mean_b"] - row["mean_a"])
    assert result["mean_delta"] == pytest.approx(
        sum(improved.values()) / len(improved) - sum(seed.values()) / len(seed))
    assert result["improved"] > 0 and result["flips"][FAIL_TO_PASS]


def test_flips_are_symmetric_and_follow_pass_threshold(view_run):
    run = RunDir.open(view_run.path)
    forward = compare(run, "seed", view_run.worse)
    backward = compare(run, view_run.worse, "seed")
    assert forward["flips"][PASS_TO_FAIL], "the worse capability must lose some tasks"
    assert forward["flips"][PASS_TO_FAIL] == backward["flips"][FAIL_TO_PASS]
    assert forward["flips"][FAIL_TO_PASS] == backward["flips"][PASS_TO_FAIL]
    for row in forward["tasks"]:
        if row["flip"] == PASS_TO_FAIL:
            assert row["passed_a"] and not row["passed_b"]


def test_clusters_come_from_the_stored_diagnoses(view_run):
    run = RunDir.open(view_run.path)
    result = compare(run, "seed", view_run.improved)
    assert result["diagnosed"]
    doc = json.loads((view_run.path / "diagnoses" / "val__seed.json").read_text())
    in_clusters = {t for c in doc["clusters"] for t in c["tasks"]}
    for row in result["tasks"]:
        assert bool(row["clusters_a"]) == (row["task_id"] in in_clusters)


def test_refuses_test_split_and_unknown_candidates(view_run):
    run = RunDir.open(view_run.path)
    with pytest.raises(RunDirError, match="held out"):
        compare(run, "seed", view_run.improved, "test")
    with pytest.raises(CapevolveError, match="cand_999"):
        compare(run, "seed", "cand_999")
    with pytest.raises(RunDirError, match="no complete train evaluation"):
        compare(run, "seed", view_run.improved, "train")


def test_compare_reads_without_writing(view_run):
    before = {p: p.stat().st_mtime_ns for p in view_run.path.rglob("*") if p.is_file()}
    compare(RunDir.open(view_run.path), "seed", view_run.improved)
    after = {p: p.stat().st_mtime_ns for p in view_run.path.rglob("*") if p.is_file()}
    assert before == after
