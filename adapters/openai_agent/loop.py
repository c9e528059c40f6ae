"""The tool-calling agent loop: a chat model serves the scripted customer through the tools.

Contract of :func:`run_conversation`: the system prompt is the candidate's policy text, the
tools are the candidate's ``tools.py`` (schemas from their signatures); each model turn
either calls tools (results, including errors such as an unknown tool name or arguments
that are not JSON, go back to the model) or speaks to the customer, who answers
confirmation questions and otherwise ends the conversation. The returned messages use the
retail trace format (``retail.scorer`` reads them).

Every model call goes through capevolve's client (:func:`capevolve.models.agent_client`):
the pinned model settings, the per-rollout limits (``models.rollout``: reaching one raises
RolloutLimitReached naming it) and the usage meter are its business. Each call's deadline
is at most what is left of the rollout's wall-time bound; past it :class:`BoundReached`.
A tool call cut at the token bound never reaches the conversation (the client removes it):
the turn is noted as truncated and the model is asked again, as if it had said nothing.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from capevolve.errors import ModelUnavailable
from capevolve.models import ModelClient

from ..retail import user
from ..retail.capability import Capability
from ..retail.toolbox import ToolBox, tool_schemas


class BoundReached(Exception):
    """The rollout's wall-time bound passed; ``bound`` is ``wall_time``."""

    def __init__(self, bound: str, message: str) -> None:
        super().__init__(message)
        self.bound = bound


@dataclass
class Turns:
    """The conversation's model calls and notes."""

    turns: int = 0
    notes: list[str] = field(default_factory=list)


def _arguments(raw: Any) -> tuple[dict | None, str | None]:
    if isinstance(raw, dict):
        return raw, None
    try:
        value = json.loads(raw or "{}")
    except (TypeError, ValueError):
        return None, "the tool arguments are not valid JSON"
    return (value, None) if isinstance(value, dict) else (None, "arguments must be an object")


def _call_tools(box: ToolBox, calls: list[dict], api: list[dict]) -> None:
    for call in calls:
        fn = call.get("function") or {}
        arguments, problem = _arguments(fn.get("arguments"))
        if problem:
            text = f"Error: {problem}"
            box.messages.append({"role": "tool", "name": fn.get("name"), "arguments": None,
                                 "content": text, "ok": False, "write": False})
        else:
            text = box.call(str(fn.get("name")), arguments).text()
        api.append({"role": "tool", "tool_call_id": call.get("id"), "content": text})


def _ask(client: ModelClient, payload: dict, turns: Turns, started: float,
         wall_s: float) -> dict:
    """One model call inside the rollout's wall-time bound."""
    left = wall_s - (time.monotonic() - started)
    if left <= 0:
        raise BoundReached("wall_time", f"bound reached: rollout wall time {wall_s:g}s "
                           f"after {turns.turns - 1} model calls")
    try:
        return client.complete(payload, deadline_s=left)
    except ModelUnavailable:
        if time.monotonic() - started >= wall_s:
            raise BoundReached("wall_time", f"bound reached: rollout wall time {wall_s:g}s "
                               f"during model call {turns.turns}") from None
        raise


def run_conversation(client: ModelClient, capability: Capability, record: dict,
                     box: ToolBox, seed: int, wall_s: float,
                     turns: Turns | None = None) -> Turns:
    """Serve one customer; messages accumulate in ``box.messages`` (see the module
    docstring)."""
    turns, tools = turns or Turns(), tool_schemas(capability.tools)
    started = time.monotonic()
    first = user.opening(record)
    box.messages.append(first)
    api = [{"role": "system", "content": capability.policy_text},
           {"role": "user", "content": first["content"]}]
    while True:
        turns.turns += 1
        response = _ask(client, {"messages": api, "tools": tools, "seed": seed}, turns,
                        started, wall_s)
        choice = (response.get("choices") or [{}])[0]
        message = choice.get("message") or {}
        if choice.get("cut"):
            turns.notes.append(f"model call {turns.turns}: a tool call cut at max_tokens="
                               f"{client.settings.max_tokens} was dropped")
            continue
        if choice.get("finish_reason") == "length":
            turns.notes.append(f"model call {turns.turns} cut at max_tokens="
                               f"{client.settings.max_tokens}")
        calls = message.get("tool_calls") or []
        api.append({"role": "assistant", "content": message.get("content"),
                    **({"tool_calls": calls} if calls else {})})
        if message.get("content"):
            box.messages.append({"role": "assistant", "content": message["content"]})
        if calls:
            _call_tools(box, calls, api)
            continue
        answer = user.reply(record, message.get("content") or "")
        if answer is None:
            return turns
        box.messages.append(answer)
        api.append({"role": "user", "content": answer["content"]})
