"""Failure kinds and task patterns: partial, near-miss, communication, flaky, always-failing."""

from __future__ import annotations

from diagnose.diag_support import build, trial


def _kinds(result: dict) -> dict[str, str]:
    return {f"{e['task_id']}#{e['trial']}": e["kind"] for e in result["reflective_dataset"]}


def test_partial_and_near_miss_scores_are_failures_of_their_kind():
    """0.5 is partial, 0.8 a near miss, 0 a zero; 1.0 is no failure."""
    result = build([trial("a", 0.5, "half the items"), trial("b", 0.8, "almost the total"),
                    trial("c", 0.0, "nothing right"), trial("d", 1.0, "fine")])
    assert _kinds(result) == {"a#0": "partial", "b#0": "near_miss", "c#0": "zero"}
    assert result["kept_good"] == ["d"] and result["failing_total"] == 3


def test_communication_omissions_are_detected_from_feedback_or_parts():
    """'did not inform the user' and a short 'communication' part are communication."""
    result = build([
        trial("a", 0.0, "Did not inform the user about the change fee"),
        trial("b", 0.6, "ok", score_parts={"action": 1.0, "communication": 0.2}),
        trial("c", 0.6, "ok", score_parts={"action": 0.2, "communication": 1.0})])
    assert _kinds(result) == {"a#0": "communication", "b#0": "communication",
                              "c#0": "partial"}


def test_flaky_and_always_failing_follow_the_graded_mean():
    """Mean 0 is always-failing; 0 < mean < 1 is flaky, whatever one trial's feedback says."""
    result = build([
        trial("f", 1.0, "great", n=0), trial("f", 0.0, "wrong", n=1),
        trial("p", 0.5, "all correct, well done", n=0), trial("p", 0.5, "half", n=1),
        trial("z", 0.0, "wrong", n=0), trial("z", 0.0, "wrong", n=1),
        trial("g", 1.0, "fine", n=0), trial("g", 1.0, "fine", n=1)])
    assert result["flaky"] == ["f", "p"] and result["always_failing"] == ["z"]
    assert result["kept_good"] == ["g"] and result["failing_tasks"] == 3
    means = {e["task_id"]: e["task_mean"] for e in result["reflective_dataset"]}
    assert means == {"f": 0.5, "p": 0.5, "z": 0.0}


def test_errored_trials_are_missing_data_never_failures():
    """A None reward is neither failing nor passing; an all-errored task is unscored."""
    result = build([trial("a", None, "", n=0), trial("a", 1.0, "fine", n=1),
                    trial("b", None, "", n=0)])
    assert result["failing_total"] == 0 and result["reflective_dataset"] == []
    assert result["kept_good"] == ["a"] and result["unscored"] == ["b"]
    assert result["errored_trials"] == 2 and result["clusters"] == []
