"""Snapshots are atomic, and symlinks inside a candidate are content or refused."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.projects import clean_env, make_candidate, make_project

from capevolve._loop.intake import resolve_candidate
from capevolve._loop.run import create_run
from capevolve._store.candidates import STAGING, content_hash, iter_files
from capevolve.errors import CandidateError

KILL_BEFORE_RENAME = """
import os, sys
from capevolve._store import candidates
from capevolve._store.rundir import RunDir
candidates.os.replace = lambda *a: os.kill(os.getpid(), 9)   # the worst moment
run = RunDir.open(sys.argv[1])
run.snapshot(run.next_candidate_id(), sys.argv[2])
"""


@pytest.fixture
def run(tmp_path):
    return create_run(make_project(tmp_path / "p", 12, trials=1), tmp_path / "run")


def _no_trace_of(run, candidate_id: str) -> None:
    assert not (run.layout.candidates / candidate_id).exists()
    assert candidate_id not in run.candidate_ids()


@pytest.mark.slow
def test_a_snapshot_killed_before_its_rename_leaves_no_candidate_and_blocks_nothing(
        run, tmp_path):
    """kill -9 of a real process at the worst moment (everything copied and recorded in
    staging, the rename not done) three times: no candidate appears, and the next
    snapshots, of the same and of other content, succeed and clean the staging up."""
    sources = [make_candidate(tmp_path / f"c{i}", 0.2 + 0.1 * i) for i in range(3)]
    for src in sources:
        proc = subprocess.run([sys.executable, "-c", KILL_BEFORE_RENAME, str(run.root),
                               str(src)], env=clean_env(), capture_output=True)
        assert proc.returncode == -signal.SIGKILL, proc.stderr
        _no_trace_of(run, "cand_001")
    assert list((run.layout.candidates / STAGING).iterdir()), "the kill left its staging"
    ids = [resolve_candidate(run, src) for src in sources]
    assert ids == ["cand_001", "cand_002", "cand_003"]
    assert not (run.layout.candidates / STAGING).exists()
    for cid, src in zip(ids, sources, strict=True):
        assert run.candidate_meta(cid).hash == content_hash(src)
        assert run.candidate_dir(cid).is_dir()


def test_symlinks_inside_the_candidate_are_taken_as_their_content(run, tmp_path):
    """A file symlink becomes a copy of its file and a directory symlink a copy of its
    tree (a directory symlink was silently dropped); the snapshot holds no symlink."""
    src = make_candidate(tmp_path / "cand", 0.7)
    (src / "docs").mkdir()
    (src / "docs" / "rules.md").write_text("be exact\n")
    (src / "notes.md").symlink_to("docs/rules.md")
    (src / "more").symlink_to("docs")
    record = run.snapshot("cand_001", src)
    assert set(record.files) == {"quality.txt", "docs/rules.md", "notes.md",
                                 "more/rules.md"}
    files = run.candidate_dir("cand_001")
    assert not any(p.is_symlink() for p in files.rglob("*"))
    assert (files / "notes.md").read_text() == (files / "more" / "rules.md").read_text() \
        == "be exact\n"


@pytest.mark.slow
@pytest.mark.parametrize("make, named", [
    (lambda src, tmp: (src / "notes.md").symlink_to("/etc/passwd"), "notes.md"),
    (lambda src, tmp: (src / "etc").symlink_to("/etc"), "etc"),
    (lambda src, tmp: (src / "gone.md").symlink_to(tmp / "nowhere"), "gone.md"),
    (lambda src, tmp: (src / "loop").symlink_to("loop"), "loop"),
    (lambda src, tmp: (src / "up").symlink_to("."), "up"),
    (lambda src, tmp: os.mkfifo(src / "pipe"), "pipe"),
    (lambda src, tmp: (src / os.fsdecode(b"caf\xe9.md")).write_text("x"), "caf"),
])
def test_a_link_out_a_dangling_link_a_loop_a_fifo_or_a_bad_name_is_refused(
        run, tmp_path, make, named):
    """Each is one CandidateError naming the path; nothing is copied (a link to
    /etc/passwd used to copy the password file in) and no staging is left."""
    src = make_candidate(tmp_path / "cand", 0.7)
    make(src, tmp_path)
    with pytest.raises(CandidateError, match=named) as info:
        resolve_candidate(run, src)
    assert "\n" not in str(info.value)
    _no_trace_of(run, "cand_001")
    assert not (run.layout.candidates / STAGING).exists()


def test_a_candidate_inside_or_above_the_run_dir_is_refused_before_it_is_read(run):
    """A snapshot's own path (name it by id), the run dir and a directory holding it
    (/, the cwd) are refused without walking them."""
    for path in (run.layout.candidate_files("seed"), run.root, run.root.parent, Path("/")):
        with pytest.raises(CandidateError, match="run dir"):
            resolve_candidate(run, path)
    assert resolve_candidate(run, "seed") == "seed"


def test_iter_files_refuses_a_tree_that_is_not_a_capability_dir(tmp_path, monkeypatch):
    """More files than MAX_FILES is one line, not an hour of hashing."""
    import capevolve._store.candidates as candidates

    monkeypatch.setattr(candidates, "MAX_FILES", 5)
    for i in range(7):
        (tmp_path / f"f{i}").write_text("x")
    with pytest.raises(CandidateError, match="more than 5 files"):
        iter_files(tmp_path)


def _limit_file_size(limit: int):
    def apply() -> None:
        import resource

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past it fails: EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


@pytest.mark.slow
def test_a_full_disk_mid_snapshot_is_one_line_and_leaves_nothing(run, tmp_path):
    """A write that fails half-way through a snapshot (RLIMIT_FSIZE on a real `capevolve
    evaluate`): one error line naming the path, exit 2, no candidate, no staging; once
    the limit is gone the same candidate snapshots as cand_001."""
    src = make_candidate(tmp_path / "cand", 0.7)
    (src / "big.bin").write_bytes(os.urandom(200_000))
    args = [str(Path(sys.executable).with_name("capevolve")), "evaluate", "--run-dir",
            str(run.root), "--candidate", str(src), "--split", "val", "--engine", "local"]
    out = subprocess.run(args, capture_output=True, text=True, env=clean_env(),
                         preexec_fn=_limit_file_size(100_000))
    errors = [ln for ln in out.stderr.splitlines() if ln.startswith("error:")]
    assert out.returncode == 2 and len(errors) == 1, out.stderr
    assert "Traceback" not in out.stderr and "big.bin" in errors[0], out.stderr
    _no_trace_of(run, "cand_001")
    assert not (run.layout.candidates / STAGING).exists()
    assert resolve_candidate(run, src) == "cand_001"


def test_a_failed_atomic_write_leaves_the_old_document_and_no_temp_file(tmp_path):
    """write_atomic that fails (a value JSON cannot hold, a write past RLIMIT_FSIZE in
    the CLI tests) removes its temporary file and leaves the old document as it was."""
    from capevolve._store import jsonfiles

    path = tmp_path / "doc.json"
    jsonfiles.write_atomic(path, {"a": 1})
    before = path.read_bytes()
    with pytest.raises(ValueError):
        jsonfiles.write_atomic(path, {"a": float("nan")})
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["doc.json"]
