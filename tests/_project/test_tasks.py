"""The streaming task API: an adapter's tasks() may be a list or any iterable; the rules
(valid items, unique ids, at least one) hold either way; an evaluation keeps only a compact
table of its split; splits and fingerprints of an existing project do not change."""

from __future__ import annotations

import gc
import hashlib
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from conftest import TOY
from fixtures.projects import make_project

from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import create_run
from capevolve._project import fingerprint
from capevolve._project.loader import load_project
from capevolve._project.tasks import iter_tasks, load_split_tasks, load_tasks, task_ids
from capevolve._project.tasktable import TaskTable
from capevolve._store.evals_means import task_means_of
from capevolve._store.splits import make_splits
from capevolve.adapter import Task
from capevolve.errors import AdapterError

TOY_SPLITS_CHECKSUM = "2e7ce4b8bc4126254c437bc7fbe3fb86c26be3832475133b3c8c6ddcc1025206"
TOY_SPLITS_FILE_SHA256 = "9d1cdb9b81e873d693f6004babeed7dc3d8ec49a826fe005f758e8a71892df8c"
"""The splits checksum and splits.json sha256 of benchmarks/toy as the list-only loader
(7a133d4) froze them."""


class _Adapter:
    """tasks() returns whatever the test sets."""

    def __init__(self, make):
        self.make = make
        self.calls = 0

    def tasks(self):
        self.calls += 1
        return self.make()


def _gen(n):
    return (Task(id=f"t{i:05d}", input=i, metadata={"cluster": i % 7}) for i in range(n))


def test_a_generator_and_a_list_give_the_same_tasks_in_the_same_order():
    """Task objects, mappings, a generator or a list: the same validated tasks."""
    as_list = load_tasks(_Adapter(lambda: list(_gen(50))))
    streamed = load_tasks(_Adapter(lambda: _gen(50)))
    mappings = load_tasks(_Adapter(lambda: ({"id": t.id, "input": t.input,
                                             "metadata": t.metadata} for t in _gen(50))))
    assert as_list == streamed == mappings and len(as_list) == 50
    assert task_ids(_Adapter(lambda: _gen(50))) == [t.id for t in as_list]


@pytest.mark.parametrize(("make", "message"), [
    (lambda: iter([Task(id="a"), {"id": ""}, Task(id="c")]), "invalid Task at position 1"),
    (lambda: (x for x in [Task(id="a"), 3]), "invalid Task at position 1"),
    (lambda: 7, "returned int, expected a list or an iterable of Task"),
    (lambda: "abc", "returned str"),
    (lambda: {"id": "a"}, "returned dict"),
    (lambda: iter(()), "returned no tasks"),
    (lambda: (Task(id=i) for i in ["a", "b", "a", "c", "b"]), "duplicate task ids: a, b"),
])
def test_a_bad_stream_is_one_adapter_error_naming_what(make, message):
    """Each broken rule is one AdapterError naming the position or the ids."""
    for load in (load_tasks, task_ids, lambda a: load_split_tasks(a, ["a"])):
        with pytest.raises(AdapterError, match=message):
            load(_Adapter(make))


def test_a_generator_that_raises_midway_names_how_far_it_got():
    """An exception while the adapter yields is an AdapterError, not a traceback."""
    def broken():
        yield Task(id="a")
        yield Task(id="b")
        raise OSError("dataset file went away")

    with pytest.raises(AdapterError, match="raised OSError after 2 tasks: dataset file"):
        list(iter_tasks(_Adapter(broken)))


def test_split_tasks_keep_only_the_split_with_exclusions_and_clusters():
    """One pass: the split's tasks as a table (adapter order), the scored ones' exclusions,
    every split task's cluster key, and the split ids the adapter no longer returns."""
    class Scoreable(_Adapter):
        def scoreable(self, task):
            return task.input % 5 != 0

    adapter = Scoreable(lambda: _gen(40))
    split = [f"t{i:05d}" for i in range(0, 40, 2)] + ["gone1", "gone0"]
    loaded = load_split_tasks(adapter, split, scored=split[:6])
    assert isinstance(loaded.table, TaskTable)
    assert list(loaded.table) == [f"t{i:05d}" for i in range(0, 40, 2)]
    assert loaded.table["t00004"] == Task(id="t00004", input=4, metadata={"cluster": 4})
    assert loaded.excluded == {"t00000": "adapter scoreable(task) returned False",
                               "t00010": "adapter scoreable(task) returned False"}
    assert loaded.clusters == {f"t{i:05d}": str(i % 7) for i in range(0, 40, 2)}
    assert loaded.missing == ["gone0", "gone1"]
    assert adapter.calls == 1  # one pass (no duplicate hash to confirm)


