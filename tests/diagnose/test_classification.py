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


def test_patterns_follow_whether_the_trials_disagree():
    """Flaky = the trials disagree (a pass and a fail, or varying rewards); the same 0.5 on
    every trial is consistently partial, not flaky; all zero is always-failing."""
    result = build([
        trial("f", 1.0, "great", n=0), trial("f", 0.0, "wrong", n=1),
        trial("p", 0.5, "all correct, well done", n=0), trial("p", 0.5, "half", n=1),
        trial("v", 0.5, "half", n=0), trial("v", 0.0, "wrong", n=1),
        trial("z", 0.0, "wrong", n=0), trial("z", 0.0, "wrong", n=1),
        trial("g", 1.0, "fine", n=0), trial("g", 1.0, "fine", n=1)])
    assert result["flaky"] == ["f", "v"] and result["always_failing"] == ["z"]
    assert result["consistently_partial"] == ["p"]
    assert result["kept_good"] == ["g"] and result["failing_tasks"] == 4
    patterns = {e["task_id"]: e["pattern"] for e in result["reflective_dataset"]}
    assert patterns == {"f": "flaky", "p": "consistently_partial", "v": "flaky",
                        "z": "always_failing"}
    means = {e["task_id"]: e["task_mean"] for e in result["reflective_dataset"]}
    assert means == {"f": 0.5, "p": 0.5, "v": 0.25, "z": 0.0}


def test_a_single_partial_trial_and_tiny_differences():
    """One 0.5 trial is consistently partial; rewards within the tolerance do not disagree."""
    result = build([trial("one", 0.5, "half"),
                    trial("eq", 0.5, "half", n=0), trial("eq", 0.5 + 1e-12, "half", n=1)])
    assert result["consistently_partial"] == ["eq", "one"] and result["flaky"] == []


def test_errored_trials_are_missing_data_never_failures():
    """A None reward is neither failing nor passing; an all-errored task is unscored."""
    result = build([trial("a", None, "", n=0), trial("a", 1.0, "fine", n=1),
                    trial("b", None, "", n=0)])
    assert result["failing_total"] == 0 and result["reflective_dataset"] == []
    assert result["kept_good"] == ["a"] and result["unscored"] == ["b"]
    assert result["errored_trials"] == 2 and result["clusters"] == []
