"""Ground truth for diagnosis: which rule each failing part of a retail rollout breaks.

The environment knows why a rollout failed, because it made the failure: the agent follows
or skips each behaviour of the policy (``behaviours.Behaviour``), narrates writes it never
calls (``trace["narrated"]``), and the seed tools have known gaps. ``failure_causes`` names,
for each shortcoming the scorer writes into the feedback, the rule whose absence produced it:

- the ``database`` part (one cause when the end state is wrong): ``act`` when a write was
  narrated instead of called; otherwise by the task's kind -- ``escalate`` (no transfer),
  ``verify`` (an order on another account was changed), ``pending_only`` (a non-pending
  order was cancelled), ``confirm`` (the customer would have declined), ``gift_balance``
  (a gift card that cannot cover the order was used), ``original_payment`` (a return or
  exchange refunded to another method) and ``tool:gift_card_refund`` (the seed's
  ``cancel_order`` never credits a gift card back);
- the ``messages`` part (one cause per problem, in the scorer's order): ``confirm`` for an
  unconfirmed write, ``price_difference`` / ``report_amount`` for an amount not told (or
  told wrong), and for a refusal never told the rule that should have refused.

Each cause carries the exact sentence the scorer wrote for it (``text``), so a benchmark can
find the diagnosis unit that covers it. The module never reads the feedback to decide a
cause: it replays the scorer's checks on the trace and maps them through the task's kind.
"""

from __future__ import annotations

from dataclasses import dataclass

from capevolve.adapter import Rollout, Task

from . import scorer

DB_PART, MESSAGES_PART = "database", "messages"
_DB_RULE_BY_KIND = {
    "escalate": "escalate", "wrong_owner": "verify", "cancel_refuse": "pending_only",
    "cancel_decline": "confirm", "modify_payment": "gift_balance",
    "return": "original_payment", "exchange": "original_payment",
    "cancel_giftcard": "tool:gift_card_refund",
}
_REFUSAL_RULE_BY_KIND = {"wrong_owner": "verify", "cancel_refuse": "pending_only",
                         "modify_payment": "gift_balance"}


@dataclass(frozen=True)
class Cause:
    """One shortcoming of a rollout: the feedback part it is written in, the sentence the
    scorer wrote for it, and the rule whose absence produced it."""

    part: str
    text: str
    rule: str


def _db_rule(task: Task, trace: dict) -> str:
    if trace.get("narrated"):
        return "act"
    return _DB_RULE_BY_KIND.get(str(task.metadata["kind"]), f"other:{task.metadata['kind']}")


def _message_rule(task: Task, what: str) -> str:
    kind = str(task.metadata["kind"])
    if what == "confirm":
        return "confirm"
    if what.startswith("amount:"):
        return "price_difference" if "price difference" in what else "report_amount"
    if what.startswith("refusal:"):
        return _REFUSAL_RULE_BY_KIND.get(kind, f"refusal:{kind}")
    return f"other:{what}"


def failure_causes(task: Task, rollout: Rollout) -> list[Cause]:
    """The causes of one rollout's failing parts (empty for a full pass or no trace)."""
    trace = rollout.trace if isinstance(rollout.trace, dict) else None
    if rollout.error or not trace or "db" not in trace:
        return []
    causes = []
    if trace["db"]["hash"] != task.target["expected_hash"]:
        text = scorer.db_feedback(task, trace).split(": ", 1)[1]
        causes.append(Cause(DB_PART, text, _db_rule(task, trace)))
    for what, text in scorer.message_problems(task, trace["messages"]):
        causes.append(Cause(MESSAGES_PART, text, _message_rule(task, what)))
    return causes
