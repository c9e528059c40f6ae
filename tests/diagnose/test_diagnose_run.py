"""diagnose() over a real run dir: the read of the chosen evaluation, the file, eval choice,
test refusal, determinism, gold leakage, trajectories and the suggested blast radius."""

from __future__ import annotations

import random

import pytest
from diagnose.diag_support import READ_CALLS, WRITE_CALLS, make_run, write_rows

from capevolve._loop.evaluate import evaluate
from capevolve.diagnose import DiagnoseOptions, diagnose, diagnosis_path
from capevolve.diagnose.source import load_trials
from capevolve.errors import CandidateError, ConfigError, TestSealError


def _specs(run, n: int = 6) -> list[dict]:
    ids = run.splits.val[:n]
    specs = [{"task_id": ids[0], "reward": 1.0, "feedback": "fine", "tool_calls": WRITE_CALLS},
             {"task_id": ids[1], "reward": 1.0, "feedback": "fine", "tool_calls": READ_CALLS}]
    specs += [{"task_id": t, "reward": 0.0, "feedback": f"Check: did not confirm the change {i}",
               "tool_calls": WRITE_CALLS} for i, t in enumerate(ids[2:4])]
    specs += [{"task_id": t, "reward": 0.5, "feedback": "Check: refund amount off by 3",
               "tool_calls": READ_CALLS} for t in ids[4:n]]
    return specs


def test_diagnose_writes_the_diagnosis_file_and_returns_it(tmp_path):
    """diagnoses/<split>__<tag>.json holds exactly what diagnose returned."""
    import json

    run = make_run(tmp_path)
    write_rows(run, _specs(run))
    result = diagnose(run, DiagnoseOptions("val", "seed"))
    path = diagnosis_path(run, "val", "seed")
    assert path.name == "val__seed.json" and json.loads(path.read_text()) == result
    assert result["failing_total"] == 4 and len(result["clusters"]) == 2
    assert result["kept_good"] == sorted(run.splits.val[:2])
    assert set(result["reflective_dataset"][0]) >= {
        "task_id", "Inputs", "Generated Outputs", "Feedback", "Trajectory", "kind",
        "narrated_without_action"}


def test_output_is_byte_identical_run_to_run_and_independent_of_row_order(tmp_path):
    """Same stored rows (in any part order) give the same bytes."""
    run = make_run(tmp_path / "a")
    specs = _specs(run)
    write_rows(run, specs)
    diagnose(run, DiagnoseOptions("val", "seed"))
    first = diagnosis_path(run, "val", "seed").read_bytes()
    diagnose(run, DiagnoseOptions("val", "seed"))
    assert diagnosis_path(run, "val", "seed").read_bytes() == first
    other = make_run(tmp_path / "b")
    shuffled = specs[:]
    random.Random(3).shuffle(shuffled)
    write_rows(other, shuffled[:3], part=0)
    write_rows(other, shuffled[3:], part=1)
    again = diagnose(other, DiagnoseOptions("val", "seed"))
    assert [c["signature"] for c in again["clusters"]] == \
        [c["signature"] for c in diagnose(run, DiagnoseOptions("val", "seed"))["clusters"]]
    def text(p):
        return p.read_text().replace(str(other.root), "R").replace(str(run.root), "R")
    assert text(diagnosis_path(other, "val", "seed")) == text(diagnosis_path(run, "val", "seed"))


def test_the_test_split_is_refused(tmp_path):
    """Diagnosing test raises TestSealError before reading anything."""
    run = make_run(tmp_path)
    with pytest.raises(TestSealError):
        diagnose(run, DiagnoseOptions("test", "seed"))


def test_unknown_candidate_or_no_rollouts_is_a_user_error(tmp_path):
    """An unknown tag, or a candidate never evaluated on the split, is CandidateError."""
    run = make_run(tmp_path)
    with pytest.raises(CandidateError):
        diagnose(run, DiagnoseOptions("val", "nope"))
    with pytest.raises(CandidateError):
        diagnose(run, DiagnoseOptions("val", "seed"))


def test_the_evaluation_with_the_most_rows_is_read(tmp_path):
    """Of k1 and k2 evaluations of one candidate, the one with more rows wins."""
    run = make_run(tmp_path)
    task = run.splits.val[0]
    write_rows(run, [{"task_id": task, "reward": 0.0, "feedback": "x"}],
               eval_id="val__seed__k1")
    write_rows(run, [{"task_id": task, "trial": i, "reward": 1.0, "feedback": "y"}
                     for i in range(2)], eval_id="val__seed__k2")
    trials = load_trials(run, "val", "seed")
    assert {t.eval_id for t in trials} == {"val__seed__k2"} and len(trials) == 2


