"""Every document a decision reads is covered by the run's signature: the frozen config
(run.json), the candidate snapshots and the end of the event log (a head kept beside the
key). Each forgery is made by hand on the files, as candidate code or a person without the
key could; today's verification must name it."""

from __future__ import annotations

import json
import shutil

import pytest
from fixtures.projects import make_candidate, make_project

from capevolve._loop.decide import gate_candidate
from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import create_run
from capevolve._store import heads, integrity
from capevolve._store.rundir import RunDir
from capevolve.config import MAX_TRIALS
from capevolve.errors import RunDirError

pytestmark = pytest.mark.slow


@pytest.fixture
def rejected(tmp_path) -> RunDir:
    """Seed and a worse candidate evaluated on val; the gate said reject."""
    run = create_run(make_project(tmp_path / "p", 16, quality=0.9, trials=2), tmp_path / "run")
    evaluate(run, "seed", "val")
    evaluate(run, make_candidate(tmp_path / "bad", 0.0), "val")
    assert gate_candidate(run, "cand_001")["decision"] == "reject"
    return run


def _problems(run: RunDir) -> list[str]:
    return [p.line() for p in integrity.verify(RunDir(run.root)).problems]


def test_a_loosened_frozen_gate_config_is_refused(rejected):
    """run.json's gate loosened (no_regression off, alpha 0.4) so that a rejected
    candidate would pass: verification names run.json, and the run no longer opens."""
    data = json.loads(rejected.layout.run_json.read_text())
    data["config"]["gate"].update(no_regression=False, alpha=0.4)
    rejected.layout.run_json.write_text(json.dumps(data, indent=2))
    assert any(p.startswith("run.json: differs from the run.json the run was created with")
               for p in _problems(rejected)), _problems(rejected)
    with pytest.raises(RunDirError, match="run.json: differs .* frozen config was edited"):
        RunDir.open(rejected.root)


def test_events_cut_and_the_project_mirror_deleted_are_refused(rejected):
    """The last events cut and the project's head mirror deleted (both writable without
    the key): the head kept beside the key tells."""
    lines = rejected.layout.events.read_bytes().splitlines()
    rejected.layout.events.write_bytes(b"\n".join(lines[:-3]) + b"\n")
    project_head = heads.head_path(rejected.manifest.project_dir, rejected._log.key_id,
                                   rejected.root)
    project_head.unlink()
    with pytest.raises(RunDirError, match=r"events\.jsonl: ends after \d+ events but "
                                          r".*keys.*heads.* records \d+"):
        RunDir.open(rejected.root)


def test_a_deleted_head_beside_the_key_is_a_problem(rejected):
    """Both mirrors deleted (nothing cut): the missing head beside the present key is a
    problem, never a note."""
    log = rejected._log
    heads.key_head_path(log.key_id, rejected.root).unlink()
    heads.head_path(rejected.manifest.project_dir, log.key_id, rejected.root).unlink()
    assert any("the chain head kept beside the run's key is missing" in p
               for p in _problems(rejected))


def test_a_copy_at_another_path_is_not_judged_by_the_original_head(rejected, tmp_path):
    """A run dir copied elsewhere (an inspected backup) has no head of its own: a note,
    not a problem."""
    copy = tmp_path / "copy"
    shutil.copytree(rejected.root, copy)
    result = integrity.verify(RunDir(copy))
    assert result.ok, result.problems
    assert any("a copy of a run made at another path" in n for n in result.notes)


def test_a_rewritten_candidate_snapshot_is_refused(rejected):
    """The seed's snapshot rewritten in place (what candidate code running as the same
    user could do): verification names the candidate."""
    prompt = next(p for p in rejected.layout.candidate_files("seed").rglob("*") if p.is_file())
    prompt.chmod(0o644)
    prompt.write_text("rewritten\n")
    assert "candidates/seed: differs from the snapshot recorded in events.jsonl (its " \
           "content hash): changed since it was taken" in _problems(rejected)


def test_a_snapshot_no_event_records_is_refused(rejected):
    """A candidate dir planted beside the real ones (with a self-consistent candidate.json)
    was not snapshotted by capevolve."""
    shutil.copytree(rejected.layout.candidates / "cand_001",
                    rejected.layout.candidates / "cand_009")
    meta = rejected.layout.candidate_meta("cand_009")
    meta.chmod(0o644)
    meta.write_text(meta.read_text().replace('"cand_001"', '"cand_009"'))
    assert "candidates/cand_009: no snapshot event records this candidate: capevolve did " \
           "not snapshot it" in _problems(rejected)


def test_trials_above_the_cap_are_refused_before_anything_runs(rejected):
    """``--n-trials`` above the cap num_trials has (1000) is refused, and nothing is
    recorded."""
    before = rejected.layout.events.read_bytes()
    with pytest.raises(RunDirError, match=f"--n-trials 100000000 is above the cap of "
                                          f"{MAX_TRIALS} trials per task"):
        evaluate(rejected, "seed", "val", n_trials=100_000_000)
    assert rejected.layout.events.read_bytes() == before
