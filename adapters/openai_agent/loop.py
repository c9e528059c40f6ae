"""The tool-calling agent loop: a chat model serves the scripted customer through the tools.

Contract of :func:`run_conversation`: the system prompt is the candidate's policy text, the
tools are the candidate's ``tools.py`` (schemas from their signatures); each model turn
either calls tools (results, including errors such as an unknown tool name or arguments
that are not JSON, go back to the model) or speaks to the customer, who answers
confirmation questions and otherwise ends the conversation. The returned messages use the
retail trace format (``retail.scorer`` reads them).

Every model call is bounded (:class:`ModelConfig`): ``max_tokens`` per answer (an answer cut
there is noted in ``Usage.notes``), and each call's deadline is at most what is left of the
rollout's wall-time bound ``rollout_wall_s``. At most ``max_turns`` model calls (then the
conversation ends and is scored, with a note). A rollout whose wall time or token count
(``rollout_tokens``, prompt + completion as reported) reaches its bound is stopped and
raises :class:`BoundReached` naming the bound: the adapter records it as an error (missing
data), never as a score.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from ..retail import user
from ..retail.capability import Capability
from ..retail.toolbox import ToolBox, tool_schemas
from .client import ChatClient, EndpointUnavailable


@dataclass(frozen=True)
class ModelConfig:
    """What to ask the endpoint for."""

    model: str
    temperature: float = 0.0
    max_turns: int = 12
    usd_per_1m_input: float | None = None
    usd_per_1m_output: float | None = None
    max_tokens: int = 512
    """Bound of one model answer (sent as ``max_tokens``)."""
    rollout_wall_s: float = 240.0
    """Wall-time bound of one rollout (every model call's deadline fits inside it); below
    the engine's `timeout_s` (300 in benchmarks/retail/openai), so the bound is what stops it."""
    rollout_tokens: int = 60_000
    """Token bound of one rollout: prompt + completion tokens summed over its calls."""


class BoundReached(Exception):
    """A rollout reached one of its bounds; ``bound`` is ``wall_time`` or ``tokens``."""

    def __init__(self, bound: str, message: str) -> None:
        super().__init__(message)
        self.bound = bound


@dataclass
class Usage:
    """Token usage summed over the conversation (None when the endpoint never said)."""

    prompt: int | None = None
    completion: int | None = None
    turns: int = 0
    notes: list[str] = field(default_factory=list)

    def add(self, usage: dict | None) -> None:
        if not usage:
            return
        self.prompt = (self.prompt or 0) + int(usage.get("prompt_tokens") or 0)
        self.completion = (self.completion or 0) + int(usage.get("completion_tokens") or 0)

    @property
    def tokens(self) -> int | None:
        return None if self.prompt is None else self.prompt + (self.completion or 0)

    def cost(self, config: ModelConfig) -> float | None:
        """Dollars when both prices are configured and usage was reported, else None."""
        if self.prompt is None or config.usd_per_1m_input is None or \
                config.usd_per_1m_output is None:
            return None
        return (self.prompt * config.usd_per_1m_input
                + (self.completion or 0) * config.usd_per_1m_output) / 1e6


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


def _ask(client: ChatClient, config: ModelConfig, payload: dict, usage: Usage,
         started: float) -> dict:
    """One bounded model call; BoundReached when the rollout's budget is spent."""
    left = config.rollout_wall_s - (time.monotonic() - started)
    if left <= 0:
        raise BoundReached("wall_time", f"bound reached: rollout wall time "
                           f"{config.rollout_wall_s:g}s after {usage.turns - 1} model calls")
    try:
        response = client.complete(payload, deadline_s=left)
    except EndpointUnavailable:
        if time.monotonic() - started >= config.rollout_wall_s:
            raise BoundReached("wall_time", f"bound reached: rollout wall time "
                               f"{config.rollout_wall_s:g}s during model call "
                               f"{usage.turns}") from None
        raise
    usage.add(response.get("usage"))
    choice = (response.get("choices") or [{}])[0]
    if choice.get("finish_reason") == "length":
        usage.notes.append(f"model call {usage.turns} cut at max_tokens={config.max_tokens}")
    if usage.tokens is not None and usage.tokens >= config.rollout_tokens:
        raise BoundReached("tokens", f"bound reached: rollout token budget "
                           f"{config.rollout_tokens} ({usage.tokens} tokens after "
                           f"{usage.turns} model calls)")
    return response


def run_conversation(client: ChatClient, config: ModelConfig, capability: Capability,
                     record: dict, box: ToolBox, seed: int,
                     usage: Usage | None = None) -> Usage:
    """Serve one customer; messages accumulate in ``box.messages`` and usage in ``usage``
    (see the module docstring)."""
    usage, tools = usage or Usage(), tool_schemas(capability.tools)
    started = time.monotonic()
    first = user.opening(record)
    box.messages.append(first)
    api = [{"role": "system", "content": capability.policy_text},
           {"role": "user", "content": first["content"]}]
    while usage.turns < config.max_turns:
        usage.turns += 1
        response = _ask(client, config, {
            "model": config.model, "messages": api, "tools": tools,
            "temperature": config.temperature, "seed": seed,
            "max_tokens": config.max_tokens}, usage, started)
        message = (response.get("choices") or [{}])[0].get("message") or {}
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
            return usage
        box.messages.append(answer)
        api.append({"role": "user", "content": answer["content"]})
    usage.notes.append(f"stopped after max_turns={config.max_turns} model calls")
    return usage
