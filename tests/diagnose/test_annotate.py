"""diagnose annotate: validated judgements on a cluster, kept across re-diagnosis."""

from __future__ import annotations

import json

import pytest
from diagnose.diag_support import READ_CALLS, make_run, write_rows

from capevolve.diagnose import DiagnoseOptions, annotate, diagnose, diagnosis_path
from capevolve.errors import ConfigError, RunDirError


@pytest.fixture
def diagnosed(tmp_path):
    """A run with one passing and two failing val tasks, diagnosed."""
    run = make_run(tmp_path)
    good, bad1, bad2 = run.splits.val[:3]
    write_rows(run, [
        {"task_id": good, "reward": 1.0, "feedback": "fine", "tool_calls": READ_CALLS},
        {"task_id": bad1, "reward": 0.0, "feedback": "refund amount off"},
        {"task_id": bad2, "reward": 0.0, "feedback": "refund amount off again"}])
    result = diagnose(run, DiagnoseOptions("val", "seed"))
    return run, result["clusters"][0]["signature"], good, bad1


def test_annotate_records_tag_and_blast_radius(diagnosed):
    """A known tag and a passing val task are written into the file and the event log."""
    run, sig, good, _ = diagnosed
    cluster = annotate(run, "diagnoses/val__seed.json", sig, "behavioral", [good])
    assert cluster["tag"] == "BEHAVIORAL" and cluster["blast_radius"] == [good]
    saved = json.loads(diagnosis_path(run, "val", "seed").read_text())
    assert saved["clusters"][0]["tag"] == "BEHAVIORAL"
    assert run.events("diagnosis_annotated")[-1].cluster == sig


def test_annotate_rejects_unknown_tags_clusters_and_tasks(diagnosed):
    """Unknown tag, unknown cluster, a task outside the split, or a failing task: refused."""
    run, sig, _, bad = diagnosed
    path = diagnosis_path(run, "val", "seed")
    with pytest.raises(ConfigError, match="unknown judgement tag"):
        annotate(run, path, sig, "VIBES")
    with pytest.raises(ConfigError, match="no such cluster"):
        annotate(run, path, "nope", "KNOWLEDGE")
    with pytest.raises(ConfigError, match="not in the val split"):
        annotate(run, path, sig, blast_radius=[run.splits.train[0]])
    with pytest.raises(ConfigError, match="do not currently pass"):
        annotate(run, path, sig, blast_radius=[bad])
    assert json.loads(path.read_text())["clusters"][0]["tag"] is None


def test_annotate_refuses_files_outside_the_runs_diagnoses(diagnosed, tmp_path):
    """A JSON file elsewhere is not a diagnosis of this run."""
    run, sig, _, _ = diagnosed
    stray = tmp_path / "stray.json"
    stray.write_text(diagnosis_path(run, "val", "seed").read_text())
    with pytest.raises(RunDirError, match="not a diagnosis of this run"):
        annotate(run, stray, sig, "KNOWLEDGE")


def test_judgements_survive_a_rediagnosis(diagnosed):
    """Re-running diagnose keeps the tag of a cluster whose signature remains."""
    run, sig, good, _ = diagnosed
    annotate(run, diagnosis_path(run, "val", "seed"), sig, "DECISION/PERMISSION", [good])
    again = diagnose(run, DiagnoseOptions("val", "seed"))
    assert again["clusters"][0]["tag"] == "DECISION/PERMISSION"
    assert again["clusters"][0]["blast_radius"] == [good]


def test_judgements_behind_a_symlinked_earlier_file_are_not_carried(diagnosed, tmp_path):
    """An earlier diagnosis swapped for a symlink to an annotated copy elsewhere (another
    run's judgements) is not read: the re-diagnosis carries no tag, replaces the link with
    its own file and leaves the link's target as it was."""
    run, sig, good, _ = diagnosed
    path = diagnosis_path(run, "val", "seed")
    annotate(run, path, sig, "DECISION/PERMISSION", [good])
    foreign = tmp_path / "foreign.json"
    foreign.write_bytes(path.read_bytes())
    before = foreign.read_bytes()
    path.unlink()
    path.symlink_to(foreign)
    again = diagnose(run, DiagnoseOptions("val", "seed"))
    assert again["clusters"][0]["tag"] is None
    assert again["clusters"][0]["blast_radius"] in (None, [])
    assert not path.is_symlink() and foreign.read_bytes() == before


def test_first_words_writes_its_own_file_and_root_cause_judgements_survive(diagnosed):
    """--cluster first-words never replaces the root-cause file; re-diagnosing the same
    rollouts keeps the judgement recorded on a cluster."""
    run, sig, good, _ = diagnosed
    annotate(run, "diagnoses/val__seed.json", sig, "KNOWLEDGE", [good])
    root_cause = diagnosis_path(run, "val", "seed")
    before = root_cause.read_bytes()
    diagnose(run, DiagnoseOptions("val", "seed", mode="first-words"))
    lexical = diagnosis_path(run, "val", "seed", "first-words")
    assert lexical.name == "val__seed.first-words.json" and lexical.is_file()
    assert root_cause.read_bytes() == before
    assert json.loads(lexical.read_text())["mode"] == "first-words"
    again = diagnose(run, DiagnoseOptions("val", "seed"))
    kept = next(c for c in again["clusters"] if c["signature"] == sig)
    assert kept["tag"] == "KNOWLEDGE" and kept["blast_radius"] == [good]
    assert root_cause.read_bytes() == before  # same rollouts, same judgements: same bytes
    annotate(run, "diagnoses/val__seed.first-words.json",
             json.loads(lexical.read_text())["clusters"][0]["signature"], "BEHAVIORAL")
    assert root_cause.read_bytes() == before
