"""The money cap prices rollouts of unknown cost (a killed driver's) at the mean recorded
cost, so it holds across kills; spend is summed per role where the role is known."""

from __future__ import annotations

import pytest

from capevolve._policy.budget import dispatch_allowance, exhausted, priced_cost, spend_by_role
from capevolve._store.events import Spend
from capevolve.config import BudgetConfig


def test_rollouts_of_unknown_cost_are_priced_at_the_mean_for_the_cap():
    spent = Spend(metric_calls=10, cost_usd=1.0, cost_unrecorded=5)  # 5 priced at $0.20
    assert priced_cost(spent) == pytest.approx(2.0)
    assert priced_cost(Spend(metric_calls=4, cost_usd=0.0, cost_unrecorded=4)) == 0.0
    assert priced_cost(Spend(metric_calls=4, cost_usd=0.8)) == pytest.approx(0.8)


def test_the_money_cap_counts_what_a_killed_driver_spent_without_a_row():
    """$1.00 recorded for 5 rollouts and 5 more dispatched by a driver that died: $2.00
    against a $1.50 cap is exhausted, though the recorded cost alone is under it."""
    spent = Spend(metric_calls=10, cost_usd=1.0, cost_unrecorded=5)
    [reason] = exhausted(BudgetConfig(max_usd=1.5), spent, 0)
    assert "$2.00" in reason and "5 rollouts of unknown cost" in reason
    assert not exhausted(BudgetConfig(max_usd=2.5), spent, 0)


def test_dispatch_room_under_the_money_cap_includes_the_unknown_cost():
    class Tally:
        rows, cost_usd, cost_unrecorded = 2, 0.4, 0  # this evaluation: $0.20 a rollout

    spent = Spend(metric_calls=10, cost_usd=1.0, cost_unrecorded=5)  # $2.00 priced
    left, reason = dispatch_allowance(BudgetConfig(max_usd=3.1), spent, Tally())(2)
    assert left == 3 and "max_usd" in (reason or "")  # (3.1 - 2.0 - 0.4) / 0.2, floored


def test_spend_by_role_sums_only_events_that_name_a_role():
    events = [{"kind": "spend", "role": "runner", "metric_calls": 3, "cost_usd": 0.5},
              {"kind": "spend", "iterations": 1},
              {"kind": "spend", "role": "runner", "metric_calls": 2, "tokens": 7},
              {"kind": "spend", "role": "optimizer", "cost_usd": 0.25},
              {"kind": "note", "role": "runner", "metric_calls": 99}]
    by_role = spend_by_role(events)
    assert by_role["runner"]["metric_calls"] == 5 and by_role["runner"]["tokens"] == 7
    assert by_role["runner"]["cost_usd"] == pytest.approx(0.5)
    assert by_role["optimizer"]["cost_usd"] == pytest.approx(0.25)
    assert set(by_role) == {"optimizer", "runner"}


def test_a_new_evaluation_is_priced_at_the_run_mean_before_its_first_row():
    """Resuming after a kill: before the evaluation's own first row, the run's mean cost
    per rollout limits dispatch (the old rule let the first batches out unpriced)."""
    class Tally:
        rows, cost_usd, cost_unrecorded = 0, 0.0, 0

    spent = Spend(metric_calls=10, cost_usd=2.0)  # $0.20 a rollout
    left, _ = dispatch_allowance(BudgetConfig(max_usd=3.1), spent, Tally())(0)
    assert left == 5  # (3.1 - 2.0) / 0.2, floored
    assert dispatch_allowance(BudgetConfig(max_usd=3.1), Spend(), Tally())(0) == (None, None)
