"""diff: unified diff and stat of two candidates' snapshots."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from capevolve._store.rundir import RunDir
from capevolve.view.diff import diff, stat_text


@pytest.mark.slow
def test_diff_of_changed_prompt(view_run):
    run = RunDir.open(view_run.path)
    result = diff(run, "seed", view_run.improved)
    assert [c["path"] for c in result["files"]] == ["system_prompt.md"]
    change = result["files"][0]
    assert change["status"] == "modified" and change["added"] > 0
    assert change["diff"].startswith(f"--- seed/system_prompt.md\n+++ {view_run.improved}/")
    old = (run.candidate_dir("seed") / "system_prompt.md").read_text()
    new = (run.candidate_dir(view_run.improved) / "system_prompt.md").read_text()
    added = [line[1:] for line in change["diff"].splitlines()[2:] if line.startswith("+")]
    assert all(line + "\n" in new or line == new.splitlines()[-1] for line in added)
    assert len(new.splitlines()) - len(old.splitlines()) == change["added"] - change["removed"]


def test_binary_and_added_files_and_identity(view_run):
    run = RunDir.open(view_run.path)
    result = diff(run, "seed", view_run.worse)
    by_path = {c["path"]: c for c in result["files"]}
    assert by_path["notes.bin"]["status"] == "added" and by_path["notes.bin"]["binary"]
    assert by_path["system_prompt.md"]["removed"] > 0
    assert "2 files changed" in stat_text(result)
    same = diff(run, "seed", "seed")
    assert same["files"] == [] and "identical" in stat_text(same)


@pytest.mark.slow
def test_cli_diff_stat_and_compare_json(view_run):
    cli = [str(Path(sys.executable).parent / "capevolve")]
    out = subprocess.run([*cli, "diff", "seed", view_run.worse, "--run-dir",
                          str(view_run.path), "--stat"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "notes.bin" in out.stdout and "binary" in out.stdout
    bad = subprocess.run([*cli, "compare", "seed", "nope", "--run-dir", str(view_run.path)],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "nope" in bad.stderr
    assert "Traceback" not in bad.stderr
