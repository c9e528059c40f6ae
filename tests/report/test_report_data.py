"""The report's data comes from the stored run, and report.html is self-contained and safe."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from report.conftest import HOSTILE_NOTE, toy_copy

import capevolve
from capevolve._store.evals import all_evals
from capevolve._store.evals_means import task_means_of
from capevolve._store.rundir import RunDir
from capevolve.report.data import report_data
from capevolve.report.html import html_path, write_html
from capevolve.report.html.page import render_html

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def data(report_run):
    return report_data(RunDir.open(report_run.path))


def test_iterations_follow_the_decisions_in_the_log(data):
    """Iteration 0 is the seed's baseline; then accept (best moves) and reject (it stays);
    the reject's parent is the best it was gated against."""
    steps = [(s["candidate_id"], s["decision"], s["best_id"]) for s in data["iterations"]]
    assert steps == [("seed", "baseline", "seed"), ("cand_001", "accept", "cand_001"),
                     ("cand_002", "reject", "cand_001"), ("cand_003", "tampered", "cand_001")]
    parents = {c["id"]: (c["parent"], c["parent_source"]) for c in data["candidates"]}
    assert parents == {"seed": (None, None), "cand_001": ("seed", "gate"),
                       "cand_002": ("cand_001", "gate"), "cand_003": ("cand_001", "gate")}
    tampered = next(c for c in data["candidates"] if c["id"] == "cand_003")
    assert tampered["reasons"] == ["protected path changed: hack.py"]
    assert tampered["val"]["mean"] is None  # refused before any rollout
    assert tampered["diff_stat"]["added"] == ["hack.py"]
    assert [c["id"] for c in data["candidates"]][0] == "seed"


def test_numbers_equal_the_stored_records(report_run, data):
    """Heat map cells are the eval records' task means, pass^k their tables, the best-val
    points their means; the test delta is final.json's; spend ends at the run's totals."""
    records = {r.candidate_id: r for r in all_evals(RunDir.open(report_run.path))
               if r.split == "val" and r.purpose == "gate"}
    for cid in data["heatmap"]["candidates"]:
        run = RunDir.open(report_run.path)
        assert data["heatmap"]["means"][cid] == task_means_of(run, records[cid])
        assert data["pass_k"][cid] == records[cid].pass_k
    for step in data["iterations"]:
        assert step["best"]["mean"] == records[step["best_id"]].mean
        lo, hi = step["best"]["ci95"]
        assert lo < records[step["best_id"]].mean < hi
    final = json.loads((report_run.path / "final.json").read_text())
    assert data["final"]["delta"] == final["delta"] and data["final"]["ci95"] == final["ci95"]
    spent = RunDir.open(report_run.path).spent.to_dict()
    assert data["spend"]["series"][-1]["metric_calls"] == spent["metric_calls"]
    assert data["spend"]["cost_recorded"] is False  # the toy adapter records no cost


def test_gates_carry_the_threshold_and_the_regressions(data):
    """Each deciding gate has its CI and accept threshold (critical value x SE); the
    reject's no-regression tasks are marked on the heat map."""
    by_cand = {g["candidate_id"]: g for g in data["gates"]}
    accept, reject = by_cand["cand_001"], by_cand["cand_002"]
    assert accept["decision"] == "accept" and reject["decision"] == "reject"
    assert accept["threshold"] == pytest.approx(accept["critical"] * accept["se"])
    assert accept["delta"] > accept["threshold"]
    assert reject["ci95"][0] < reject["delta"] < reject["ci95"][1]
    assert data["heatmap"]["regressions"]["cand_002"] == reject["regressions"] != []


def test_the_page_is_self_contained_and_escapes_run_text(report_run, tmp_path):
    """No URL is referenced (only the SVG namespace), a CSP forbids fetching, and an HTML
    note is text: no tag from the run reaches the page."""
    run_dir = tmp_path / "run"
    shutil.copytree(report_run.path, run_dir)
    path = write_html(RunDir.open(run_dir))
    assert path == html_path(RunDir.open(run_dir)) == run_dir / "report.html"
    page = path.read_text(encoding="utf-8")
    urls = set(re.findall(r"https?://[^\s\"'<>)&]+", page))
    assert urls == {"http://www.w3.org/2000/svg", "http://127.0.0.1:9/x.png"}
    assert "default-src 'none'" in page
    assert HOSTILE_NOTE not in page and "&lt;script&gt;document.title" in page
    assert page.count("<script") == 1 and "<img" not in page
    assert 'src="http' not in page and "@import" not in page and "url(" not in page


def test_a_hand_deleted_final_json_is_refused_not_reported_as_unfinalized(report_run,
                                                                          tmp_path):
    """Removing final.json does not make the report say "not finalized": the run's
    history says it was, and the report is refused naming the file."""
    from capevolve.errors import CapevolveError

    run_dir = tmp_path / "run"
    shutil.copytree(report_run.path, run_dir)
    (run_dir / "final.json").unlink()
    with pytest.raises(CapevolveError, match="final.json"):
        report_data(RunDir.open(run_dir))


def test_a_malformed_diagnosis_file_is_a_clear_error(report_run, tmp_path):
    """A hand-broken diagnoses/val__<best>.json is refused naming the file, not a crash."""
    run_dir = tmp_path / "run"
    shutil.copytree(report_run.path, run_dir)
    (run_dir / "diagnoses" / "val__cand_001.json").write_text("{not json", encoding="utf-8")
    from capevolve.errors import CapevolveError

    with pytest.raises(CapevolveError, match="val__cand_001.json"):
        report_data(RunDir.open(run_dir))


def test_a_run_with_nothing_measured_says_so_in_every_section(tmp_path):
    """A run just created (no evaluation, gate or spend): each chart is a sentence saying
    what is missing, never an empty frame or a made-up number."""
    capevolve.create_run(toy_copy(tmp_path / "toy"), tmp_path / "run")
    page = render_html(report_data(RunDir.open(tmp_path / "run")))
    charts = re.findall(r'data-chart="([a-z-]+)"', page)
    assert charts == ["lineage"]  # the seed alone
    for sentence in ("nothing to plot", "No gate with a measured delta yet",
                     "no per-task means", "No pass^k recorded", "No spend recorded yet",
                     "seed was not diagnosed on val"):
        assert sentence in page
    assert page.count("Not finalized: the test split has not been scored.") == 1
    assert 'data-chart="final-delta"' not in page and "cost not recorded" in page
