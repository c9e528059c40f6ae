"""A seeded corpus of awkward rollout rows for the diagnosis golden files.

Every JSON column takes shapes the store may hold after a hand edit or an odd adapter:
malformed text, NaN, escaped keys, big integers, non-dict items, a name that is a number,
``mutates`` that is not a boolean, arguments as JSON text, OpenAI-style calls deep in a
trace, ``function_call``, an empty output with the final message only in the trace. The
diagnosis of this corpus (and of the retail benchmark's rows) is stored under ``golden/``
as the code before the columnar rewrite wrote it; ``test_golden.py`` compares byte for byte.
"""

from __future__ import annotations

import json
import random

from capevolve.diagnose.source import Trial

TASKS = ["t01", "t02", "t03", "t04", "t05", "t06", "t07", "t08", "t09", "t10", "t11",
         "a/b", ".hidden", "ünï", "t 12"]
PREAMBLES = ["Evaluation report (policy scorer v2): ", "[scorer] ", ""]
CAUSES = [
    "did not confirm the refund of \"Mia Chen\" before issuing it",
    "omitted required verify step for the reservation 123-A",
    "database: cancel_order changed the database, but the order had shipped.\n"
    "messages: the reply never told the customer the refund amount.",
    "db: wrong address_id `addr_9`; messages: never mentioned the fee",
    "missing escalate before changing the seat: expected 42 got \"7-B\"",
    "The agent did not inform the user that the booking was final.",
    "the end state matches the reference. the reply omitted the total price.",
    "update_address was called with zip 90210 instead of 10001",
    "[REDACTED] value quoted; wrong cabin chosen",
    "Résumé: l'agent n'a pas confirmé la réservation ‘X’",
    "", "   ", "fail", "messages: ok.\ndatabase: the refund went to the wrong card.",
]
SCORE_PARTS = [None, "", "{}", '{"db": 0, "messages": 1}', '{"db": 1, "messages": 0}',
               '{"database": 0.5, "messages": 0.5}', '{"db": true}', "[1, 2]", "not json",
               '{"db": NaN, "messages": 0}', '{"communication": 0, "db": 1}', '{"a": 0}']
OUTPUTS = [None, "", "  ", "Your order has been cancelled and the refund was issued.",
           "Your ticket has been escalated to a human agent.", "I have not updated anything.",
           "I looked into it; here is what I found.", "We've successfully refunded you.",
           "The seat will now be changed.", "Your reservation was rebooked for Tuesday."]
INPUTS = [None, json.dumps("help me"), json.dumps({"user_id": "u1", "request": "cancel"}),
          "not json", '"\\ud800 lone" [1]', "[1, 2, 3]", "NaN", '"caf\\u00e9"']
NAMES = ["get_order", "cancel_order", "issue_refund", "transfer_to_human", "updateAddress",
         "orders.list", "send-email", "calculate", "book_flight", "search_flights"]
ODD_CALLS = [
    None, "", "[]", "null", "not json", "{}", '{"name": "cancel_order"}',
    '[{"name": 0}, {"name": ""}, {"name": 123, "mutates": 1}]',
    '[{"name": true}, "get_order", null, [1]]',
    '[{"n\\u0061me": "cancel_order", "arguments": {"order_id": "1"}}]',
    '[{"name": "cancel_order", "name": "get_order"}]',
    '[{"name": "get_order", "arguments": "{\\"order_id\\": 1, \\"zip\\": 2}"}]',
    '[{"name": "get_order", "arguments": "not an object"}]',
    '[{"name": "get_order", "arguments": [1, 2]}]',
    '[{"name": "issue_refund", "arguments": {"amount": NaN}, "mutates": "yes"}]',
    '[{"name": "get_order", "arguments": {"n": 123456789012345678901234567890}}]',
    '[{"name": "get_order", "mutates": true}]',
    '[{"name": "cancel_order", "mutates": false}]',
    '[{"name": "get_order", "arguments": {"a": 1, "a": 2, "B": 3}}]',
]
ODD_TRACES = [
    None, "", "not json", "[]", '{"tool_calls": "not a list"}',
    '[{"role": "assistant", "content": "I have cancelled your order."}]',
    '[{"role": "assistant", "tool_calls": [{"function": {"name": "cancel_order", '
    '"arguments": "{\\"order_id\\": \\"1\\"}"}}]}]',
    '[{"role": "assistant", "function_call": {"name": "issue_refund", "arguments": "{}"}}]',
    '{"deep": {"deeper": [{"tool_calls": [{"name": "get_order", "mutates": true}]}]}}',
    '[{"role": "assistant", "tool_calls": [{"function": "not a dict", "name": "get_x"}]}]',
    '[{"role": "tool", "content": "\\"tool_calls\\" mentioned in a string"}]',
    '[{"role": "assistant", "content": NaN}, {"role": "assistant", "content": "Refunded."}]',
    '[{"role": "assistant", "tool_calls": [{"function": {"name": "transferToHuman"}, '
    '"mutates": false}]}, {"role": "assistant", "content": "It has been escalated."}]',
    '[{"role": "assistant", "content": "\\ud83d\\ude00 has been updated"}]',
]


