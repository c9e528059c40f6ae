"""Rollout storage invariants: atomic parts that reach disk on time, truncated parts
quarantined and re-run, one row per unit in the view, empty runs, one-line query errors."""

from __future__ import annotations

import datetime as dt
import functools
import json
import threading
import time

import pyarrow.parquet as pq
import pytest
from fixtures.projects import make_project

from capevolve._loop import session
from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import SEED_ID, create_run
from capevolve._store import jsonfiles
from capevolve._store.evals_means import task_means_of
from capevolve._store.rollouts import compact
from capevolve._store.rollouts.evalrows import eval_rows
from capevolve._store.rollouts.query import RolloutStore, quarantine_bad_parts
from capevolve._store.rollouts.schema import SCHEMA_VERSION
from capevolve._store.rollouts.task_rows import task_rows
from capevolve._store.rollouts.writer import PartWriter, write_part
from capevolve.errors import StoreError
from capevolve.kinds import EvalStatus

T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def _row(task_id: str, trial: int, eval_id: str = "val__seed__k2", reward: float = 1.0,
         finished_s: float = 0.0) -> dict:
    return {"schema_version": SCHEMA_VERSION, "run_id": "r", "eval_id": eval_id,
            "split": "val", "candidate_id": SEED_ID, "candidate_hash": "h",
            "task_id": task_id, "trial": trial, "seed": 7, "reward": reward,
            "attempts": 1, "started_at": T0,
            "finished_at": T0 + dt.timedelta(seconds=finished_s)}


def _parts(run, split="val"):
    return sorted((run.layout.rollouts / f"split={split}").rglob("*.parquet"))


def _raw_units(run, split="val"):
    """(task_id, trial) of every stored row, read from the files (no deduplication)."""
    return [(r["task_id"], r["trial"]) for p in _parts(run, split)
            for r in pq.read_table(p, columns=["task_id", "trial"]).to_pylist()]


def _ids_project(root, val_ids, *, trials=2, sleep=0.0, concurrency=8, extra_tasks=()):
    """A flex project whose val split is exactly ``val_ids`` (test: one other task)."""
    tasks = [{"id": t} for t in val_ids] + [{"id": "held"}] + list(extra_tasks)
    project = make_project(root, tasks, trials=trials, sleep=sleep,
                           engine={"concurrency": concurrency}, splits="{ids_file: ids.json}")
    (project / "ids.json").write_text(json.dumps(
        {"train": [t["id"] for t in extra_tasks], "val": list(val_ids), "test": ["held"]}))
    return project


def _small_writer(monkeypatch, **kwargs):
    """Make evaluate() use PartWriters with the given limits."""
    monkeypatch.setattr(session, "PartWriter", functools.partial(PartWriter, **kwargs))


# -- PartWriter -----------------------------------------------------------------------------

def test_part_writer_writes_via_temp_name_and_rename(tmp_path, monkeypatch):
    """Parts are written under a temporary name, renamed into place, and all readable."""
    from capevolve._store.layout import Layout

    layout = Layout(tmp_path / "run")
    real_write = pq.write_table
    seen = []

    def spy(table, where, **kwargs):
        name = where.name if hasattr(where, "name") else str(where)
        finals = list(layout.rollouts.rglob("*.parquet"))
        seen.append((name, len(finals)))
        return real_write(table, where, **kwargs)

    monkeypatch.setattr(pq, "write_table", spy)
    writer = PartWriter(layout, "val", SEED_ID, "val__seed__k2", max_rows=3, max_age_s=60)
    rows = [_row(f"t{i}", 0, reward=i / 10) for i in range(7)]
    for n_parts, batch in enumerate((rows[:3], rows[3:6])):  # a part once 3 rows are in
        writer.add(batch)
        deadline = time.monotonic() + 5
        while len(list(layout.rollouts.rglob("*.parquet"))) <= n_parts:
            assert time.monotonic() < deadline, "no part after max_rows rows"
            time.sleep(0.01)
    writer.add(rows[6:])
    writer.close()  # the last row goes in a part of its own

    parts = sorted(layout.partition("val", SEED_ID).iterdir())
    assert [p.suffix for p in parts] == [".parquet"] * 3, parts
    assert all(p.name.startswith("val__seed__k2-") for p in parts)
    assert len(seen) == 3
    for index, (name, n_finals) in enumerate(seen):
        assert name.endswith(".tmp") and not name.endswith(".parquet"), name
        assert n_finals == index  # the part was not visible while it was being written
    read = [r for p in parts for r in pq.read_table(p).to_pylist()]
    assert [(r["task_id"], r["reward"]) for r in read] == [(r["task_id"], r["reward"])
                                                            for r in rows]
    assert writer.rows_written == 7


