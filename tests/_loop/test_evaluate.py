"""evaluate(): eval identity, statistics from stored rows, clustered SE, test refusal."""

import pytest
from fixtures.projects import make_candidate, make_project

from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import create_run
from capevolve._store.evals_means import task_means_of
from capevolve._store.rollouts.query import RolloutStore
from capevolve._store.rundir import RunDir
from capevolve.errors import CandidateError, TestSealError
from capevolve.stats import clustered_se, mean_and_se


def test_eval_statistics_match_a_duckdb_recomputation(tmp_path):
    """mean and SE in the eval record equal task-level numbers recomputed from Parquet."""
    project = make_project(tmp_path / "p", 40, trials=3)
    run = create_run(project, tmp_path / "run")
    record = evaluate(run, "seed", "val")
    _, rows = RolloutStore(run.layout).query(
        "SELECT task_id, avg(reward) FROM rollouts WHERE eval_id = 'val__seed__k3' "
        "AND reward IS NOT NULL GROUP BY task_id")
    mean, se = mean_and_se([r[1] for r in rows])
    assert record["mean"] == pytest.approx(mean) and record["stderr"] == pytest.approx(se)
    assert record["n_tasks"] == 10 and record["n_rows"] == 30 and record["status"] == "complete"
    assert set(record["pass_k"]) == {"1", "2", "3"}


@pytest.mark.slow
def test_same_candidate_same_split_is_one_evaluation(tmp_path):
    """Re-evaluating identical content reuses the candidate and its complete evaluation;
    another trial count is a separate evaluation."""
    project = make_project(tmp_path / "p", 20, trials=2)
    run = create_run(project, tmp_path / "run")
    first = evaluate(run, make_candidate(tmp_path / "c", 0.8), "val")
    again = evaluate(run, make_candidate(tmp_path / "c_copy", 0.8), "val")
    assert again == first and run.candidate_ids() == ["cand_001", "seed"]
    more = evaluate(run, "cand_001", "val", n_trials=4)
    assert more["eval_id"] == "val__cand_001__k4" and more["n_rows"] == 20
    assert run.spent.metric_calls == 10 + 20


def test_clustered_se_is_reported_when_tasks_carry_a_cluster(tmp_path):
    """Tasks with metadata.cluster get a cluster-robust SE in the eval record."""
    tasks = [{"id": f"t{i:02d}", "cluster": f"g{i % 3}"} for i in range(40)]
    project = make_project(tmp_path / "p", tasks, trials=2)
    run = create_run(project, tmp_path / "run")
    record = evaluate(run, "seed", "train")
    clusters = {t["id"]: t["cluster"] for t in tasks}
    assert record["stderr_clustered"] == pytest.approx(
        clustered_se(task_means_of(run, record), clusters))


def test_test_split_and_unknown_candidates_are_refused(tmp_path):
    """evaluate refuses the test split and a candidate that is neither id nor directory."""
    run = create_run(make_project(tmp_path / "p", 20), tmp_path / "run")
    with pytest.raises(TestSealError, match="finalize"):
        evaluate(run, "seed", "test")
    with pytest.raises(CandidateError, match="nope"):
        evaluate(run, tmp_path / "nope", "val")
    assert not any(run.layout.rollouts.rglob("*.parquet"))


def test_user_event_kinds_are_logged(tmp_path):
    """log_event records a registered lowercase user kind and rejects malformed ones."""
    run = create_run(make_project(tmp_path / "p", 20), tmp_path / "run")
    RunDir.register_event_kind("my_note")
    run.log_event("my_note", text="tried X")
    assert run.events("my_note")[0].data["text"] == "tried X"
    with pytest.raises(ValueError):
        run.log_event("Bad Kind")