def test_the_pick_and_the_read_are_one_connection_over_the_candidates_parts(
        tmp_path, monkeypatch):
    """The evaluation is picked and its rows read by one statement on one connection that
    lists the candidate's own parts only: another candidate's part (with more rows, which
    would win a pick over the whole run) is never listed, and the chosen evaluation's rows
    are the ones read."""
    from capevolve._store.rollouts import query

    run = make_run(tmp_path)
    task = run.splits.val[0]
    write_rows(run, [{"task_id": task, "reward": 0.0, "feedback": "x"}],
               eval_id="val__seed__k1")
    write_rows(run, [{"task_id": task, "trial": i, "reward": 0.0, "feedback": "y"}
                     for i in range(2)], eval_id="val__seed__k2")
    write_rows(run, [{"task_id": task, "trial": i, "reward": 0.0, "feedback": "z"}
                     for i in range(5)], candidate="other")
    listed: list[list[str]] = []
    connections: list[object] = []
    real_parts, real_connect = query.candidate_part_files, query.RolloutStore.connect

    def spy_parts(layout, candidate_id):
        parts = real_parts(layout, candidate_id)
        listed.append([p.name for p in parts])
        return parts

    def spy_connect(self, *args, **kwargs):
        connections.append(kwargs)
        return real_connect(self, *args, **kwargs)

    monkeypatch.setattr(query, "candidate_part_files", spy_parts)
    monkeypatch.setattr(query.RolloutStore, "connect", spy_connect)
    trials = load_trials(run, "val", "seed")
    assert [t.feedback for t in trials] == ["y", "y"]
    assert [c.get("candidate_id") for c in connections] == ["seed"]  # one connection
    assert listed == [["val__seed__k1-x-00000.parquet", "val__seed__k2-x-00000.parquet"]]


@pytest.mark.slow
def test_real_evaluation_is_diagnosed_end_to_end(tmp_path):
    """A run evaluated by the local engine diagnoses without error; counts add up."""
    run = make_run(tmp_path, 40)
    record = evaluate(run, "seed", "val", n_trials=2)
    result = diagnose(run, DiagnoseOptions("val", "seed"))
    failing = sum(1 for e in result["reflective_dataset"])
    assert failing == result["failing_total"]
    assert record["n_rows"] == 2 * len(run.splits.val)
    assert result["gold_check"]["available"] is True


def test_gold_values_in_feedback_are_reported_and_redacted(tmp_path):
    """The flex target 'ok' quoted in feedback is flagged; --redact-gold replaces it."""
    run = make_run(tmp_path)
    a, b = run.splits.val[:2]
    write_rows(run, [{"task_id": a, "reward": 0.0, "feedback": "answer should be OK here"},
                     {"task_id": b, "reward": 0.0, "feedback": "looks broken"}])
    plain = diagnose(run, DiagnoseOptions("val", "seed"))
    leaks = {e["task_id"]: e["gold_in_feedback"] for e in plain["reflective_dataset"]}
    assert leaks == {a: True, b: False} and plain["gold_check"]["entries_with_gold"] == 1
    redacted = diagnose(run, DiagnoseOptions("val", "seed", redact_gold=True))
    feedback = {e["task_id"]: e["Feedback"] for e in redacted["reflective_dataset"]}
    assert feedback[a] == "answer should be [REDACTED] here" and "OK" not in str(redacted)


def test_redact_gold_without_targets_is_refused(tmp_path):
    """With the project gone, --redact-gold cannot work and says so."""
    import shutil

    run = make_run(tmp_path)
    write_rows(run, [{"task_id": run.splits.val[0], "reward": 0.0, "feedback": "x"}])
    shutil.rmtree(tmp_path / "project")
    result = diagnose(run, DiagnoseOptions("val", "seed"))
    assert result["gold_check"]["available"] is False
    assert result["reflective_dataset"][0]["gold_in_feedback"] is None
    with pytest.raises(ConfigError, match="redact-gold"):
        diagnose(run, DiagnoseOptions("val", "seed", redact_gold=True))


