"""RunDir invariants: the event log survives a torn write and is read once, state.json is
derived, opening is read-only, snapshots are immutable, unknown cost is "not recorded",
and the frozen splits cannot be edited."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import pytest
from fixtures.projects import make_candidate, make_project

from capevolve._loop.run import SEED_ID, create_run
from capevolve._store import jsonfiles
from capevolve._store.rundir import RunDir, Spend
from capevolve._store.splits import Splits
from capevolve.errors import CandidateError, RunDirError
from capevolve.kinds import EventKind

TORN = b'{"kind": "note", "msg": "half a rec'  # what a kill mid-write leaves behind


def _tear(run: RunDir) -> None:
    with open(run.layout.events, "ab") as fh:
        fh.write(TORN)


def _tree(root: Path) -> dict[str, tuple]:
    """Every file and folder under ``root`` with its mtime and content hash."""
    out = {}
    for path in sorted(root.rglob("*")):
        info = path.stat()
        data = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        out[path.relative_to(root).as_posix()] = (info.st_mtime_ns, data)
    return out


# -- events.jsonl ---------------------------------------------------------------------------

def test_torn_last_line_is_skipped_on_read(run):
    """A half-written last record is skipped: events(), best_id and open() still work."""
    before = run.events()
    _tear(run)
    reopened = RunDir.open(run.root)
    assert reopened.events() == before
    assert reopened.best_id == SEED_ID


def test_record_appended_after_a_torn_line_is_readable(run):
    """After a torn last line, the next log_event is still a readable record."""
    _tear(run)
    record = run.log_event(EventKind.NOTE, msg="after the tear")
    notes = run.events(EventKind.NOTE)
    assert [e.data.get("msg") for e in notes] == ["after the tear"], notes
    assert notes[0].ts == record.ts
    lines = run.layout.events.read_bytes().split(b"\n")
    assert TORN in lines, "the torn bytes must stay on a line of their own"
    run.log_event(EventKind.NOTE, msg="and one more")
    assert [e.data["msg"] for e in RunDir.open(run.root).events(EventKind.NOTE)] == [
        "after the tear", "and one more"]


@pytest.mark.slow
def test_set_best_after_a_torn_line_takes_effect(gated):
    """An accept (set_best) recorded right after a torn line changes best_id."""
    from capevolve._loop.decide import accept

    _tear(gated)
    accept(gated, "cand_001")
    assert RunDir.open(gated.root).best_id == "cand_001"


def test_event_log_is_parsed_once_and_appends_fold_in(run, monkeypatch):
    """best_id and spent do not re-read events.jsonl: bytes are parsed once, and events
    appended by another RunDir (another process) are picked up incrementally."""
    import capevolve._store.events as events_module

    parsed = []
    real = events_module.parse_event
    monkeypatch.setattr(events_module, "parse_event",
                        lambda data, source: parsed.append(source) or real(data, source))
    reader = RunDir.open(run.root)
    for _ in range(20):
        assert reader.best_id == SEED_ID and reader.spent.metric_calls == 0
    n_lines = len(run.layout.events.read_bytes().splitlines())
    assert len(parsed) == n_lines
    run.update_spent(metric_calls=4)  # another writer appends
    assert reader.spent.metric_calls == 4
    assert len(parsed) == n_lines + 1 + 1  # the writer's own fold, then the reader's


@pytest.mark.parametrize("how", ["shortened", "replaced"])
def test_a_rewritten_log_is_refused(run, how):
    """An events.jsonl shortened, or replaced by another file of the same size, after it
    was read (history rewritten) is a RunDirError."""
    run.update_spent(tokens=5)
    assert run.spent.tokens == 5
    data = run.layout.events.read_bytes()
    if how == "shortened":
        run.layout.events.write_bytes(b"".join(data.splitlines(keepends=True)[:-1]))
    else:
        forged = run.layout.events.with_name("forged")
        forged.write_bytes(data.replace(b'"tokens": 5', b'"tokens": 0'))
        forged.replace(run.layout.events)
    with pytest.raises(RunDirError, match="events.jsonl.*rewritten"):
        run.spent  # noqa: B018


# -- state.json is derived; opening is read-only --------------------------------------------

def test_state_json_is_a_derived_cache(run):
    """Deleting or corrupting state.json changes nothing: best and spend come from events."""
    run.update_spent(metric_calls=3, tokens=30, cost_usd=0.5, wall_s=1.25)
    run.update_spent(iterations=1)
    best, spent = run.best_id, run.spent.to_dict()
    assert spent["metric_calls"] == 3 and spent["iterations"] == 1 and spent["tokens"] == 30
    state = jsonfiles.read(run.layout.state)
    assert state["best_id"] == best and state["spent"] == spent

    run.layout.state.unlink()
    reopened = RunDir.open(run.root)
    assert reopened.best_id == best and reopened.spent.to_dict() == spent
    assert not run.layout.state.exists(), "a read-only open must not rewrite state.json"

    jsonfiles.write_atomic(run.layout.state, {"best_id": "cand_999", "n_events": 0,
                                              "spent": Spend().to_dict(), "budget": None})
    reopened = RunDir.open(run.root)
    assert reopened.best_id == best and reopened.spent.to_dict() == spent
    reopened.log_event(EventKind.NOTE, msg="refresh")  # a write refreshes the cache
    state = jsonfiles.read(run.layout.state)
    assert state["best_id"] == best and state["spent"] == spent
    assert state["n_events"] == len(reopened.events())


@pytest.mark.slow
def test_open_and_status_change_no_file(gated):
    """RunDir.open, status, the lookups and the report text leave every file's bytes and
    mtime unchanged and create nothing (not even a lock file)."""
    from capevolve._loop.status import run_status
    from capevolve.report.markdown import render

    (gated.layout.lock).unlink(missing_ok=True)
    before = _tree(gated.root)
    reopened = RunDir.open(gated.root)
    run_status(reopened)
    render(reopened)
    reopened.events(), reopened.candidate_ids(), reopened.candidate_meta("cand_001")
    assert _tree(gated.root) == before


@pytest.mark.slow
def test_cli_status_and_query_change_no_file(gated):
    """`capevolve status` and `capevolve query` (read-only commands) leave the run dir
    byte- and mtime-identical."""
    from typer.testing import CliRunner

    from capevolve.cli.app import app

    gated.layout.lock.unlink(missing_ok=True)
    before = _tree(gated.root)
    runner = CliRunner()
    for argv in (["status", "--run-dir", str(gated.root), "--json"],
                 ["query", "--run-dir", str(gated.root), "SELECT count(*) FROM rollouts"]):
        result = runner.invoke(app, argv)
        assert result.exit_code == 0, (argv, result.stdout, result.stderr)
    assert _tree(gated.root) == before


# -- candidates -----------------------------------------------------------------------------

def test_snapshot_same_content_reuses_and_other_content_is_refused(run, tmp_path):
    """Identical content under a taken id returns the record; other content: CandidateError."""
    first = run.snapshot("cand_001", make_candidate(tmp_path / "a", 0.7))
    twin = run.snapshot("cand_001", make_candidate(tmp_path / "twin", 0.7))
    assert twin == first
    assert len(run.events(EventKind.SNAPSHOT)) == 2  # seed + cand_001, no second record
    with pytest.raises(CandidateError, match="cand_001"):
        run.snapshot("cand_001", make_candidate(tmp_path / "other", 0.2))
    files = run.candidate_dir("cand_001")
    assert (files / "quality.txt").read_text() == "0.7"
    assert RunDir.open(run.root).candidate_meta("cand_001").hash == first.hash


def test_snapshot_files_are_read_only(run, tmp_path):
    """Every file of a snapshot has no write permission bit."""
    src = make_candidate(tmp_path / "a", 0.7, overrides={"t001": 1.0})
    (src / "tools").mkdir()
    (src / "tools" / "x.py").write_text("X = 1\n")
    run.snapshot("cand_001", src)
    files = [p for p in run.candidate_dir("cand_001").rglob("*") if p.is_file()]
    assert len(files) == 3
    for path in files:
        mode = path.stat().st_mode
        assert not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH), (path, oct(mode))
        assert os.geteuid() == 0 or not os.access(path, os.W_OK)
    seed_files = [p for p in run.candidate_dir(SEED_ID).rglob("*") if p.is_file()]
    assert seed_files and all(not p.stat().st_mode & 0o222 for p in seed_files)


def test_snapshot_refuses_unknown_fields(run, tmp_path):
    """snapshot(**fields) takes only the record's fields; nothing is written otherwise."""
    with pytest.raises(ValueError, match="snapshot"):
        run.snapshot("cand_001", make_candidate(tmp_path / "a", 0.7), hash="forged")
    assert "cand_001" not in run.candidate_ids()


