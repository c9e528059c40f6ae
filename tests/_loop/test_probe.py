"""probe: an informational subset evaluation that counts flips of the targeted failing
datapoints from stored rows; it can kill a hypothesis, never accept one."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from cli.cli_support import invoke, one_json, user_error
from fixtures.projects import make_candidate, make_project

from capevolve._loop.decide import accept, gate_candidate
from capevolve._loop.no_change import no_change
from capevolve._loop.probe import probe
from capevolve._loop.run import start_run
from capevolve._store.rundir import RunDir
from capevolve.diagnose import census
from capevolve.errors import ConfigError, GateError


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    root = tmp_path_factory.mktemp("probe")
    project = make_project(root / "p", 40, trials=2, quality=0.4)
    run = RunDir.open(start_run(project, root / "run")["run_dir"])
    return root, run


def _rewards(run: RunDir, eval_id: str) -> dict[str, list[float]]:
    """Valid rewards per task read straight from the Parquet files (no capevolve code)."""
    out: dict[str, list[float]] = {}
    for part in sorted(run.layout.rollouts.rglob(f"{eval_id}-*.parquet")):
        for row in pq.read_table(part, columns=["task_id", "reward"]).to_pylist():
            out.setdefault(row["task_id"], [])
            if row["reward"] is not None:
                out[row["task_id"]].append(row["reward"])
    return out


@pytest.mark.slow
def test_probe_failing_counts_flips_from_the_rows_and_is_never_gateable(base, tmp_path):
    """A candidate that fixes two of the best's failing tasks: the probe runs only the
    failing tasks, its numbers match the rows, and no gate or accept can use it."""
    _, run = base
    best_rows = _rewards(run, "val__seed__k2")
    failing = sorted(t for t, r in best_rows.items() if any(v < 1.0 for v in r))
    assert len(failing) >= 3
    fixed = failing[:2]
    cand = make_candidate(tmp_path / "c", 0.4, {t: 1.0 for t in fixed})
    spent = run.spent.metric_calls
    result = probe(run, cand, failing=True)
    assert result["targets"] == failing and result["targeted_failing"] == failing
    assert result["flipped"] == fixed and result["suggestion"] is None
    assert result["purpose"] == "probe" and result["gateable"] is False
    assert result["units_run"] == 2 * len(failing)
    assert run.spent.metric_calls == spent + 2 * len(failing)
    rows = _rewards(run, result["eval_id"])
    assert sorted(rows) == failing  # only the targets ran
    flipped = sorted(t for t in failing if all(v >= 1.0 for v in rows[t]))
    assert result["flipped"] == flipped
    assert result["still_failing"] == sorted(set(failing) - set(flipped))
    means = [sum(rows[t]) / len(rows[t]) for t in failing]
    assert result["candidate_mean"] == pytest.approx(sum(means) / len(means))
    with pytest.raises(GateError, match="no complete evaluation on the full val split"):
        gate_candidate(run, result["candidate_id"])
    with pytest.raises(GateError, match="accept refused"):
        accept(run, result["candidate_id"])
    assert run.best_id == "seed"


@pytest.mark.slow
def test_a_probe_that_flips_nothing_suggests_a_no_change(base, tmp_path):
    """The hypothesis is dead: the suggestion is no_change, with the probe as the reason."""
    _, run = base
    best_rows = _rewards(run, "val__seed__k2")
    failing = sorted(t for t, r in best_rows.items() if any(v < 1.0 for v in r))
    passing = sorted(set(best_rows) - set(failing))
    same = make_candidate(tmp_path / "same", 0.4, {passing[0]: 1.0})  # fixes no target
    result = probe(run, same, tasks=failing[:3])
    assert result["flipped"] == [] and result["suggestion"] == "no_change"
    assert "hypothesis is dead" in result["reasoning"]
    recorded = no_change(run, result["reasoning"], result["candidate_id"])
    assert recorded["best_id"] == "seed"
    nothing = probe(run, same, tasks=passing[:2])  # no target fails on the best
    assert nothing["targeted_failing"] == [] and nothing["suggestion"] == "no_change"


def test_probe_targets_a_recorded_census_bucket(base, tmp_path):
    """--cluster takes a census bucket recorded with census check --record."""
    _, run = base
    failing = census.failing_trials(run, "val", "seed")
    first = sorted({t.task_id for t in failing})[0]
    examples = [t.unit_id for t in failing if t.task_id == first]
    doc = {"run_dir": str(run.root), "split": "val", "tag": "seed",
           "failing_total": len(failing), "described": len(failing),
           "buckets": [{"name": "probe-bucket", "description": "one task",
                        "count": len(examples), "examples": examples}]}
    path = tmp_path / "census.json"
    path.write_text(json.dumps(doc))
    one_json(invoke("census", "check", path, "--record", "--json"))
    cand = make_candidate(tmp_path / "c", 0.4, {first: 1.0})
    result = probe(run, cand, cluster="probe-bucket")
    assert result["targets"] == [first] and result["flipped"] == [first]
    assert result["targeted_by"] == "cluster probe-bucket"


@pytest.mark.parametrize(("kwargs", "error", "words"), [
    ({}, ConfigError, "exactly one of --tasks, --cluster or --failing"),
    ({"tasks": ["x"], "failing": True}, ConfigError, "got --tasks, --failing"),
    ({"cluster": "no such cluster"}, GateError, "--cluster 'no such cluster': not a recorded"),
    ({"tasks": ["nope"]}, ConfigError, "task 'nope' is not a task of this run"),
    ({"tasks": ["t000"], "split": "test"}, Exception, "test"),
])
def test_bad_probes_are_one_clear_error(base, kwargs, error, words):
    _, run = base
    with pytest.raises(error, match=words.replace("(", r"\(")):
        probe(run, "seed", **kwargs)


def test_probe_cli_prints_one_json_and_refuses_bad_input_with_exit_2(base, tmp_path):
    _, run = base
    val = list(run.splits.ids("val"))
    out = one_json(invoke("probe", "--run-dir", run.root, "--candidate", "seed", "--tasks",
                          f"{val[0]},{val[1]}", "--json"))
    assert out["targets"] == sorted(val[:2]) and out["flipped"] == []
    assert out["reference_eval"] == "val__seed__k2"
    user_error(invoke("probe", "--run-dir", run.root, "--candidate", "seed", "--tasks",
                      "nope"), "task 'nope' is not a task of this run")
    user_error(invoke("probe", "--run-dir", run.root, "--candidate", "seed"),
               "exactly one of")
