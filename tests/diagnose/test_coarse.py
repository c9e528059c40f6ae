"""The too-coarse split: a cluster whose units name distinct causes is split by them: any
cause once the cluster holds most of its part's failing trials, causes of two tasks or more
below that."""

from __future__ import annotations

from diagnose.diag_support import build, trial

PARTS = {"db": 1.0, "messages": 0.0}
NEVER = "messages: the reply never told the customer that the order cannot be {}."


def _told(task: str, what: str, n: int = 0) -> object:
    return trial(task, 0.5, NEVER.format(what), n=n, score_parts=PARTS)


def _other(task: str, n: int = 0) -> object:
    return trial(task, 0.5, "messages: the refund amount was not stated.", n=n,
                 score_parts=PARTS)


def _clusters(result: dict) -> dict[str, list[str]]:
    return {c["signature"]: c["tasks"] for c in result["clusters"]}


def test_a_cluster_of_most_failures_naming_two_causes_is_split_and_said():
    """One scorer template with two different objects, each from its own tasks: two
    causes, split, and the sanity line names the clusters it became."""
    trials = [_told(f"c{i}", "cancelled") for i in range(5)]
    trials += [_told(f"h{i}", "handled on this account") for i in range(4)]
    trials += [_other(f"o{i}") for i in range(3)]  # (the template is no preamble then)
    result = build(trials)
    groups = _clusters(result)
    assert sorted(map(sorted, groups.values())) == [
        ["c0", "c1", "c2", "c3", "c4"], ["h0", "h1", "h2", "h3"], ["o0", "o1", "o2"]]
    assert "cancelled told customer" in groups and "handled account told" in groups
    [note] = [s for s in result["sanity"] if "split into" in s]
    assert note.startswith("too coarse: one cluster held 9 of the 12 failing trials of its "
                           "part") and "'handled account told'" in note


def test_a_smaller_cluster_is_split_when_each_cause_spans_several_tasks():
    """Under half of its part's failures, two causes each said by two tasks or more are
    still two: split, and the sanity line says how much of its part the cluster held."""
    trials = [_told(f"c{i}", "cancelled") for i in range(3)]
    trials += [_told(f"h{i}", "handled on this account") for i in range(2)]
    trials += [_other(f"o{i}") for i in range(6)]
    result = build(trials)
    groups = _clusters(result)
    assert sorted(groups["cancelled told customer"]) == ["c0", "c1", "c2"]
    assert sorted(groups["handled account told"]) == ["h0", "h1"]
    [note] = [s for s in result["sanity"] if "split into" in s]
    assert note.startswith("too coarse: one cluster held 5 of the 11 failing trials")


def test_a_smaller_cluster_whose_words_differ_task_by_task_stays_whole():
    """The guard: under half of its part's failures, words each task says alone (an item's
    name, one task per word) are no causes: the cluster stays whole, nothing is said."""
    trials = [_told(f"t{i}", what, n) for i, what in enumerate(
        ("cancelled for the espresso machine", "cancelled for the winter jacket",
         "cancelled for the yoga mat", "cancelled for the smart thermostat"))
              for n in range(3)]  # three trials each: enough trials, one task
    trials += [_other(f"o{i}", n) for i in range(6) for n in range(3)]
    result = build(trials)
    assert ["t0", "t1", "t2", "t3"] in map(sorted, _clusters(result).values()), _clusters(result)
    assert not any("split into" in s for s in result["sanity"])


def test_one_cause_reworded_across_a_tasks_trials_is_not_split():
    """The same tasks fail the same way, worded one way on one trial and another way on
    the next: one cause, however different the residual words."""
    a = "messages: the customer was never told the time zone of the appointment slot."
    b = "messages: the appointment slot was told to the customer in eastern time."
    trials = []
    for i in range(6):
        trials += [trial(f"t{i}", 0.5, a, n=0, score_parts=PARTS),
                   trial(f"t{i}", 0.5, b, n=1, score_parts=PARTS)]
    trials += [_other("o0")]
    result = build(trials)
    assert not any("split into" in s for s in result["sanity"])
    assert max(len(tasks) for tasks in _clusters(result).values()) == 6


def test_causes_found_together_on_the_same_trials_are_still_two():
    """A task with both causes on every failing trial is no rewording: still split."""
    trials = [_told(f"c{i}", "cancelled") for i in range(4)]
    trials += [_told(f"h{i}", "handled on this account") for i in range(4)]
    both = ("messages: the reply never told the customer that the order cannot be "
            "cancelled.\nthe reply never told the customer that the order cannot be handled "
            "on this account.")
    trials += [trial("b0", 0.5, both, n=n, score_parts=PARTS) for n in range(2)]
    result = build(trials)
    assert any("split into" in s for s in result["sanity"])
    split = [tasks for sig, tasks in _clusters(result).items() if "b0" in tasks]
    assert len(split) == 2


def test_units_differing_only_in_a_tool_name_or_a_small_group_are_not_split():
    """A tool name is a site, not a cause; a residual group below the share is no cause."""
    calls = [{"name": "cancel_order", "arguments": {}}, {"name": "return_items",
                                                          "arguments": {}}]
    fb = "messages: the write (`{}`) was made without asking the customer to confirm."
    trials = [trial(f"w{i}", 0.5, fb.format("cancel_order" if i % 2 else "return_items"),
                    score_parts=PARTS, tool_calls=calls) for i in range(10)]
    trials += [_told("x0", "cancelled")]
    result = build(trials)
    assert not any("split into" in s for s in result["sanity"])
    assert max(len(tasks) for tasks in _clusters(result).values()) == 10
    tail = [_told(f"c{i}", "cancelled") for i in range(10)]
    tail += [_told("h0", "handled on this account")]
    result = build(tail + [_other("o0")])
    assert not any("split into" in s for s in result["sanity"])


def test_mechanical_clusters_are_never_split():
    """A structural cluster holding every failure is one cause by construction."""
    reads = [{"name": "get_order", "arguments": {}}]
    trials = [trial(f"n{i}", 0.0, f"the order was not cancelled ({w})", output="Your order "
                    "has been cancelled.", tool_calls=reads)
              for i, w in enumerate(["customer asked"] * 4 + ["refund pending"] * 4)]
    result = build(trials)
    assert [c["signature"] for c in result["clusters"]] == ["narrated_without_action"]
    assert not any("split into" in s for s in result["sanity"])
