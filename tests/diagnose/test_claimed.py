"""claimed_without_matching_action: a specific claimed change no matching write made."""

from __future__ import annotations

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
    """Worded like the other failures, separated mechanically, flagged on the entry."""
    trials = [trial(f"c{i}", 0.0, "the case was not handled", output="I've escalated it.",
                    tool_calls=NOTE) for i in range(2)]
    trials += [trial(f"o{i}", 0.0, "the case was not handled", output="Done.",
                     tool_calls=NOTE) for i in range(2)]
    result = build(trials)
    claimed = next(c for c in result["clusters"] if c["signature"] == CLAIMED_SIGNATURE)
    assert claimed["tasks"] == ["c0", "c1"] and claimed["structural"] and "note" in claimed
    entries = {e["task_id"]: e for e in result["reflective_dataset"]}
    assert entries["c0"]["claimed_without_matching_action"] is True
    assert entries["c0"]["claimed_verbs"] == ["escalated"]
    assert entries["o0"]["claimed_without_matching_action"] is False