def test_without_a_trace_store_each_failing_rollout_gets_a_file_an_editor_opens(tmp_path):
    """No trajectories() hook: Trajectory is diagnoses/trajectories/<split>__<tag>/
    <task>__<trial>.json, a JSON file holding that rollout's trace and tool calls."""
    import json

    run = make_run(tmp_path)
    task, other = run.splits.val[:2]
    trace = {"messages": [{"role": "assistant", "content": "done"}]}
    write_rows(run, [{"task_id": task, "trial": 1, "reward": 0.0, "feedback": "x",
                      "tool_calls": WRITE_CALLS, "trace": trace},
                     {"task_id": other, "reward": 1.0, "feedback": "fine"}])
    entry = diagnose(run, DiagnoseOptions("val", "seed"))["reflective_dataset"][0]
    path = run.layout.diagnoses / "trajectories" / "val__seed" / f"{task}__1.json"
    assert entry["Trajectory"] == str(path)
    stored = json.loads(path.read_text())
    assert stored["trace"] == trace and stored["tool_calls"] == WRITE_CALLS
    assert stored["task_id"] == task and stored["trial"] == 1 and stored["feedback"] == "x"
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # passing: no file


def test_trajectory_files_are_safe_names_and_stale_ones_go(tmp_path):
    """A task id with a slash gets a safe, unique file name; a malformed trace column is
    kept as a string; files of rollouts no longer failing are removed."""
    import json

    from capevolve.diagnose import trajectories
    from capevolve.diagnose.source import Trial

    odd = Trial("e", "a/b", 0, 0.0, "f", None, "", None, None, "{not json", None, None, None)
    plain = Trial("e", "a_b", 0, 0.0, "f", None, "", None, None, None, None, None, None)
    assert trajectories.file_name(odd) != trajectories.file_name(plain)
    assert "/" not in trajectories.file_name(odd)
    folder = tmp_path / "t"
    trajectories.write_all(folder, [odd, plain])
    assert json.loads((folder / trajectories.file_name(odd)).read_text())["trace"] == "{not json"
    trajectories.write_all(folder, [plain])
    assert [p.name for p in folder.iterdir()] == [trajectories.file_name(plain)]


def test_trajectories_hook_of_the_project_adapter_is_used(tmp_path):
    """With --project whose adapter has trajectories(split), entries carry that path."""
    run = make_run(tmp_path)
    with open(tmp_path / "project" / "adapter.py", "a") as fh:
        fh.write("\n\ndef _traj(self, split):\n    return HERE / 'traj' / split\n\n"
                 "FlexAdapter.trajectories = _traj\n")
    write_rows(run, [{"task_id": run.splits.val[0], "reward": 0.0, "feedback": "x"}])
    import sys

    for name in [m for m in sys.modules if m.startswith("capevolve_project_")]:
        del sys.modules[name]
    result = diagnose(run, DiagnoseOptions("val", "seed", project=tmp_path / "project"))
    assert result["reflective_dataset"][0]["Trajectory"].endswith("traj/val")


def test_suggested_blast_radius_names_passing_tasks_calling_the_same_tools(tmp_path):
    """A cluster whose failures call cancel_order suggests the passing task that does."""
    run = make_run(tmp_path)
    write_rows(run, _specs(run))
    result = diagnose(run, DiagnoseOptions("val", "seed"))
    by_tools = {tuple(c["tools"]): c for c in result["clusters"]}
    ids = run.splits.val
    assert by_tools[("cancel_order",)]["suggested_blast_radius"] == [ids[0]]
    assert by_tools[("get_order",)]["suggested_blast_radius"] == [ids[1]]
    assert all(c["tag"] is None and c["blast_radius"] is None for c in result["clusters"])


@pytest.mark.slow
@pytest.mark.parametrize("frozen", [False, True])
def test_the_cyclic_collector_is_restored_and_nothing_is_left_frozen(tmp_path, frozen):
    """diagnose holds the cyclic collector off and, handing its objects to the oldest
    generation, leaves the collector as it found it: enabled, and the caller's own frozen
    objects (if any) still frozen, none of diagnose's added to them."""
    import gc

    run = make_run(tmp_path)
    write_rows(run, _specs(run))
    gc.collect()
    if frozen:
        gc.freeze()
    try:
        held = gc.get_freeze_count()
        diagnose(run, DiagnoseOptions("val", "seed"))
        # A frozen object the run lets go of leaves the count (a few, in a long-lived test
        # process); unfreezing the caller's would drop it to 0, freezing diagnose's raise it.
        assert gc.isenabled() and held - held // 1000 <= gc.get_freeze_count() <= held
        gc.disable()
        try:
            diagnose(run, DiagnoseOptions("val", "seed"))
            assert not gc.isenabled()
        finally:
            gc.enable()
    finally:
        gc.unfreeze()
