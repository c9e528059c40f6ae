"""The report's val intervals use the df of their SE, and a reused test split is flagged
in report.html and the report's JSON."""

from __future__ import annotations

import pytest
from fixtures.projects import make_project
from scipy import stats

from capevolve._loop.evaluate import evaluate
from capevolve._loop.finalize import finalize
from capevolve._loop.run import create_run
from capevolve._store.evals import latest_complete_eval
from capevolve._store.evals_means import task_means_of
from capevolve.kinds import Split
from capevolve.report.data import report_data
from capevolve.report.html.page import render_html


@pytest.mark.slow
def test_a_clustered_val_mean_has_a_t_interval_at_clusters_minus_one_df(tmp_path):
    """Val tasks in 3 clusters: the CI is mean +- t(0.975, G-1) x the CR1 SE (not n-1,
    which would be too narrow), and statsmodels' CR1 SE agrees."""
    tasks = [{"id": f"t{i:02d}", "cluster": f"g{i % 3}"} for i in range(24)]
    run = create_run(make_project(tmp_path / "p", tasks, trials=2), tmp_path / "run")
    evaluate(run, "seed", "val")
    record = latest_complete_eval(run, "seed", Split.VAL, n_trials=2)
    assert record is not None and record.stderr_clustered is not None
    means = task_means_of(run, record)
    groups = {record.clusters[t] for t in means}
    lo, hi = _val_ci(run)
    half = stats.t.ppf(0.975, len(groups) - 1) * record.stderr_clustered
    assert lo == pytest.approx(record.mean - half, rel=1e-12)
    assert hi == pytest.approx(record.mean + half, rel=1e-12)
    sm = pytest.importorskip("statsmodels.api")
    ids = sorted(means)
    fit = sm.OLS([means[t] for t in ids], [[1.0]] * len(ids)).fit(
        cov_type="cluster", cov_kwds={"groups": [sorted(groups).index(record.clusters[t])
                                                 for t in ids]})
    assert record.stderr_clustered == pytest.approx(float(fit.bse[0]), rel=1e-9)


def _val_ci(run):
    from capevolve.report.data import _val_evals

    return _val_evals(run, 2)["seed"]["ci95"]


@pytest.mark.slow
def test_a_reused_test_split_is_flagged_in_the_json_and_the_page(tmp_path):
    """The second run of a project finalizing the same test ids says "test reused" in the
    report's data and in report.html; the first says the test was fresh."""
    project = make_project(tmp_path / "p", 12)
    pages = []
    for name in ("one", "two"):
        run = create_run(project, tmp_path / name)
        evaluate(run, "seed", "val")
        finalize(run, spend_test_ids=True)
        data = report_data(run)
        pages.append((data["final"], render_html(data)))
    (first, first_page), (second, second_page) = pages
    assert first["test_reused"] is False and "test fresh" in first["test_reuse"]["message"]
    assert second["test_reused"] is True
    assert second["test_reuse"]["message"].startswith("test reused: 1 earlier")
    assert "test reused: 1 earlier" in second_page and 'class="warn"' in second_page
    assert "test reused" not in first_page
