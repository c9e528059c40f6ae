"""The tau-bench-style scorer: database end state AND required facts, with feedback in words.

reward = 1 when the final database hash equals the reference hash (gold actions replayed
with ``reference_tools``) and the conversation satisfies every message requirement (each
required fact told, every write confirmed first); 0.5 when exactly one of the two holds;
0 otherwise. ``parts`` = ``{"db": 0|1, "messages": 0|1}``. Feedback starts with
``PREAMBLE`` and names the failed component and why (the wrong call, the missing
confirmation, the unreported amount, an action narrated but never called) without quoting
any gold value. "near miss" in the feedback marks a state one field away from the
reference or a different amount told. Deterministic: same rollout, same score.
"""

from __future__ import annotations

import functools
import json
import re

from capevolve.adapter import Rollout, Score, Task

from . import reference_tools as ref
from .store import changed_records, field_diff, fresh_db

PREAMBLE = ("[retail scorer] reward 1 = the database end state matches the reference AND "
            "every required fact was told with each write confirmed; 0.5 = only one of the "
            "two; 0 = neither.")
CONFIRMABLE = tuple(n for n in ref.WRITE_TOOLS if n != "transfer_to_human")
_AMOUNT = re.compile(r"\$\s?(\d[\d,]*(?:\.\d{1,2})?)|\b(\d[\d,]*\.\d{2})\b")
_REFUSAL = re.compile(r"\b(?:cannot|can't|can not|unable|not able|couldn't|could not|"
                      r"not possible|not eligible|won't be able)\b", re.IGNORECASE)
_CLAIM = re.compile(r"\b(?:has been|have been|is now|will now|i've|i have)\b.*\b(?:cancel|"
                    r"return|exchang|ship|paid|transferr)", re.IGNORECASE)


@functools.lru_cache(maxsize=512)
def _expected_changes(actions_json: str) -> dict:
    db = fresh_db()
    for action in json.loads(actions_json):
        getattr(ref, action["name"])(db, **action["arguments"])
    return changed_records(db)


def _said(messages: list[dict]) -> str:
    return "\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "assistant")


def _amounts(text: str) -> list[float]:
    return [float((a or b).replace(",", "")) for a, b in _AMOUNT.findall(text)]


def _is_write(message: dict) -> bool:
    return message.get("role") == "tool" and bool(message.get("write")) and bool(message.get("ok"))


def _writes(messages: list[dict]) -> list[dict]:
    return [m for m in messages if _is_write(m)]


def db_feedback(task: Task, trace: dict) -> str:
    actions = task.target["actions"]
    got = trace["db"]["changed"]
    want = _expected_changes(json.dumps(actions, sort_keys=True))
    writes = [m["name"] for m in _writes(trace["messages"])]
    said = _said(trace["messages"])
    final = next((m["content"] for m in reversed(trace["messages"])
                  if m.get("role") == "assistant"), "")
    if not actions and writes:
        return (f"database: {', '.join(writes)} changed the database, but this request must "
                "leave it unchanged (it should be refused, or the customer declined).")
    if actions and not writes:
        if _CLAIM.search(final) and not _REFUSAL.search(final):
            return ("database: narrated without action: the final message says the change "
                    "was made, but no write tool was ever called.")
        if _REFUSAL.search(said):
            return ("database: wrong refusal: the reply refused or failed to act, but this "
                    "request is allowed and should be carried out.")
        return "database: the requested change was never made (no write tool succeeded)."
    fields = [f"{key.split('/')[0]}.{path}" if path else key
              for key in sorted(set(got) | set(want))
              for path in field_diff(got.get(key), want.get(key))]
    if len(fields) == 1:
        return (f"database: near miss: the end state differs from the reference in one field "
                f"only ({fields[0]}); the call made ({', '.join(writes)}) used a wrong value.")
    return (f"database: the end state differs from the reference in {len(fields)} fields "
            f"({', '.join(sorted(set(fields))[:4])}); the calls made ({', '.join(writes)}) "
            "are not the change this request needs.")


def message_problems(task: Task, messages: list[dict]) -> list[tuple[str, str]]:
    """The conversation's shortcomings in the order the feedback lists them, each as
    ``(what, text)``: ``what`` is ``"confirm"`` for an unconfirmed write, else the
    ``kind:label`` of the required fact that was not told (``causes`` reads it)."""
    problems = []
    said = _said(messages)
    confirmed = False
    for m in messages:
        if m.get("role") == "user" and m.get("confirms"):
            confirmed = True
        if _is_write(m) and m["name"] in CONFIRMABLE and not confirmed:
            problems.append(("confirm", f"the write ({m['name']}) was made without first "
                             "asking the customer to confirm and getting an explicit yes."))
            break
    for fact in task.target["facts"]:
        what = f"{fact['kind']}:{fact['label']}"
        if fact["kind"] == "amount":
            told = _amounts(said)
            if any(abs(x - fact["value"]) < 0.005 for x in told):
                continue
            if told:
                problems.append((what, f"near miss: an amount was told, but not "
                                 f"{fact['label']} (a different number)."))
            else:
                problems.append((what, f"{fact['label']} was never told to the customer."))
        elif fact["kind"] == "refusal" and not _REFUSAL.search(said):
            problems.append((what, f"the reply never told the customer {fact['label']}."))
        elif fact["kind"] == "status" and fact["value"].lower() not in said.lower():
            problems.append((what, f"the reply never stated {fact['label']}."))
    return problems


def score(task: Task, rollout: Rollout) -> Score:
    """Score one rollout of the retail environment (see the module docstring)."""
    trace = rollout.trace if isinstance(rollout.trace, dict) else None
    if rollout.error or not trace or "db" not in trace:
        return Score(reward=0.0, feedback=f"{PREAMBLE} no conversation was recorded.",
                     parts={"db": 0.0, "messages": 0.0})
    db_ok = trace["db"]["hash"] == task.target["expected_hash"]
    problems = [text for _, text in message_problems(task, trace["messages"])]
    parts = {"db": float(db_ok), "messages": float(not problems)}
    lines = [PREAMBLE]
    lines.append("database: the end state matches the reference." if db_ok
                 else db_feedback(task, trace))
    lines.append("messages: " + (" ".join(problems) if problems else
                                 "every required fact was told and every write confirmed."))
    return Score(reward=sum(parts.values()) / 2, feedback="\n".join(lines), parts=parts)