def test_next_candidate_id_increments(run, tmp_path):
    """next_candidate_id is one past the highest cand_NNN, and never reuses an id."""
    assert run.next_candidate_id() == "cand_001"
    run.snapshot(run.next_candidate_id(), make_candidate(tmp_path / "a", 0.1))
    assert run.next_candidate_id() == "cand_002"
    run.snapshot("cand_007", make_candidate(tmp_path / "b", 0.2))
    run.snapshot("custom", make_candidate(tmp_path / "c", 0.3))
    assert run.next_candidate_id() == "cand_008"
    assert run.candidate_ids() == ["cand_001", "cand_007", "custom", SEED_ID]


# -- spend ----------------------------------------------------------------------------------

def test_spend_cost_is_not_recorded_when_every_cost_is_unknown():
    """cost_usd is None when every rollout's cost was unknown, a number when some were known."""
    unknown = Spend()
    unknown.add({"metric_calls": 10, "cost_unrecorded": 10, "cost_usd": 0.0})
    assert unknown.to_dict()["cost_usd"] is None
    assert unknown.to_dict()["cost_unrecorded"] == 10

    some = Spend()
    some.add({"metric_calls": 10, "cost_unrecorded": 4, "cost_usd": 0.25})
    assert some.to_dict()["cost_usd"] == pytest.approx(0.25)

    free = Spend()  # known costs that happen to be zero are a recorded $0
    free.add({"metric_calls": 5, "cost_unrecorded": 0, "cost_usd": 0.0})
    assert free.to_dict()["cost_usd"] == 0.0

    assert Spend().to_dict()["cost_usd"] is None  # nothing ran: nothing recorded


