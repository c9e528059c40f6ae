"""Parent choice: hill-climb takes the best; pareto samples the per-task val frontier by
how many tasks each candidate is best on, never a dominated one; focus modes."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from capevolve.errors import ConfigError
from capevolve.optimize.algorithms import (
    HillClimb,
    Pareto,
    SearchView,
    build_algorithm,
    frontier_weights,
)
from capevolve.records._optimize import IterationRecord


def test_frontier_counts_tasks_won_and_drops_dominated_candidates():
    means = {"seed": {"a": 0.5, "b": 0.5, "c": 0.0},
             "c1": {"a": 1.0, "b": 0.5, "c": 0.0},   # ties seed on b, c; dominates it
             "c2": {"a": 0.0, "b": 0.0, "c": 1.0}}
    assert frontier_weights(means) == {"c1": 2, "c2": 1}
    assert frontier_weights({}) == {}


def test_pareto_samples_parents_in_proportion_to_tasks_won():
    means = {"c1": {"a": 1.0, "b": 1.0, "c": 0.0}, "c2": {"a": 0.0, "b": 0.0, "c": 1.0},
             "c3": {"a": 0.0, "b": 0.0, "c": 0.0}}
    view = SearchView("c1", means, ())
    rng = random.Random(0)
    picks = Counter(Pareto().choose_parent(view, rng) for _ in range(3000))
    assert set(picks) == {"c1", "c2"}
    assert 0.6 < picks["c1"] / 3000 < 0.73  # 2 of 3 tasks


def _record(iteration, parent, focus, outcome):
    return IterationRecord(iteration=iteration, algorithm="hill-climb", proposer="x",
                           parent_id=parent, focus=focus, outcome=outcome,
                           started_at="t", finished_at="t")


def test_hill_climb_takes_the_best_and_focus_modes_pick_clusters():
    clusters = ("confirm", "refund", "greet")
    view = SearchView("cand_004", {}, (_record(1, "cand_004", "confirm", "reject"),),
                      clusters)
    assert HillClimb().choose_parent(view, random.Random(1)) == "cand_004"
    assert HillClimb("all").choose_focus(view, "cand_004", 2) is None
    assert [HillClimb("cyclic").choose_focus(view, "cand_004", i) for i in (1, 2, 3, 4)] == \
        ["confirm", "refund", "greet", "confirm"]
    assert HillClimb("hardest-first").choose_focus(view, "cand_004", 2) == "refund"
    assert HillClimb("hardest-first").choose_focus(view, "other", 2) == "confirm"


@pytest.mark.parametrize(("name", "focus", "message"), [
    ("annealing", "all", "--algorithm"), ("pareto", "random", "--focus")])
def test_unknown_algorithm_or_focus_is_a_config_error(name, focus, message):
    with pytest.raises(ConfigError, match=message):
        build_algorithm(name, focus)