@pytest.mark.slow
def test_loading_a_split_from_a_stream_never_holds_the_tasks_as_objects():
    """30,000 tasks with some payload: loading the split from a generator allocates a
    fraction of what the list of Task objects alone takes (the table holds their JSON)."""
    def make():
        return (Task(id=f"task-{i:06d}", input={"question": f"what is {i} + {i}?",
                                                "context": "x" * 40}, target=str(2 * i))
                for i in range(30_000))

    ids = [f"task-{i:06d}" for i in range(30_000)]
    gc.collect()
    tracemalloc.start()
    listed = list(make())
    as_list = tracemalloc.get_traced_memory()[0]
    del listed
    gc.collect()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    loaded = load_split_tasks(_Adapter(make), ids)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    assert len(loaded.table) == 30_000
    assert loaded.table.nbytes() < as_list / 3
    assert peak < as_list / 2, (peak, as_list)


def test_a_repeated_hash_is_confirmed_on_the_ids_not_taken_as_a_duplicate(monkeypatch):
    """The unique check keeps hashes only: a hash seen twice for different ids (forced
    here) is confirmed on the ids by reading the adapter again, and is not a duplicate."""
    import capevolve._project.tasks as tasks_module

    monkeypatch.setattr(tasks_module, "hash", lambda s: 1 if s in ("x", "y") else
                        len(s) * 1000 + ord(s[0]), raising=False)
    adapter = _Adapter(lambda: iter([Task(id="x"), Task(id="y"), Task(id="zz")]))
    assert [t.id for t in load_tasks(adapter)] == ["x", "y", "zz"]
    assert adapter.calls == 2  # the confirmation read
    adapter = _Adapter(lambda: iter([Task(id="x"), Task(id="y"), Task(id="x")]))
    with pytest.raises(AdapterError, match="duplicate task ids: x$"):
        load_tasks(adapter)


def test_splits_and_fingerprint_of_an_existing_project_do_not_change(tmp_path):
    """create_run on benchmarks/toy freezes the splits the list-only loader froze (the
    checksum it wrote) and the fingerprint the fingerprint module computes."""
    run = create_run(TOY, tmp_path / "run")
    project = load_project(TOY)
    adapter = project.adapter()
    expected = make_splits([t.id for t in adapter.tasks()], project.config.splits,
                           project.root)
    assert run.splits.checksum() == expected.checksum() == TOY_SPLITS_CHECKSUM
    data = (run.root / "splits.json").read_bytes()
    assert hashlib.sha256(data).hexdigest() == TOY_SPLITS_FILE_SHA256
    assert run.manifest.fingerprint == fingerprint.fingerprint(project)
    assert run.manifest.n_tasks == len(list(adapter.tasks()))


def _stream_project(root: Path, n: int, *, stream: bool) -> Path:
    project = make_project(root, n, trials=2, adapter="StreamFlexAdapter" if stream
                           else "FlexAdapter")
    with open(project / "adapter.py", "a") as fh:
        fh.write("\n\nclass StreamFlexAdapter(FlexAdapter):\n"
                 "    def tasks(self):\n"
                 "        import os\n"
                 "        if os.environ.get('CAPEVOLVE_TEST_BAD_STREAM'):\n"
                 "            return iter([Task(id='t000'), {'id': 5}])\n"
                 "        return (t for t in super().tasks())\n")
    return project


@pytest.mark.slow
def test_an_evaluation_of_a_streaming_adapter_stores_what_the_list_one_does(tmp_path):
    """Same tasks as a generator or as a list: the same splits, the same rows."""
    runs = {}
    for stream in (False, True):
        project = _stream_project(tmp_path / f"p{stream}", 24, stream=stream)
        run = create_run(project, tmp_path / f"run{stream}")
        record = evaluate(run, "seed", "val", engine=None)
        runs[stream] = (run, record)
    (list_run, a), (stream_run, b) = runs[False], runs[True]
    assert list_run.splits.payload() == stream_run.splits.payload()
    assert a["status"] == b["status"] == "complete" and a["n_rows"] == b["n_rows"] == 12
    assert (a["mean"], a["stderr"]) == (b["mean"], b["stderr"])
    assert task_means_of(list_run, a) == task_means_of(stream_run, b) != {}


@pytest.mark.slow
def test_cli_evaluate_names_a_bad_streamed_task_with_exit_2(tmp_path):
    """A stream that yields a bad item at evaluate time: one error line, exit 2, no
    traceback, and no rollout stored."""
    project = _stream_project(tmp_path / "p", 12, stream=True)
    run = create_run(project, tmp_path / "run")
    env = {**__import__("os").environ, "CAPEVOLVE_TEST_BAD_STREAM": "1",
           "CAPEVOLVE_PROGRESS": "off"}
    cli = str(Path(sys.executable).with_name("capevolve"))
    done = subprocess.run([cli, "evaluate", "--run-dir",
                           str(run.root), "--candidate", "seed", "--split", "val",
                           "--engine", "local"], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert lines == ["error: adapter: tasks() returned an invalid Task at position 1: id: "
                     "Input should be a valid string"], done.stderr
    assert "Traceback" not in done.stderr
    assert not list((run.root / "rollouts").rglob("*.parquet"))