@pytest.mark.slow
def test_run_spend_reports_unknown_cost_as_not_recorded(tmp_path):
    """Real evaluations: no adapter cost gives cost_usd None; known costs give their sum."""
    from capevolve._loop.evaluate import evaluate

    no_cost = create_run(make_project(tmp_path / "p0", 12, trials=1), tmp_path / "r0")
    evaluate(no_cost, SEED_ID, "val")
    spent = RunDir.open(no_cost.root).spent.to_dict()
    assert spent["metric_calls"] == 3 and spent["cost_unrecorded"] == 3
    assert spent["cost_usd"] is None
    assert jsonfiles.read(no_cost.layout.state)["spent"]["cost_usd"] is None

    priced = create_run(make_project(tmp_path / "p1", 12, trials=1, cost=0.01), tmp_path / "r1")
    evaluate(priced, SEED_ID, "val")
    spent = RunDir.open(priced.root).spent.to_dict()
    assert spent["cost_unrecorded"] == 0
    assert spent["cost_usd"] == pytest.approx(0.03)


# -- opening and the frozen splits ----------------------------------------------------------

def test_open_without_run_json_is_refused(tmp_path):
    """RunDir.open of a directory without run.json (or of a missing path) raises RunDirError."""
    (tmp_path / "empty").mkdir()
    with pytest.raises(RunDirError, match="run.json"):
        RunDir.open(tmp_path / "empty")
    with pytest.raises(RunDirError):
        RunDir.open(tmp_path / "missing")


