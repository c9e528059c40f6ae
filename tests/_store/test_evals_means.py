"""Per-task means beside the evaluation record: the record stays O(1) in the tasks, the
means file is checked against the record on every read, and an old record with its
means inline still reads."""

from __future__ import annotations

import json
import shutil

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from fixtures.projects import make_project

from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import create_run
from capevolve._loop.summary import summarize
from capevolve._store.evals import find_eval
from capevolve._store.evals_means import means_name, task_means_of, with_task_means
from capevolve._store.rundir import RunDir
from capevolve.errors import CapevolveError, RunDirError
from capevolve.report.data import report_data

pytestmark = pytest.mark.slow

VAL = "val__seed__k2"


@pytest.fixture
def run(tmp_path) -> RunDir:
    project = make_project(tmp_path / "p", 80, trials=2)
    run = create_run(project, tmp_path / "run")
    evaluate(run, "seed", "val")
    evaluate(run, "seed", "train")
    return run


def test_the_record_names_its_means_file_and_holds_no_mean_per_task(run):
    """The complete record carries no per-task mean, names ``<eval_id>.means.parquet``
    with its digest, and the file holds each scored task once (sorted), its mean (the
    very floats summarize computes) and its valid trial count."""
    raw = run.layout.eval_json(VAL).read_bytes()
    record = find_eval(run, VAL)
    assert record.task_means == {} and record.task_means_file is not None
    assert record.task_means_file.name == means_name(VAL)
    ids = run.splits.ids("val")
    assert not any(f'"{t}"'.encode() in raw for t in ids), "a task id in the record"
    table = pq.read_table(run.layout.evals / means_name(VAL))
    tasks = table.column("task_id").to_pylist()
    assert tasks == sorted(tasks)
    assert len(tasks) == record.n_scored == record.task_means_file.n_tasks
    want = summarize(run, VAL, tuple(ids))["task_means"]
    got = task_means_of(run, record)
    assert list(got) == list(want) and all(got[t] == want[t] for t in want)
    assert set(table.column("n").to_pylist()) <= {1, 2} and max(table.column("n").to_pylist()) == 2
    assert with_task_means(run, record)["task_means"] == got == task_means_of(run, record.to_json())


def test_the_record_does_not_grow_with_the_number_of_tasks(tmp_path):
    """A record of 20 tasks and one of 400 tasks differ by a few digits, not by a mean per
    task."""
    sizes = []
    for n in (20, 400):
        project = make_project(tmp_path / f"p{n}", n, trials=1)
        run = create_run(project, tmp_path / f"run{n}")
        evaluate(run, "seed", "val")
        sizes.append(len(run.layout.eval_json("val__seed__k1").read_bytes()))
    assert abs(sizes[1] - sizes[0]) < 120, sizes


def _rewrite_mean(path) -> None:
    """A hand edit with a real Parquet writer: one mean changed, schema and rows kept."""
    table = pq.read_table(path)
    means = table.column("mean").to_pylist()
    means[0] = 1.0 - means[0] if means[0] != 0.5 else 0.25
    pq.write_table(table.set_column(1, table.schema.field(1), pa.array(means, pa.float64())),
                   path)


def _swap(path) -> None:
    """Another evaluation's means file put in its place."""
    shutil.copy(path.with_name(means_name("train__seed__k2")), path)


def _truncate(path) -> None:
    path.write_bytes(path.read_bytes()[:-20])


def _drop_rows(path) -> None:
    table = pq.read_table(path)
    pq.write_table(table.filter(pc.not_equal(table["task_id"], table["task_id"][0])), path)


@pytest.mark.parametrize("damage", [_rewrite_mean, _swap, _truncate, _drop_rows,
                                    lambda p: p.unlink()],
                         ids=["edited", "swapped", "truncated", "row-dropped", "removed"])
def test_a_means_file_unlike_its_record_is_one_error_naming_it(run, damage):
    """Every read of the means (task_means_of, the report) refuses a means file that is
    not the one the record names: one RunDirError line naming the file."""
    path = run.layout.evals / means_name(VAL)
    damage(path)
    record = find_eval(run, VAL)  # the record itself is fine; its means are not
    for read in (lambda: task_means_of(run, record), lambda: report_data(run)):
        with pytest.raises(RunDirError) as caught:
            read()
        assert str(path) in str(caught.value) and "\n" not in str(caught.value)
        assert isinstance(caught.value, CapevolveError)


def test_a_record_naming_another_evaluations_file_is_refused(run):
    """A record edited to name the train evaluation's means file (with its digest) is
    refused by name: means are never borrowed from another evaluation."""
    path = run.layout.eval_json(VAL)
    data = json.loads(path.read_bytes())
    data["task_means_file"] = find_eval(run, "train__seed__k2").to_json()["task_means_file"]
    path.write_text(json.dumps(data))
    with pytest.raises(RunDirError, match="names means file"):
        task_means_of(run, find_eval(run, VAL))


def test_an_old_record_with_its_means_inline_still_reads(run):
    """A record written before the means file existed (means inline, no file named) reads
    as it is, in every consumer."""
    path = run.layout.eval_json(VAL)
    means = task_means_of(run, find_eval(run, VAL))
    data = json.loads(path.read_bytes())
    del data["task_means_file"]
    data["task_means"] = means
    path.write_text(json.dumps(data, indent=2))
    (run.layout.evals / means_name(VAL)).unlink()
    opened = RunDir.open(run.root)
    old = find_eval(opened, VAL)
    assert old.task_means_file is None and task_means_of(opened, old) == means
    assert report_data(opened)["heatmap"]["means"]["seed"] == means


def test_a_rerun_of_a_complete_evaluation_leaves_its_means_file_as_it_was(run):
    """Evaluating a complete evaluation again returns it without rewriting anything."""
    path = run.layout.evals / means_name(VAL)
    before = path.read_bytes(), path.stat().st_mtime_ns
    again = evaluate(run, "seed", "val")
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert task_means_of(run, again) == task_means_of(run, find_eval(run, VAL))


@pytest.mark.parametrize("ids", [
    [],
    ["only"],
    ["t\u00e9", "t\u00e9t\u00e9", "t\u65e5", "z"],  # non-ASCII, shared prefixes
    [f"task-{i:07d}" for i in range(20_000)],  # long shared prefixes, many pages
    ["a", "a\x00", "aa", "b" * 3000],  # a NUL byte, one id longer than the rest together
])
def test_a_means_file_reads_back_every_id_and_mean_exactly(tmp_path, ids):
    """The file's encodings (task ids as delta byte arrays, means and counts in a
    dictionary) give back the very ids, floats and counts written, through the reader
    every consumer uses and through DuckDB."""
    import duckdb
    import numpy as np

    from capevolve._store.evals_means import encode, read_task_means, write_task_means

    layout_run = create_run(make_project(tmp_path / "p", 4), tmp_path / "run")
    means = np.array([(i % 7) / 7 for i in range(len(ids))], dtype=np.float64)
    counts = np.array([1 + i % 3 for i in range(len(ids))], dtype=np.int64)
    ref = write_task_means(layout_run, "val__x__k1", sorted(ids), means, counts)
    assert read_task_means(layout_run, "val__x__k1", ref) == dict(
        zip(sorted(ids), means.tolist(), strict=True))
    path = layout_run.layout.evals / ref.name
    got = duckdb.sql(f"SELECT task_id, mean, n FROM read_parquet('{path}')").fetchall()
    assert got == list(zip(sorted(ids), means.tolist(), counts.tolist(), strict=True))
    assert encode(sorted(ids), means, counts) == path.read_bytes()  # deterministic
