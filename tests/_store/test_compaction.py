"""Compaction: a complete evaluation's parts become one, atomically, and the store's
integrity checks hold before, during (kill -9 at every step) and after."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from fixtures.gate_oracle import per_row
from fixtures.projects import clean_env, make_candidate, make_project

from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import create_run
from capevolve._store import integrity
from capevolve._store.rollouts import compact
from capevolve._store.rollouts.query import RolloutStore, part_files
from capevolve._store.rundir import RunDir
from capevolve.errors import RunDirError
from capevolve.kinds import EventKind

pytestmark = pytest.mark.slow

EVAL = "val__cand_001__k2"
VIEW = ("SELECT task_id, trial, reward, output, error, seed, tokens FROM rollouts "
        "ORDER BY task_id, trial")
STEPS = ("written", "journalled", "renamed", "recorded", "retiring", "retired")
"""The compaction steps (see compact's docstring) a process is killed right after."""
KILL_AT = """
import os, signal, sys
from pathlib import Path
from capevolve._loop.evaluate import evaluate
from capevolve._store.rollouts import compact
from capevolve._store.rundir import RunDir

def kill_after(owner, name, when=lambda out, *args: True):
    real = getattr(owner, name)
    def wrapped(*args, **kwargs):
        out = real(*args, **kwargs)
        if when(out, *args):
            os.kill(os.getpid(), signal.SIGKILL)
        return out
    setattr(owner, name, wrapped)

step = sys.argv[2]
if step == "written":
    kill_after(compact, "_write", lambda written, *args: written)
elif step == "journalled":
    kill_after(compact, "write_intent")
elif step == "renamed":  # the first directory fsync of a compaction follows its renames
    kill_after(compact, "fsync_dir")
elif step == "recorded":  # the old parts' removal follows the record
    compact._retire = lambda run, retired: os.kill(os.getpid(), signal.SIGKILL)
elif step == "retiring":  # the first old part removed
    retiring = []
    kill_after(Path, "unlink", lambda out, *args: bool(retiring))
    real_retire = compact._retire
    compact._retire = lambda run, retired: retiring.append(1) or real_retire(run, retired)
elif step == "retired":
    kill_after(compact, "_retire")
elif step == "streaming":  # one full row group of the new part written, more to come
    compact.ROW_GROUP_ROWS, compact.READ_ROWS = 5, 3
    kill_after(compact._Files, "write")
else:
    raise SystemExit(f"unknown step {step}")
evaluate(RunDir.open(sys.argv[1]), "cand_001", "val")
"""


def _view(run: RunDir) -> list[tuple]:
    return RolloutStore(run.layout).query(VIEW)[1]


def _three_sessions(tmp_path: Path, monkeypatch, compaction: bool) -> RunDir:
    """cand_001 on val in three sessions: two during an outage (every unit errored, the
    evaluation incomplete), the third completes it (only the errored units run again)."""
    project = make_project(tmp_path / "p", 24, trials=2)
    run = create_run(project, tmp_path / "run")
    cand = make_candidate(tmp_path / "cand", 0.6)
    flag = project / "outage.flag"
    flag.write_text("down")
    for _ in range(2):
        assert evaluate(run, cand, "val")["status"] == "incomplete"
    flag.unlink()
    if not compaction:
        monkeypatch.setattr(compact, "compact_completed", lambda run, record: None)
    record = evaluate(run, "cand_001", "val")
    assert record["status"] == "complete" and record["resumed"]
    assert record["units_run"] == record["n_rows"], "the resume ran more than the errored units"
    return run


@pytest.fixture
def uncompacted(tmp_path, monkeypatch) -> RunDir:
    return _three_sessions(tmp_path, monkeypatch, compaction=False)


def test_completion_leaves_one_part_holding_every_row_and_the_same_view(uncompacted):
    """Compacting the three parts gives one recorded part holding all their counted rows
    (the errored duplicates too) in their order; every query answers as before; verify
    is clean."""
    run = uncompacted
    old = part_files(run.layout, EVAL)
    assert len(old) == 3
    before, rows = _view(run), sum(pq.ParquetFile(p).metadata.num_rows for p in old)
    outcomes = per_row(run.layout, EVAL)
    done = compact.compact_evaluation(run, EVAL, "val", "cand_001")
    assert done is not None and done.retired == 3 and done.rows == rows
    (new,) = part_files(run.layout, EVAL)
    assert new not in old and not any(p.exists() for p in old)
    assert _view(run) == before
    assert per_row(run.layout, EVAL) == outcomes
    (event,) = run.events(EventKind.PARTS_COMPACTED)
    assert sorted(event.retired) == sorted(integrity.relative(run.root, p) for p in old)
    assert event.parts[0].sha256 == integrity.sha256_file(new)
    opened = RunDir.open(run.root)
    result = integrity.verify(opened)
    assert result.ok and not result.notes, result.to_json()
    assert compact.compact_evaluation(opened, EVAL, "val", "cand_001") is None, \
        "a compacted evaluation is compacted again"


def test_evaluate_compacts_when_the_evaluation_completes(tmp_path, monkeypatch):
    """The completion path of evaluate compacts (one part, not three), and evaluating the
    complete evaluation again returns it unchanged and runs nothing."""
    run = _three_sessions(tmp_path, monkeypatch, compaction=True)
    assert len(part_files(run.layout, EVAL)) == 1
    started = len(run.events(EventKind.EVAL_STARTED))
    again = evaluate(run, "cand_001", "val")
    assert again["status"] == "complete" and len(run.events(EventKind.EVAL_STARTED)) == started


def test_a_changed_part_is_never_laundered_into_a_new_record(uncompacted):
    """A part edited by hand (rewritten with pyarrow, a reward flipped) is not compacted:
    the parts stay as they are and verification still names the changed one."""
    run = uncompacted
    victim = part_files(run.layout, EVAL)[-1]
    table = pq.read_table(victim)
    flipped = pc.if_else(pc.is_null(table["reward"]), table["reward"],
                         pc.subtract(1.0, table["reward"]))
    pq.write_table(table.set_column(table.schema.get_field_index("reward"), "reward",
                                    flipped), victim)
    assert compact.compact_evaluation(run, EVAL, "val", "cand_001") is None
    assert len(part_files(run.layout, EVAL)) == 3
    with pytest.raises(RunDirError, match=victim.name):
        RunDir.open(run.root)


def test_tampering_after_compaction_is_detected(uncompacted, tmp_path):
    """After compaction: an edited compacted part, a retired part put back, and a deleted
    compacted part are each refused by path."""
    run = uncompacted
    old = part_files(run.layout, EVAL)
    kept = tmp_path / "kept.parquet"
    shutil.copy(old[0], kept)
    compact.compact_evaluation(run, EVAL, "val", "cand_001")
    (new,) = part_files(run.layout, EVAL)
    shutil.copy(kept, old[0])  # a retired part back in place
    with pytest.raises(RunDirError, match="retired by a compaction"):
        RunDir.open(run.root)
    old[0].unlink()
    data = bytearray(new.read_bytes())
    data[len(data) // 2] ^= 0xFF
    new.write_bytes(bytes(data))
    with pytest.raises(RunDirError, match=new.name):
        RunDir.open(run.root)
    new.unlink()
    with pytest.raises(RunDirError, match="missing"):
        RunDir.open(run.root)


def _kill_at(step: str, source: RunDir, root: Path) -> RunDir:
    """A copy of the run, then a real process resuming its evaluation killed right after
    compaction ``step``."""
    shutil.copytree(source.root, root)
    proc = subprocess.run([sys.executable, "-c", KILL_AT, str(root), step], env=clean_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    return RunDir(root)


@pytest.fixture
def incomplete(tmp_path) -> RunDir:
    """cand_001 on val after two sessions in an outage (the third is left to the test)."""
    project = make_project(tmp_path / "p", 24, trials=2)
    run = create_run(project, tmp_path / "run")
    (project / "outage.flag").write_text("down")
    cand = make_candidate(tmp_path / "cand", 0.6)
    for _ in range(2):
        evaluate(run, cand, "val")
    return run


def _reference(incomplete: RunDir, tmp_path: Path, monkeypatch) -> list[tuple]:
    (Path(incomplete.manifest.project_dir) / "outage.flag").unlink()
    monkeypatch.setattr(compact, "compact_completed", lambda run, record: None)
    ref = RunDir(shutil.copytree(incomplete.root, tmp_path / "ref"))
    evaluate(ref, "cand_001", "val")
    monkeypatch.undo()
    assert len(part_files(ref.layout, EVAL)) == 3
    return _view(ref)


@pytest.mark.parametrize("step", STEPS)
def test_kill_9_at_each_step_leaves_one_count_and_a_verifiable_run(
        incomplete, tmp_path, monkeypatch, step):
    """kill -9 of a real evaluate right after each compaction step: the run opens (an
    unfinished compaction is a note, never a problem), every unit counts once with the
    rows the uncompacted run has, and the next evaluate settles it (one part, verify
    clean, no journal left) without running a unit."""
    reference = _reference(incomplete, tmp_path, monkeypatch)
    run = _kill_at(step, incomplete, tmp_path / f"run-{step}")
    opened = RunDir.open(run.root)
    assert _view(opened) == reference
    assert integrity.verify(opened).ok
    parts = part_files(opened.layout, EVAL)
    assert 1 <= len(parts) <= 4
    started = len(opened.events(EventKind.EVAL_STARTED))
    record = evaluate(opened, "cand_001", "val")
    assert record["status"] == "complete"
    assert len(opened.events(EventKind.EVAL_STARTED)) == started, "a unit ran again"
    settled = RunDir.open(run.root)
    assert len(part_files(settled.layout, EVAL)) == 1
    assert _view(settled) == reference
    result = integrity.verify(settled)
    assert result.ok and not result.notes, result.to_json()
    assert not list(settled.layout.journal.glob("*")) if settled.layout.journal.is_dir() \
        else True
    assert not [p for p in settled.layout.rollouts.rglob("*") if p.name.startswith(".")]
    assert len(settled.events(EventKind.PARTS_COMPACTED)) == 1


def test_a_query_of_one_evaluation_reads_only_its_files(uncompacted, tmp_path):
    """Partition pruning: EXPLAIN ANALYZE of a per-evaluation connection reads exactly
    that evaluation's parts, while the whole-run view reads every part."""
    run = uncompacted
    evaluate(run, "seed", "val")
    store = RolloutStore(run.layout)
    mine, everything = part_files(run.layout, EVAL), part_files(run.layout)
    assert len(everything) > len(mine)

    def files_read(eval_id: str | None) -> int:
        con = store.connect(eval_id)
        plan = "\n".join(str(r[1]) for r in con.execute(
            "EXPLAIN ANALYZE SELECT count(*) FROM rollouts").fetchall())
        con.close()
        counts = [int(n) for n in re.findall(r"Total Files Read:\s*(\d+)", plan)]
        assert counts, plan
        return sum(counts)

    assert files_read(EVAL) == len(mine)
    assert files_read(None) == len(everything)


def test_a_reader_whose_parts_are_retired_under_it_reads_again(uncompacted, monkeypatch):
    """A query that listed the old parts just before a compaction (in another process)
    removed them reads the parts as they are now, and answers as before."""
    run = uncompacted
    before = _view(run)
    store = RolloutStore(run.layout)
    real = part_files
    stale = real(run.layout, None)
    calls = []

    def listed_then_compacted(layout, eval_id=None):
        if not calls:  # the first listing is taken before the compaction runs
            calls.append(1)
            compact.compact_evaluation(run, EVAL, "val", "cand_001")
            return stale
        return real(layout, eval_id)

    from capevolve._store.rollouts import query as query_module

    monkeypatch.setattr(query_module, "part_files", listed_then_compacted)
    assert store.query(VIEW)[1] == before
    assert len(real(run.layout, EVAL)) == 1 and not all(p.exists() for p in stale)


def test_the_view_without_duplicates_is_the_ranked_view(uncompacted, monkeypatch):
    """Where no unit has two rows the view skips the ranking: it holds exactly the rows
    the ranking would keep (checked by forcing the ranked path)."""
    run = uncompacted
    evaluate(run, "seed", "val")
    sql = "SELECT * EXCLUDE (worker_id, node_id) FROM rollouts ORDER BY eval_id, task_id, trial"
    fast = RolloutStore(run.layout).query(sql, "val__seed__k2")[1]
    from capevolve._store.rollouts import query as query_module

    monkeypatch.setattr(query_module, "_has_duplicates", lambda con, source: True)
    assert RolloutStore(run.layout).query(sql, "val__seed__k2")[1] == fast
    assert fast


def test_a_compaction_during_another_evaluation_is_not_foreign_to_its_guard(
        uncompacted, monkeypatch):
    """An evaluation's guard (snapshot at its start, check at its end) sees another
    evaluation of this process compacted meanwhile: neither the compaction's temporary
    file (seen mid-way) nor its new part is taken for a file planted by candidate code."""
    from capevolve._loop.evaluate import run_project
    from capevolve._loop.guard import EvaluationGuard

    run = uncompacted
    guard = EvaluationGuard(run, run_project(run))
    seen: list[list[Path]] = []
    real_intent = compact.write_intent

    def look(*args):  # the new part is written under its temporary name, not yet renamed
        assert any(p.name.endswith(compact.TMP_SUFFIX)
                   for p in run.layout.rollouts.rglob("*")), "no temporary file to see"
        seen.append(guard.foreign_parts([]))
        return real_intent(*args)

    monkeypatch.setattr(compact, "write_intent", look)
    done = compact.compact_evaluation(run, EVAL, "val", "cand_001")
    assert done is not None and done.retired == 3
    assert seen == [[]], f"the compaction's temporary file was foreign: {seen}"
    assert guard.foreign_parts([]) == [], "the compacted part was taken for a foreign one"
    assert not compact.running


def test_streaming_writes_the_old_rows_in_order_a_row_group_at_a_time(uncompacted,
                                                                     monkeypatch):
    """With row groups of 5 rows read 3 at a time, the new part holds exactly the old
    parts' rows in their order (path, then row), every row group but the last holds 5
    rows, and every query answers as before."""
    run = uncompacted
    monkeypatch.setattr(compact, "ROW_GROUP_ROWS", 5)
    monkeypatch.setattr(compact, "READ_ROWS", 3)
    old = part_files(run.layout, EVAL)
    expected = [row for p in sorted(old) for row in pq.read_table(p).to_pylist()
                if row["eval_id"] == EVAL and row["candidate_id"] == "cand_001"]
    before = _view(run)
    assert compact.compact_evaluation(run, EVAL, "val", "cand_001") is not None
    (new,) = part_files(run.layout, EVAL)
    assert pq.read_table(new).to_pylist() == expected
    meta = pq.ParquetFile(new).metadata
    sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    assert len(sizes) > 2 and set(sizes[:-1]) == {5} and 1 <= sizes[-1] <= 5, sizes
    assert _view(run) == before
    assert integrity.verify(RunDir.open(run.root)).ok


def test_kill_9_in_the_middle_of_the_stream_leaves_the_old_parts_whole(
        incomplete, tmp_path, monkeypatch):
    """kill -9 right after the first row group of the new part is on disk (the stream
    half done): the run opens with every unit counted once as in the uncompacted run, and
    the next evaluate removes the half-written file and compacts without running a unit."""
    reference = _reference(incomplete, tmp_path, monkeypatch)
    root = tmp_path / "run-streaming"
    shutil.copytree(incomplete.root, root)
    proc = subprocess.run([sys.executable, "-c", KILL_AT, str(root), "streaming"],
                          env=clean_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    opened = RunDir.open(root)
    half = [p for p in opened.layout.rollouts.rglob(f"*{compact.TMP_SUFFIX}")]
    assert half, "the kill came before anything of the new part was written"
    assert len(part_files(opened.layout, EVAL)) == 3
    assert _view(opened) == reference and integrity.verify(opened).ok
    started = len(opened.events(EventKind.EVAL_STARTED))
    assert evaluate(opened, "cand_001", "val")["status"] == "complete"
    assert len(opened.events(EventKind.EVAL_STARTED)) == started, "a unit ran again"
    settled = RunDir.open(root)
    assert len(part_files(settled.layout, EVAL)) == 1 and _view(settled) == reference
    assert not [p for p in settled.layout.rollouts.rglob("*") if p.name.startswith(".")]
    result = integrity.verify(settled)
    assert result.ok and not result.notes, result.to_json()