def _calls(rng: random.Random) -> str | None:
    if rng.random() < 0.4:
        return rng.choice(ODD_CALLS)
    calls = []
    for _ in range(rng.randint(0, 4)):
        call: dict = {"name": rng.choice(NAMES)}
        if rng.random() < 0.7:
            call["arguments"] = {rng.choice(["order_id", "user_id", "zip"]): rng.randint(1, 9)
                                 for _ in range(rng.randint(0, 2))}
        if rng.random() < 0.5:
            call["mutates"] = rng.choice([None, True, False])
        calls.append(call)
    return json.dumps(calls, ensure_ascii=rng.random() < 0.5)


def _trace(rng: random.Random, calls: str | None) -> str | None:
    if rng.random() < 0.5:
        return rng.choice(ODD_TRACES)
    messages: list = [{"role": "user", "content": "please help"}]
    for _ in range(rng.randint(0, 3)):
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "function", "function": {
                "name": rng.choice(NAMES), "arguments": json.dumps({"order_id": "o1"})}}]})
    messages.append({"role": "assistant", "content": rng.choice(OUTPUTS[3:])})
    return json.dumps(messages)


def corpus(seed: int = 7, n: int = 420) -> list[Trial]:
    """``n`` trials over ``TASKS`` (trial numbers per task from 0), reproducible."""
    rng = random.Random(seed)
    trials, count = [], dict.fromkeys(TASKS, 0)
    for _ in range(n):
        task = rng.choice(TASKS)
        trial, count[task] = count[task], count[task] + 1
        reward = rng.choice([None, 0.0, 0.0, 0.5, 0.8, 0.95, 1.0, 1.0, 1.0 - 1e-12, 0.3])
        if reward is not None and reward >= 1.0 - 1e-9:
            feedback = rng.choice(["all good", "the end state matches the reference.",
                                   "messages: ok.", None, PREAMBLES[0] + "all good"])
        else:
            feedback = rng.choice(PREAMBLES[:2] if rng.random() < 0.85 else PREAMBLES) \
                + rng.choice(CAUSES) + (f" ({rng.randint(1, 999)})" if rng.random() < 0.3
                                        else "")
            feedback = None if rng.random() < 0.03 else feedback
        calls = _calls(rng)
        trials.append(Trial(
            eval_id="val__seed__k4", task_id=task, trial=trial, reward=reward,
            feedback=feedback, score_parts=rng.choice(SCORE_PARTS),
            output=rng.choice(OUTPUTS), inputs=rng.choice(INPUTS), tool_calls=calls,
            trace=_trace(rng, calls),
            trajectory=rng.choice([None] * 9 + ["traces/own.json"]),
            error=None if reward is not None else "boom",
            error_kind=None if reward is not None else "adapter"))
    return sorted(trials, key=lambda t: (t.task_id, t.trial))


def targets() -> dict[str, object]:
    """Task targets whose values some feedback quotes (the gold guard and redaction)."""
    return {"t01": {"answer": "Mia Chen"}, "t02": {"zip": 10001, "ok": True},
            "t03": ["addr_9", 42.0], "t04": {"seat": "7-B"}, "a/b": "refund",
            "ünï": {"x": None}, "t 12": {"n": 90210}}
