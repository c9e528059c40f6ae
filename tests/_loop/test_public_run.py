"""The public ``capevolve.RunDir``: a read-only view; the verbs are the only way to change a run."""

from __future__ import annotations

import pytest
from fixtures.projects import make_candidate, make_project

import capevolve
from capevolve._loop.decide import gate_candidate
from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import create_run
from capevolve.errors import RecordError
from capevolve.kinds import EventKind

READS = ["best_id", "candidate", "candidate_dir", "candidate_ids", "evaluations", "events",
         "finalized", "manifest", "open", "root", "run_id", "spent", "splits"]


def _gated(tmp_path) -> capevolve.RunDir:
    """A run whose cand_001 (always passes) holds an accepting gate against the seed
    (always fails), opened through the public API."""
    run = create_run(make_project(tmp_path / "p", 20, quality=0.0, trials=2), tmp_path / "run")
    evaluate(run, "seed", "val")
    evaluate(run, make_candidate(tmp_path / "good", 1.0), "val")
    assert gate_candidate(run, "cand_001")["decision"] == "accept"
    return capevolve.open_run(run.root)


def _files(run: capevolve.RunDir) -> dict:
    return {p: p.stat().st_mtime_ns for p in run.root.rglob("*") if p.is_file()}


@pytest.mark.slow
def test_the_public_run_only_reads(tmp_path):
    """The view's public names are the reads (locked); none writes, its properties cannot
    be set, and reading every one of them changes no file of the run."""
    run = _gated(tmp_path)
    assert type(run) is capevolve.RunDir is type(capevolve.RunDir.open(run.root))
    assert capevolve.RunDir(run.root).best_id == run.best_id
    with pytest.raises(capevolve.RunDirError, match="not a capevolve run dir"):
        capevolve.RunDir(tmp_path)
    assert sorted(n for n in dir(run) if not n.startswith("_")) == READS
    before = _files(run)
    assert run.best_id == "seed" and run.candidate_ids() == ["cand_001", "seed"]
    assert run.candidate("cand_001").hash and run.candidate_dir("seed").is_dir()
    # the gate's two evaluations, and its confirmation's fresh trials of both sides
    assert [(e.split, e.purpose) for e in run.evaluations("val")] == [
        ("val", "gate"), ("val", "gate"), ("val", "confirm"), ("val", "confirm")]
    assert run.evaluations("train") == [] and not run.finalized
    assert run.manifest.run_id == run.run_id and len(run.splits.val) > 0
    assert run.events(EventKind.GATE)[-1].decision == capevolve.Decision.ACCEPT
    assert run.spent.iterations == 0
    with pytest.raises(AttributeError):
        run.best_id = "cand_001"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        run.layout = None  # type: ignore[attr-defined]
    assert _files(run) == before


@pytest.mark.slow
def test_the_verbs_change_the_run_the_view_shows(tmp_path):
    """accept given the view records through its run: the same object shows the new best,
    the accept event and the iteration spent, as a fresh open does."""
    run = _gated(tmp_path)
    accepted = capevolve.accept(run, "cand_001", note="via the API")
    assert accepted.best_id == run.best_id == "cand_001"
    assert [a.note for a in run.events(EventKind.ACCEPT)] == ["via the API"]
    assert run.spent.iterations == 1 == capevolve.RunDir.open(run.root).spent.iterations


@pytest.mark.slow
def test_log_event_records_user_kinds_only(tmp_path):
    """log_event records a note, refuses the kinds capevolve records itself and unregistered
    kinds (nothing written), and records a kind once it is registered."""
    run = _gated(tmp_path)
    note = capevolve.log_event(run, "note", text="tried X")
    assert note.data == {"text": "tried X"} and run.events("note")[-1].data == note.data
    before = _files(run)
    with pytest.raises(RecordError, match="recorded by capevolve itself"):
        capevolve.log_event(run, "accept", candidate_id="cand_001")
    with pytest.raises(RecordError, match="unregistered"):
        capevolve.log_event(run.root, "hypothesis_api_test", text="x")
    assert _files(run) == before and run.best_id == "seed"
    capevolve.register_event_kind("hypothesis_api_test")
    assert capevolve.log_event(run.root, "hypothesis_api_test", text="x").kind \
        == "hypothesis_api_test"
