"""Tasks the adapter cannot score are excluded: never run, never in the denominator."""

import pytest
from fixtures.projects import make_project

from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import create_run
from capevolve._store.rollouts.query import RolloutStore
from capevolve.stats import mean_and_se


def _tasks(n: int) -> list[dict]:
    return [{"id": f"t{i:03d}", **({"unlabeled": "empty" if i % 2 else "n/a"}
                                   if i % 3 == 0 else {})} for i in range(n)]


def test_excluded_tasks_are_in_neither_numerator_nor_denominator(tmp_path):
    project = make_project(tmp_path / "p", _tasks(60), adapter="ScoreableFlexAdapter",
                           trials=3, quality=0.5)
    run = create_run(project, tmp_path / "run")
    record = evaluate(run, "seed", "val")
    val = run.splits.ids("val")
    unlabeled = {t["id"] for t in _tasks(60) if "unlabeled" in t} & set(val)
    assert unlabeled, "the split must hold excluded tasks for this test to mean anything"
    assert record["excluded"] == len(unlabeled)
    assert set(record["excluded_tasks"]) == unlabeled
    assert sum(record["excluded_reasons"].values()) == len(unlabeled)
    assert set(record["excluded_reasons"]) <= {"no label (empty)", "no label (n/a)"}
    assert record["scored"] == record["n_tasks"] == len(val) - len(unlabeled)
    assert record["coverage"] == 1.0 and record["status"] == "complete"
    _, rows = RolloutStore(run.layout).query(
        "SELECT task_id, avg(reward) FROM rollouts WHERE eval_id = 'val__seed__k3' "
        "GROUP BY task_id")
    assert not {r[0] for r in rows} & unlabeled  # never run: no row, no 0
    mean, _ = mean_and_se([r[1] for r in rows])
    assert record["mean"] == pytest.approx(mean)
    assert record["n_rows"] == 3 * record["scored"]
    assert set(record["run_means"]) == {"0", "1", "2"}
    assert record["stdev"] is not None and record["stdev"] >= 0


def test_a_hook_returning_a_non_bool_is_an_adapter_error(tmp_path):
    from capevolve._project.scoreable import exclusions
    from capevolve.adapter import Task
    from capevolve.errors import AdapterError

    class Bad:
        def scoreable(self, task):
            return "yes"

    with pytest.raises(AdapterError, match="scoreable\\(\\) returned str on task 'x'"):
        exclusions(Bad(), [Task(id="x")])


@pytest.mark.slow
def test_the_gate_coverage_leaves_excluded_tasks_out_of_its_denominator(tmp_path):
    from fixtures.projects import make_candidate

    from capevolve._loop.decide import gate_candidate

    project = make_project(tmp_path / "p", _tasks(60), adapter="ScoreableFlexAdapter",
                           trials=2, quality=0.5)
    run = create_run(project, tmp_path / "run")
    evaluate(run, "seed", "val")
    record = evaluate(run, make_candidate(tmp_path / "c", 0.9), "val")
    assert record["excluded"] > 0
    verdict = gate_candidate(run, "cand_001")
    assert verdict["coverage"] == 1.0  # every scoreable val task scored on both sides
    from capevolve.report.markdown import render

    n = record["scored"]
    row = next(line for line in render(run).splitlines() if "| val__cand_001__k2 |" in line)
    assert f"| scored {n}/{n} / excluded {record['excluded']}" in row  # excluded: in no denominator