def test_create_refuses_an_existing_run(run, tmp_path):
    """create_run into a dir that holds a run is refused and the run is untouched."""
    before = _tree(run.root)
    with pytest.raises(RunDirError, match="already holds a run"):
        create_run(make_project(tmp_path / "p2", 12), run.root)
    assert _tree(run.root) == before


def _move_a_test_task_to_train(path, fix_checksum: bool) -> None:
    data = json.loads(path.read_text())
    data["train"].append(data["test"].pop())
    if fix_checksum:
        data["checksum"] = Splits(train=tuple(data["train"]), val=tuple(data["val"]),
                                  test=tuple(data["test"]), seed=data["seed"]).checksum()
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


@pytest.mark.parametrize("fix_checksum", [False, True], ids=["plain-edit", "checksum-recomputed"])
def test_edited_splits_are_caught_on_open(run, fix_checksum):
    """Editing splits.json is a RunDirError on open, even with its checksum recomputed."""
    RunDir.open(run.root).splits  # noqa: B018 - the untouched run opens
    _move_a_test_task_to_train(run.layout.splits_json, fix_checksum)
    with pytest.raises(RunDirError, match="splits"):
        RunDir.open(run.root)


def test_an_edited_snapshot_is_refused_before_it_runs(run, tmp_path):
    """A snapshot file changed after the snapshot (permissions forced) is refused by
    evaluate before any rollout: the content hash is checked every time it is used."""
    from capevolve._loop.evaluate import evaluate

    run.snapshot("cand_001", make_candidate(tmp_path / "a", 0.2))
    target = run.candidate_dir("cand_001") / "quality.txt"
    target.chmod(0o644)
    target.write_text("1.0")
    with pytest.raises(CandidateError, match="changed since it was snapshotted"):
        evaluate(run, "cand_001", "val")
    assert not list(run.layout.rollouts.rglob("*.parquet"))


def test_a_forged_file_list_in_candidate_json_is_refused(run, tmp_path):
    """Hiding a protected file by editing candidate.json's digests does not get the
    candidate run: the recorded digests must match the snapshot's files (the run then no
    longer opens, naming the candidate)."""
    from capevolve._loop.evaluate import evaluate

    cheat = make_candidate(tmp_path / "cheat", 0.9)
    (cheat / "gold_answers.json").write_text("{}")
    run.snapshot("cand_001", cheat)
    meta_path = run.layout.candidate_meta("cand_001")
    meta = json.loads(meta_path.read_text())
    del meta["files"]["gold_answers.json"]
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(CandidateError, match="changed since it was snapshotted"):
        RunDir(run.root).candidate_dir("cand_001")
    with pytest.raises(RunDirError, match="candidates/cand_001: differs from the snapshot"):
        evaluate(RunDir.open(run.root), "cand_001", "val")
    assert not list(run.layout.rollouts.rglob("*.parquet"))


def test_a_snapshot_killed_before_its_record_is_redone(run, tmp_path, monkeypatch):
    """A snapshot that died after copying the files but before candidate.json leaves no
    candidate (nothing but staging); snapshotting again under the same id succeeds."""
    import capevolve._store.rundir as rundir_module

    src = make_candidate(tmp_path / "a", 0.7)

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # the process dies here

    monkeypatch.setattr(rundir_module.jsonfiles, "write_atomic", killed)
    with pytest.raises(KeyboardInterrupt):
        run.snapshot("cand_001", src)
    monkeypatch.undo()
    assert not run.layout.candidate_files("cand_001").exists()
    assert "cand_001" not in RunDir.open(run.root).candidate_ids()
    record = run.snapshot("cand_001", src)
    assert run.candidate_dir("cand_001").is_dir() and record.id == "cand_001"
