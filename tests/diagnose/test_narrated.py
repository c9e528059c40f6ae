"""narrated_without_action: mechanical detection from tool-call records, not wording."""

from __future__ import annotations

from diagnose.diag_support import READ_CALLS, WRITE_CALLS, build, trial

from capevolve.diagnose.kinds import NARRATED_SIGNATURE
from capevolve.diagnose.narrated import (
    call_mutates,
    claims_state_change,
    leading_verb,
    narrated_without_action,
    rollout_calls,
)

CLAIM = "Your order has been cancelled and the refund was issued."


def _flagged(**kwargs) -> bool:
    t = trial("t1", 0.0, "order still active", output=CLAIM, **kwargs)
    return narrated_without_action(t.output, rollout_calls(t.tool_calls, t.trace), t.trace)


def test_read_only_trace_claiming_success_is_flagged():
    """Only read calls recorded, yet the final message claims a cancellation."""
    assert _flagged(tool_calls=READ_CALLS)


def test_a_write_call_clears_the_flag():
    """A mutating call backs the claim."""
    assert not _flagged(tool_calls=READ_CALLS + WRITE_CALLS)


def test_mutates_true_wins_over_a_read_verb():
    """get_and_cancel with mutates: true is a write despite its leading 'get'."""
    calls = [{"name": "get_and_cancel", "arguments": {}, "mutates": True}]
    assert not _flagged(tool_calls=calls)
    assert call_mutates("get_and_cancel", True) and not call_mutates("get_order", None)


def test_mutates_false_makes_a_write_named_call_read_only():
    """An explicit mutates: false overrides an action-like name."""
    assert _flagged(tool_calls=[{"name": "cancel_preview", "mutates": False}])


def test_no_tool_call_record_is_never_flagged():
    """No calls in the column nor in the trace is missing data, not narration."""
    assert not _flagged(tool_calls=None)
    assert not _flagged(tool_calls=[])


def test_openai_style_tool_calls_inside_the_trace_count():
    """Calls found as OpenAI-style tool_calls in the trace are read as well."""
    read = {"messages": [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "find_order", "arguments": "{\"order_id\": \"1\"}"}}]}]}
    write = {"messages": [{"role": "assistant", "tool_calls": [
        {"type": "function", "function": {"name": "cancelOrder", "arguments": "{}"}}]}]}
    assert _flagged(trace=read)
    assert not _flagged(trace=write)
    assert not _flagged(tool_calls=READ_CALLS, trace=write)


def test_final_message_falls_back_to_the_last_assistant_message():
    """With an empty output the trace's last assistant text is the final message."""
    trace = [{"role": "user", "content": "cancel it"},
             {"role": "assistant", "content": "It has been cancelled."}]
    t = trial("t1", 0.0, "x", output="", tool_calls=READ_CALLS, trace=trace)
    assert narrated_without_action(t.output, rollout_calls(t.tool_calls, t.trace), t.trace)


def test_claims_are_detected_and_negations_are_not_claims():
    """'has been updated' is a claim; 'has not been updated' is not."""
    assert claims_state_change("I have updated your address.")
    assert claims_state_change("Done, successfully refunded.")
    assert not claims_state_change("Your address has not been updated yet.")
    assert not claims_state_change("I will update your address once you confirm.")


def test_leading_verb_handles_naming_styles():
    """snake_case, camelCase and dotted names give their first word."""
    assert [leading_verb(n) for n in ("list_flights", "getUser", "api.searchItems")] == \
        ["list", "get", "search"]


def test_flagged_failures_form_their_own_cluster_with_a_structural_note():
    """Flagged failures leave the lexical clusters and carry the boolean per entry."""
    result = build([
        trial("t1", 0.0, "did not cancel the order", output=CLAIM, tool_calls=READ_CALLS),
        trial("t2", 0.0, "did not cancel the order", output=CLAIM, tool_calls=WRITE_CALLS)])
    narrated = [c for c in result["clusters"] if c["signature"] == NARRATED_SIGNATURE]
    assert len(narrated) == 1 and narrated[0]["tasks"] == ["t1"]
    assert "structural" in narrated[0]["note"]
    flags = {e["task_id"]: e["narrated_without_action"] for e in result["reflective_dataset"]}
    assert flags == {"t1": True, "t2": False}
