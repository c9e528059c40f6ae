"""diagnose writes only inside the run directory: a symlinked diagnoses / trajectory
folder is refused before anything is written or removed, a symlinked file in the folder
is replaced (its target never opened), and a torn trajectory file is rewritten."""

from __future__ import annotations

import os

import pytest
from diagnose import golden_corpus
from diagnose.test_golden import corpus_run, store_trials

from capevolve.diagnose import trajectories
from capevolve.diagnose.classify import is_failure
from capevolve.diagnose.context import AdapterContext
from capevolve.diagnose.diagnosis import DiagnoseOptions, diagnose, diagnosis_path
from capevolve.errors import RunDirError

CONTEXT = AdapterContext(targets=golden_corpus.targets())


@pytest.fixture
def run(tmp_path):
    run = corpus_run(tmp_path)
    store_trials(run, golden_corpus.corpus())
    return run


@pytest.fixture
def outside(tmp_path):
    """A folder outside the run holding a file that looks like a stale trajectory."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "victim.json").write_text("keep me")
    return folder


def _untouched(outside):
    assert sorted(p.name for p in outside.iterdir()) == ["victim.json"]
    assert (outside / "victim.json").read_text() == "keep me"


def test_a_symlinked_trajectory_folder_is_refused_and_nothing_outside_changes(run, outside):
    """diagnoses/trajectories/<split>__<tag> -> elsewhere: RunDirError naming it; the
    files there are neither removed nor joined by trajectory files."""
    folder = trajectories.folder(run.layout.diagnoses, "val", "seed")
    folder.parent.mkdir(parents=True)
    folder.symlink_to(outside, target_is_directory=True)
    with pytest.raises(RunDirError, match="symlink"):
        diagnose(run, DiagnoseOptions("val", "seed"), CONTEXT)
    _untouched(outside)
    assert not diagnosis_path(run, "val", "seed").exists()


@pytest.mark.parametrize("link", ["diagnoses", "diagnoses/trajectories"])
def test_a_symlinked_diagnoses_folder_on_the_way_is_refused(run, outside, link):
    """A symlink higher on the way (diagnoses/, diagnoses/trajectories/) is refused too."""
    path = run.root / link
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(outside, target_is_directory=True)
    with pytest.raises(RunDirError, match="symlink"):
        diagnose(run, DiagnoseOptions("val", "seed"), CONTEXT)
    _untouched(outside)


def test_a_symlinked_file_in_the_folder_is_replaced_and_its_target_kept(run, outside):
    """A planted link named like a trajectory file becomes a regular file with the
    rollout's document; a stale link is removed as a link. The targets stay as they were."""
    trial = next(t for t in golden_corpus.corpus() if is_failure(t) and not t.trajectory)
    folder = trajectories.folder(run.layout.diagnoses, "val", "seed")
    folder.mkdir(parents=True)
    (folder / trajectories.file_name(trial)).symlink_to(outside / "victim.json")
    (folder / "stale__0.json").symlink_to(outside / "victim.json")
    diagnose(run, DiagnoseOptions("val", "seed"), CONTEXT)
    path = folder / trajectories.file_name(trial)
    assert not path.is_symlink() and path.read_text() == trajectories.document(trial)
    assert not os.path.lexists(folder / "stale__0.json")
    _untouched(outside)


def test_a_torn_trajectory_file_is_rewritten_by_the_next_diagnose(run):
    """A file cut short (a kill mid-write) holds the whole document after a rerun."""
    diagnose(run, DiagnoseOptions("val", "seed"), CONTEXT)
    trial = next(t for t in golden_corpus.corpus() if is_failure(t) and not t.trajectory)
    path = trajectories.folder(run.layout.diagnoses, "val", "seed") / \
        trajectories.file_name(trial)
    path.write_bytes(path.read_bytes()[:7])
    diagnose(run, DiagnoseOptions("val", "seed"), CONTEXT)
    assert path.read_text() == trajectories.document(trial)


def test_the_cli_refuses_a_symlinked_folder_in_one_line_with_exit_code_2(run, outside):
    """`capevolve diagnose` over a run whose diagnoses/ leads elsewhere: exit 2, one line."""
    from diagnose.test_cli_diagnose import invoke

    (run.root / "diagnoses").symlink_to(outside, target_is_directory=True)
    result = invoke("diagnose", "--run-dir", run.root, "--split", "val", "--tag", "seed")
    assert result.exit_code == 2, (result.stdout, result.stderr)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "symlink" in errors[0]
    assert "Traceback" not in result.stderr + result.stdout
    _untouched(outside)
