"""Retail's ground truth: every failing part of a rollout has a cause naming the rule."""

from __future__ import annotations

from pathlib import Path

from capevolve_adapters.retail import RetailAdapter
from capevolve_adapters.retail.causes import DB_PART, MESSAGES_PART, failure_causes

SEED = Path(__file__).resolve().parents[2] / "benchmarks" / "retail" / "seed_capability"


def _rollouts(n_tasks: int = 60, trials: int = 2):
    adapter = RetailAdapter()
    for i, task in enumerate(adapter.tasks()[:n_tasks]):
        for trial in range(trials):
            rollout = adapter.run_target(SEED, task, trial=trial, seed=1000 * trial + i)
            yield task, rollout, adapter.score(task, rollout)


def test_each_failing_part_has_one_cause_quoted_from_the_feedback():
    """A db cause iff the db part failed; one messages cause per problem; each cause's text
    is a sentence of the feedback; passing rollouts have none."""
    seen_rules = set()
    for task, rollout, score in _rollouts():
        causes = failure_causes(task, rollout)
        db = [c for c in causes if c.part == DB_PART]
        msgs = [c for c in causes if c.part == MESSAGES_PART]
        assert len(db) == (0 if score.parts["db"] == 1.0 else 1)
        assert bool(msgs) == (score.parts["messages"] < 1.0)
        assert (score.reward == 1.0) == (not causes)
        for cause in causes:
            assert cause.text in score.feedback
            assert not cause.rule.startswith("other:"), (task.metadata["kind"], cause)
            seen_rules.add(cause.rule)
    assert {"act", "confirm", "report_amount", "verify", "pending_only"} <= seen_rules


def test_a_narrated_write_is_recorded_in_the_trace_and_is_the_act_rule():
    """The agent records which writes it claimed without calling; the db cause is 'act'."""
    narrated = [(task, rollout) for task, rollout, _ in _rollouts()
                if rollout.trace["narrated"]]
    assert narrated
    for task, rollout in narrated:
        names = {c.name for c in rollout.tool_calls}
        assert not set(rollout.trace["narrated"]) & names
        db = [c for c in failure_causes(task, rollout) if c.part == DB_PART]
        assert all(c.rule == "act" for c in db)


def test_an_errored_rollout_has_no_causes():
    from capevolve.adapter import Rollout

    task = RetailAdapter().tasks()[0]
    assert failure_causes(task, Rollout(error="boom")) == []
