"""The stop condition parses into predicates, names what it cannot parse, and stops a loop
at the first predicate met; the plateau signal needs a full window without an accept."""

from __future__ import annotations

import pytest

from capevolve._policy.stop import LoopState, StopKind, first_met, parse_stop, plateau


@pytest.mark.parametrize(("text", "expected"), [
    ("val mean >= 0.9 or 10 iterations", [(StopKind.VAL_MEAN, 0.9), (StopKind.ITERATIONS, 10)]),
    ("$5, 30 minutes; 3 stalls", [(StopKind.COST_USD, 5), (StopKind.WALL_S, 1800),
                                  (StopKind.STALL, 3)]),
    ("500 metric calls OR 2 h", [(StopKind.METRIC_CALLS, 500), (StopKind.WALL_S, 7200)]),
    ("target 0.75", [(StopKind.VAL_MEAN, 0.75)]),
    ("iterations 4 or 3 iterations without improvement",
     [(StopKind.ITERATIONS, 4), (StopKind.STALL, 3)]),
    ("wall 600 or 5 usd", [(StopKind.WALL_S, 600), (StopKind.COST_USD, 5)]),
])
def test_clauses_parse_into_predicates(text, expected):
    plan = parse_stop(text)
    assert [(p.kind, p.value) for p in plan.predicates] == expected
    assert plan.unparsed == []


def test_clauses_that_do_not_parse_are_named_and_kept_apart():
    plan = parse_stop("val mean >= 0.9 or when the team is happy, 10 apples")
    assert [p.kind for p in plan.predicates] == [StopKind.VAL_MEAN]
    assert plan.unparsed == ["when the team is happy", "10 apples"]
    assert parse_stop("").predicates == [] and parse_stop(None).unparsed == []
    assert parse_stop("soon").to_dict()["unparsed"] == ["soon"]


def _state(**kw):
    base = {"best_val_mean": 0.5, "iterations": 0, "metric_calls": 0, "cost_usd": 0.0,
            "wall_s": 0.0, "stall": 0}
    return LoopState(**{**base, **kw})


def test_the_first_predicate_met_stops_and_says_why():
    plan = parse_stop("val mean >= 0.9 or 10 iterations or 3 stalls")
    assert first_met(plan, _state()) is None
    assert "val mean >= 0.9" in first_met(plan, _state(best_val_mean=0.9))
    assert "10 iterations" in first_met(plan, _state(iterations=10))
    assert first_met(plan, _state(iterations=9, stall=2, best_val_mean=0.89)) is None
    assert "without an accept" in first_met(plan, _state(stall=3))
    assert first_met(plan, _state(best_val_mean=None)) is None  # unmeasured never stops


def test_plateau_needs_a_full_window_without_an_accept():
    assert plateau([False] * 4, 5) is None
    assert plateau([True, False, False, False, False], 5) is None
    assert plateau([True] + [False] * 5, 5) is not None
    assert plateau([False] * 3, 0) is None
