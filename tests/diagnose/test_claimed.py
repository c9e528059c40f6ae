"""claimed_without_matching_action: a specific claimed change no matching write made."""

from __future__ import annotations

import json

from diagnose.diag_support import READ_CALLS, WRITE_CALLS, build, trial

from capevolve.diagnose.claimed import claimed_without_matching_action, family, unmatched_claims
from capevolve.diagnose.kinds import CLAIMED_SIGNATURE, NARRATED_SIGNATURE
from capevolve.diagnose.narrated import rollout_calls

NOTE = [{"name": "add_note", "arguments": {"text": "x"}, "mutates": None}]
TRANSFER = [{"name": "transfer_to_human", "arguments": {}, "mutates": None}]


def _flag(output: str, calls: list | None, trace=None) -> bool:
    t = trial("t", 0.0, "x", output=output, tool_calls=calls, trace=trace)
    return claimed_without_matching_action(t.output, rollout_calls(t.tool_calls, t.trace),
                                           t.trace)


def test_escalated_with_only_a_note_written_is_flagged():
    """Another mutating call happened, but none of the claim's verb family."""
    assert _flag("I've escalated your case to a supervisor.", READ_CALLS + NOTE)
    assert unmatched_claims("Your ticket has been escalated.",
                            rollout_calls(None, None) or [], None) == []


def test_a_matching_write_clears_it_through_the_verb_family():
    """escalated ~ transfer, cancelled ~ cancel_order, paid ~ modify_payment."""
    assert not _flag("I've escalated your case.", TRANSFER)
    assert not _flag("Your order has been cancelled.", WRITE_CALLS)
    assert not _flag("Order W1 is now paid with your gift card.",
                     [{"name": "modify_payment", "arguments": {}, "mutates": None}])
    assert "transfer" in family("escalated")


def test_generic_claims_and_negations_are_not_specific_claims():
    """'updated' / 'processed' say nothing about which write; 'has not been refunded' is
    no claim."""
    assert not _flag("Your request has been processed and updated.", NOTE)
    assert not _flag("Your order has not been refunded yet.", NOTE)


def test_missing_data_is_never_flagged_and_no_write_is_narrateds_case():
    """No tool-call record: nothing; only read calls: narrated_without_action instead."""
    assert not _flag("I've escalated your case.", None)
    assert not _flag("I've escalated your case.", READ_CALLS)
    result = build([trial("a", 0.0, "nobody took over", output="I've escalated it.",
                          tool_calls=READ_CALLS)])
    assert result["clusters"][0]["signature"] == NARRATED_SIGNATURE


def test_a_claimed_mismatch_forms_its_own_structural_cluster():
    """Worded like the other failures, separated mechanically, flagged on the entry (a
    task kept good shows the agent had a transfer tool)."""
    trials = [trial(f"c{i}", 0.0, "the case was not handled", output="I've escalated it.",
                    tool_calls=NOTE) for i in range(2)]
    trials += [trial(f"o{i}", 0.0, "the case was not handled", output="Done.",
                     tool_calls=NOTE) for i in range(2)]
    trials += [trial("k", 1.0, "fine", output="I've escalated it.", tool_calls=TRANSFER)]
    result = build(trials)
    claimed = next(c for c in result["clusters"] if c["signature"] == CLAIMED_SIGNATURE)
    assert claimed["tasks"] == ["c0", "c1"] and claimed["structural"] and "note" in claimed
    entries = {e["task_id"]: e for e in result["reflective_dataset"]}
    assert entries["c0"]["claimed_without_matching_action"] is True
    assert entries["c0"]["claimed_verbs"] == ["escalated"]
    assert entries["o0"]["claimed_without_matching_action"] is False


ISSUE = [{"name": "lookup_order", "arguments": {}, "mutates": False},
         {"name": "issue_refund", "arguments": {}, "mutates": None},
         {"name": "add_case_note", "arguments": {}, "mutates": None}]


def test_a_verdict_answering_a_request_is_not_an_action_claim():
    """'Your refund request is approved.' after a refund was issued states a decision;
    no tool approves, and even one that did would not make the verdict a claimed write."""
    reply = "Your refund request is approved. $84.00 will be back on your card."
    assert not _flag(reply, ISSUE)
    assert unmatched_claims(reply, rollout_calls(json.dumps(ISSUE), None), None,
                            tools=["approve_refund", "issue_refund"]) == []
    assert not _flag("Access has been granted to the shared drive.", NOTE)
    trials = [trial(f"r{i}", 0.0, f"the refund amount is wrong ({i})", output=reply,
                    tool_calls=ISSUE) for i in range(6)]
    result = build(trials)
    assert all(c["signature"] != CLAIMED_SIGNATURE for c in result["clusters"])
    assert not any(e["claimed_without_matching_action"] for e in result["reflective_dataset"])


def test_a_claim_no_tool_of_the_evaluation_could_make_is_not_flagged():
    """'The payment is scheduled for the next payroll' where no tool schedules anything:
    not a missing action. The same rollouts are flagged once a task kept good shows a
    scheduling tool, and a read call of the family does not count as one."""
    approve = [{"name": "approve_item", "arguments": {}, "mutates": None}]
    reply = "Your report has been approved and the payment is scheduled for payroll."
    assert unmatched_claims(reply, rollout_calls(json.dumps(approve), None), None) == \
        ["scheduled"]
    assert unmatched_claims(reply, rollout_calls(json.dumps(approve), None), None,
                            tools=["approve_item", "send_decision"]) == []
    failing = [trial(f"e{i}", 0.0, "a receipt is missing", output=reply, tool_calls=approve)
               for i in range(3)]
    reads = [{"name": "get_schedule", "arguments": {}, "mutates": False}]
    for kept, flagged in ((reads, False),
                          ([{"name": "schedule_payment", "arguments": {}}], True)):
        result = build([*failing, trial("k", 1.0, "fine", output="ok", tool_calls=kept)])
        entries = result["reflective_dataset"]
        assert [e["claimed_without_matching_action"] for e in entries] == [flagged] * 3
        assert any(c["signature"] == CLAIMED_SIGNATURE for c in result["clusters"]) is flagged