def test_heavy_rows_go_to_a_part_once_they_reach_max_bytes(tmp_path):
    """The rows held for the next part are bounded in bytes too: rows of 40 KB each
    reach a part after about max_bytes, long before max_rows or max_age_s."""
    from capevolve._store.layout import Layout

    layout = Layout(tmp_path / "run")
    writer = PartWriter(layout, "val", SEED_ID, "val__seed__k2", max_rows=10_000,
                        max_age_s=60, max_bytes=200_000)
    try:
        deadline = time.monotonic() + 10
        for i in range(6):  # 6 x 40 KB, one at a time: past 200 KB after the fifth row
            writer.add([{**_row(f"t{i}", 0), "feedback": "x" * 40_000}])
            while writer.backlog:
                assert time.monotonic() < deadline
                time.sleep(0.01)
            if i == 4:
                while not list(layout.rollouts.rglob("*.parquet")):
                    assert time.monotonic() < deadline, "no part after max_bytes of rows"
                    time.sleep(0.01)
        assert writer._pending_bytes < 200_000
    finally:
        writer.close()
    parts = sorted(layout.partition("val", SEED_ID).iterdir())
    read = [r["task_id"] for p in parts for r in pq.read_table(p).to_pylist()]
    assert read == [f"t{i}" for i in range(6)] and len(parts) >= 2


def test_write_part_leaves_no_temp_file(tmp_path):
    """write_part leaves exactly the final .parquet, readable, and no .tmp beside it."""
    final = tmp_path / "split=val" / "candidate=seed" / "e-x-00000.parquet"
    write_part([_row("a", 0), _row("a", 1)], final)
    assert [p.name for p in final.parent.iterdir()] == [final.name]
    assert pq.read_table(final).num_rows == 2


def test_buffered_rows_reach_disk_after_max_age_on_an_empty_add(tmp_path):
    """A lone buffered row is written once max_age_s passed and add([]) is called."""
    from capevolve._store.layout import Layout

    layout = Layout(tmp_path / "run")
    writer = PartWriter(layout, "val", SEED_ID, "val__seed__k2", max_rows=1000, max_age_s=0.2)
    try:
        writer.add([_row("a", 0)])
        time.sleep(0.3)
        writer.add([])  # what the dispatcher does on every drain, rows or not
        deadline = time.monotonic() + 5
        while not list(layout.rollouts.rglob("*.parquet")) and time.monotonic() < deadline:
            time.sleep(0.01)
        parts = list(layout.rollouts.rglob("*.parquet"))
        assert len(parts) == 1, "the buffered row did not reach the disk"
        assert pq.read_table(parts[0]).to_pylist()[0]["task_id"] == "a"
    finally:
        writer.close()
    assert len(list(layout.rollouts.rglob("*.parquet"))) == 1  # close had nothing left


@pytest.mark.slow
def test_finished_rows_reach_disk_while_a_straggler_runs(tmp_path, monkeypatch):
    """Through the engine, finished rows are on disk within max_age_s while a slow unit runs."""
    _small_writer(monkeypatch, max_age_s=0.3)
    fast = [f"f{i}" for i in range(6)]
    project = _ids_project(tmp_path / "p", ["held2"], trials=1,
                           extra_tasks=[{"id": "slow", "sleep": 2.5}] + [{"id": f} for f in fast])
    run = create_run(project, tmp_path / "run")
    result = {}
    thread = threading.Thread(target=lambda: result.update(evaluate(run, SEED_ID, "train")))
    thread.start()
    try:
        seen = []
        while thread.is_alive() and not seen:
            seen = _parts(run, "train")
            time.sleep(0.02)
        assert seen, "no part reached the disk before the evaluation finished"
        assert {t for t, _ in _raw_units(run, "train")} <= set(fast)
    finally:
        thread.join(30)
    assert result["status"] == EvalStatus.COMPLETE and result["n_rows"] == 7


