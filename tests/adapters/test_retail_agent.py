"""The policy agent on the seed and oracle capabilities: determinism and each failure mode."""

from __future__ import annotations

import json

import pytest

from capevolve_adapters.retail.behaviours import Behaviour, Conduct, recognise
from capevolve_adapters.retail.capability import parse_policy
from capevolve_adapters.retail.scorer import PREAMBLE


def _kind(tasks, kind):
    return sorted(t for t, task in tasks.items() if task.metadata["kind"] == kind)


def _rewards(results, task_id):
    return [score.reward for _, score in results[task_id]]


def test_same_seed_same_rollout(retail_adapter, retail_tasks, seed_candidate):
    """A (task, seed) pair always gives the identical rollout; other seeds may differ."""
    task = retail_tasks["retail_001"]
    runs = [retail_adapter.run_target(seed_candidate, task, trial=0, seed=s)
            for s in (7, 7, 8, 9, 10, 11)]
    assert runs[0] == runs[1]
    assert len({json.dumps(r.trace, sort_keys=True) for r in runs}) > 1


def test_oracle_capability_solves_every_task(run_trials, oracle_candidate):
    """With every rule emphasised and the reference tools, every task scores 1.0."""
    results = run_trials(oracle_candidate, trials=1)
    failed = {t: s.feedback for t, [(_, s)] in results.items() if s.reward != 1.0}
    assert failed == {}


@pytest.mark.slow
def test_seed_is_mediocre_with_every_failure_mode(seed_results):
    """The seed scores 0.3-0.5 and shows always-failing, flaky, partial, near-miss and
    narrated-without-action tasks."""
    rewards = {t: [s.reward for _, s in rs] for t, rs in seed_results.items()}
    feedback = {t: [s.feedback for _, s in rs] for t, rs in seed_results.items()}
    mean = sum(sum(r) / len(r) for r in rewards.values()) / len(rewards)
    assert 0.3 <= mean <= 0.5
    counts = {
        "always_failing": sum(all(x == 0 for x in r) for r in rewards.values()),
        "flaky": sum(len(set(r)) > 1 for r in rewards.values()),
        "partial": sum(0.5 in r for r in rewards.values()),
        "near_miss": sum(any("near miss" in f for f in fs) for fs in feedback.values()),
        "narrated": sum(any("narrated without action" in f for f in fs)
                        for fs in feedback.values()),
    }
    assert all(n >= 5 for n in counts.values()), counts


@pytest.mark.slow
def test_always_failing_delivered_cancellations(seed_results, retail_tasks):
    """Without the pending-only rule and with a cancel tool that checks nothing, a delivered
    or processed order gets cancelled: every such trial has the wrong end state, and most of
    these tasks fail on every trial."""
    always = 0
    for task_id in _kind(retail_tasks, "cancel_refuse"):
        for rollout, score in seed_results[task_id]:
            if "cancel_order" in [c.name for c in rollout.tool_calls]:
                assert score.parts["db"] == 0.0
                assert "must leave it unchanged" in score.feedback
        always += all(r == 0.0 for r in _rewards(seed_results, task_id))
    assert always >= 3


def test_flaky_confirmation_from_a_plain_rule(seed_results, retail_tasks):
    """The seed's plain confirm rule is followed on some trials only, so some tasks pass on
    one trial and fail on another because the write was not confirmed."""
    flaky = [t for t in _kind(retail_tasks, "modify_address")
             if len(set(_rewards(seed_results, t))) > 1]
    assert flaky
    feedback = [s.feedback for t in flaky for _, s in seed_results[t]]
    assert any("without first asking the customer to confirm" in f for f in feedback)


def test_partial_credit_when_the_amount_is_not_told(seed_results, retail_tasks):
    """A correct cancellation whose reply omits the refund gets 0.5 and says what is missing."""
    hits = [s for t in _kind(retail_tasks, "cancel") for _, s in seed_results[t]
            if s.parts == {"db": 1.0, "messages": 0.0} and "was never told" in s.feedback]
    assert hits and all(s.reward == 0.5 for s in hits)


def test_near_miss_refund_to_another_payment_method(seed_results, retail_tasks):
    """Without the original-payment rule a return or exchange goes to the first method on
    the profile: the end state is one field away from the reference."""
    near = [s.feedback for t in _kind(retail_tasks, "return") + _kind(retail_tasks, "exchange")
            for _, s in seed_results[t] if "one field only" in s.feedback]
    assert near
    assert any("payment_method_id" in f for f in near)


def test_narrated_without_action(seed_results):
    """Without the act rule some writes are claimed in the final message but never called."""
    narrated = [(r, s) for rs in seed_results.values() for r, s in rs
                if "narrated without action" in s.feedback]
    assert narrated
    for rollout, _ in narrated:
        assert not any(c.mutates for c in rollout.tool_calls)


def test_wrong_refusal_of_a_human_handoff(seed_results, retail_tasks):
    """Without the escalation rule a request for a human is refused on every trial."""
    for task_id in _kind(retail_tasks, "escalate"):
        for rollout, score in seed_results[task_id]:
            assert "transfer_to_human" not in [c.name for c in rollout.tool_calls]
            assert "wrong refusal" in score.feedback or "narrated" in score.feedback


def test_feedback_has_the_preamble_and_never_quotes_gold_values(seed_results, retail_tasks):
    """Every feedback starts with the scorer preamble and contains no gold amount or hash."""
    for task_id, results in seed_results.items():
        target = retail_tasks[task_id].target
        golds = [f"{f['value']:.2f}" for f in target["facts"] if f["kind"] == "amount"]
        for _, score in results:
            assert score.feedback.startswith(PREAMBLE)
            assert target["expected_hash"] not in score.feedback
            assert not any(g in score.feedback for g in golds)


def test_emphasised_rules_always_followed_plain_rules_sometimes():
    """MUST/ALWAYS rules are followed on every seed; a plain rule on some seeds only."""
    rules = parse_policy("- You MUST confirm before any write.\n- Tell the refund amount.\n")
    assert recognise(rules) == {Behaviour.CONFIRM: True, Behaviour.REPORT_AMOUNT: False}
    draws = [Conduct.draw(rules, seed) for seed in range(200)]
    assert all(Behaviour.CONFIRM in d for d in draws)
    followed = sum(Behaviour.REPORT_AMOUNT in d for d in draws)
    assert 80 < followed < 180
    assert Conduct.draw(rules, 5) == Conduct.draw(rules, 5)
