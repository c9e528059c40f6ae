"""The gate's grouped read: one query per evaluation, never a stale cached answer.

``task_rows`` caches an evaluation's grouped rows per process, keyed by the identity of its
parts; a part added after a read (a resume, a retry, or a row of a trial the record never
ran) must change the answer at once, or the gate rule would judge rows that are gone or
miss rows that are there. A task id with a quote and ids whose SQL and Python orders could
differ are read and sorted as Python sorts them.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from fixtures.projects import make_project

from capevolve._loop.evaluate import evaluate
from capevolve._loop.gate_evals import refusal
from capevolve._loop.run import create_run
from capevolve._store.evals import load_eval
from capevolve._store.rollouts.query import part_files
from capevolve._store.rollouts.task_rows import task_rows
from capevolve._store.rollouts.writer import write_part

IDS = ["t'quote", "T-upper", "t_b", "t-a", "t\u00e9", "t~", *(f"t{i:02d}" for i in range(30))]


def test_a_part_added_after_a_read_changes_the_answer_and_the_rule_sees_it(tmp_path):
    project = make_project(tmp_path / "p", [{"id": t} for t in IDS], trials=2,
                           splits="{train: 0.05, val: 0.9, test: 0.05, seed: 0}")
    run = create_run(project, tmp_path / "run")
    record = evaluate(run, "seed", "val")
    eval_id = record["eval_id"]
    first = task_rows(run.layout, eval_id)
    assert first.tasks == tuple(sorted(run.splits.val)) and first.trials == {0, 1}
    assert "t'quote" in first.tasks or "T-upper" in first.tasks
    assert refusal(run, load_eval(run, eval_id)) is None

    part = part_files(run.layout, eval_id)[0]
    table = pq.read_table(part)
    extra = table.slice(0, 1)
    extra = extra.set_column(extra.schema.get_field_index("trial"), "trial",
                             pa.array([7], pa.int32()))
    forged = write_part(extra, part.with_name(f"{eval_id}-zzzz-00000.parquet"))
    run.record_part(forged, 1)

    second = task_rows(run.layout, eval_id)
    assert second.trials == {0, 1, 7} and second is not first
    why = refusal(run, load_eval(run, eval_id))
    assert why is not None and "trial(s) [7]" in why
    assert pc.sum(pa.array(second.offsets[1:] - second.offsets[:-1])).as_py() >= \
        pc.sum(pa.array(first.offsets[1:] - first.offsets[:-1])).as_py()