# -- truncated parts ------------------------------------------------------------------------

@pytest.fixture
def multipart_run(tmp_path, monkeypatch):
    """A complete val evaluation (10 tasks x 2 trials) stored as at least four parts (as
    the writer leaves them: compaction at completion is off here)."""
    _small_writer(monkeypatch, max_rows=5, max_age_s=60)
    monkeypatch.setattr(compact, "compact_completed", lambda run, record: None)
    project = _ids_project(tmp_path / "p", [f"v{i}" for i in range(10)], sleep=0.01,
                           concurrency=1)
    run = create_run(project, tmp_path / "run")
    record = evaluate(run, SEED_ID, "val")
    assert record["status"] == EvalStatus.COMPLETE and record["units_run"] == 20
    parts = _parts(run)
    sizes = [pq.read_metadata(p).num_rows for p in parts]
    assert sum(sizes) == 20 and len(parts) >= 4 and all(0 < n <= 8 for n in sizes), sizes
    return run, record


def _truncate(part):
    """Cut a part to half its size; returns the (task, trial) units it held."""
    units = {(r["task_id"], r["trial"]) for r in pq.read_table(part).to_pylist()}
    data = part.read_bytes()
    part.write_bytes(data[: len(data) // 2])
    return units


@pytest.mark.slow
def test_truncated_part_is_quarantined_and_the_view_still_works(multipart_run):
    """quarantine_bad_parts moves a truncated part to quarantine/; the view reads the rest."""
    run, record = multipart_run
    victim = _parts(run)[1]
    lost = _truncate(victim)
    moved = quarantine_bad_parts(run.layout)
    target = run.layout.quarantine() / victim.relative_to(run.layout.rollouts)
    assert moved == [target] and target.is_file() and not victim.exists()
    store = RolloutStore(run.layout)
    assert store.query("SELECT count(*) FROM rollouts")[1] == [(20 - len(lost),)]
    all_units = {(t, k) for t in run.splits.ids("val") for k in range(2)}
    assert eval_rows(store.layout, record["eval_id"]).done_units() == all_units - lost
    assert quarantine_bad_parts(run.layout) == []  # the good parts stay


@pytest.mark.slow
def test_resume_after_quarantine_reruns_exactly_the_lost_units(multipart_run):
    """An interrupted evaluation with a truncated part re-runs exactly that part's units."""
    run, record = multipart_run
    lost = _truncate(_parts(run)[2])
    path = run.layout.eval_json(record["eval_id"])
    jsonfiles.write_atomic(path, {**jsonfiles.read(path), "status": EvalStatus.RUNNING})
    again = evaluate(run, SEED_ID, "val")
    assert again["units_run"] == len(lost) > 0
    assert again["status"] == EvalStatus.COMPLETE and again["n_rows"] == 20
    assert len(list(run.layout.quarantine().rglob("*.parquet"))) == 1
    units = _raw_units(run)
    assert len(units) == len(set(units)) == 20
    assert task_means_of(run, again) == task_means_of(run, record) != {}


@pytest.mark.slow
def test_evaluate_reruns_units_lost_from_a_complete_evaluation(multipart_run):
    """Evaluating again after a part of a complete evaluation was truncated re-runs its units."""
    run, record = multipart_run
    lost = _truncate(_parts(run)[0])
    again = evaluate(run, SEED_ID, "val")
    assert again["units_run"] == len(lost) > 0
    assert again["status"] == EvalStatus.COMPLETE and again["n_rows"] == 20
    units = _raw_units(run)
    assert len(units) == len(set(units)) == 20
    assert len(list(run.layout.quarantine().rglob("*.parquet"))) == 1
    assert task_means_of(run, again) == task_means_of(run, record) != {}


@pytest.mark.slow
def test_unreadable_part_is_a_store_error(multipart_run):
    """Querying while a truncated part is in place raises StoreError, not a raw duckdb error."""
    run, _ = multipart_run
    _truncate(_parts(run)[3])
    with pytest.raises(StoreError) as caught:
        RolloutStore(run.layout).query("SELECT count(*) FROM rollouts")
    assert "\n" not in str(caught.value)


# -- the deduplicated view ------------------------------------------------------------------

@pytest.mark.slow
def test_a_unit_written_twice_is_counted_once(tmp_path):
    """Two parts holding the same (eval, task, trial) count once; the first finished wins."""
    project = _ids_project(tmp_path / "p", [f"v{i}" for i in range(4)])
    run = create_run(project, tmp_path / "run")
    record = evaluate(run, SEED_ID, "val")
    store = RolloutStore(run.layout)
    eval_id = record["eval_id"]
    before = task_rows(store.layout, eval_id).rewards()
    rows = [r for p in _parts(run) for r in pq.read_table(p).to_pylist()]
    assert len(rows) == 8

    late = [{**r, "reward": 1.0 - r["reward"],
             "finished_at": r["finished_at"] + dt.timedelta(hours=1)} for r in rows]
    write_part(late, run.layout.partition("val", SEED_ID) / f"{eval_id}-late0000-00000.parquet")
    assert len(_raw_units(run)) == 16
    assert store.query("SELECT count(*) FROM rollouts")[1] == [(8,)]
    assert store.query("SELECT count(*) FROM rollouts", eval_id)[1] == [(8,)]
    assert len(eval_rows(store.layout, eval_id).units) == 8
    assert task_rows(store.layout, eval_id).rewards() == before
    assert eval_rows(store.layout, eval_id).done_units() == {(r["task_id"], r["trial"])
                                                             for r in rows}

    early = rows[0]
    flipped = {**early, "reward": 1.0 - early["reward"],
               "finished_at": early["finished_at"] - dt.timedelta(hours=1)}
    write_part([flipped], run.layout.partition("val", SEED_ID)
               / f"{eval_id}-early000-00000.parquet")
    _, got = store.query(f"SELECT reward FROM rollouts WHERE task_id = '{early['task_id']}' "
                         f"AND trial = {early['trial']}")
    assert got == [(flipped["reward"],)]
    assert store.query("SELECT count(*) FROM rollouts")[1] == [(8,)]


# -- empty runs and errors ------------------------------------------------------------------

def test_an_empty_run_can_be_queried(tmp_path):
    """A run without any Parquet answers count 0, empty outcomes, and typed columns."""
    run = create_run(make_project(tmp_path / "p", 12), tmp_path / "run")
    assert not list(run.layout.rollouts.rglob("*.parquet"))
    store = RolloutStore(run.layout)
    for eval_id in (None, "val__seed__k2"):
        assert store.query("SELECT count(*) FROM rollouts", eval_id)[1] == [(0,)]
    names, rows = store.query("SELECT task_id, reward FROM rollouts WHERE split = 'val' "
                              "AND reward < 1 AND cost_usd IS NULL")
    assert names == ["task_id", "reward"] and rows == []
    assert eval_rows(store.layout, "val__seed__k2").done_units() == set()
    assert task_rows(store.layout, "val__seed__k2").rewards() == {}
    run.layout.rollouts.rmdir()  # no rollouts folder at all
    assert store.query("SELECT count(*) FROM rollouts")[1] == [(0,)]


@pytest.mark.slow
@pytest.mark.parametrize("sql", [
    "SELEC count(*) FROM rollouts",
    "SELECT no_such_column FROM rollouts",
    "SELECT * FROM no_such_table",
    "SELECT task_id,\n  count(*)\nFROM rollouts\nGROUP BY nothing_here",
])
@pytest.mark.parametrize("with_data", [False, True], ids=["empty", "with-data"])
def test_bad_sql_is_a_one_line_store_error(tmp_path, sql, with_data):
    """Bad SQL raises StoreError whose message is a single line."""
    project = _ids_project(tmp_path / "p", ["v0", "v1"], trials=1)
    run = create_run(project, tmp_path / "run")
    if with_data:
        evaluate(run, SEED_ID, "val")
    with pytest.raises(StoreError) as caught:
        RolloutStore(run.layout).query(sql)
    message = str(caught.value)
    assert message.startswith("query failed") and "\n" not in message and message.strip()
