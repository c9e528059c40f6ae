"""What ``capevolve check`` says about the agent's endpoint, from its probe rollout's meter."""

from __future__ import annotations

import math
from typing import Any

from capevolve.config import ProjectConfig


def model_warnings(config: ProjectConfig, probe: dict[str, Any]) -> list[str]:
    """Warnings on the agent endpoint: tool calls ignored, more rollouts in flight than its
    slots, or an estimated queueing wait past ``deadline_s``."""
    agent = config.models.agent
    if agent is None:
        return []
    out: list[str] = []
    offers, calls, text = (int(probe.get(k) or 0)
                           for k in ("tool_offers", "tool_answers", "call_text"))
    if offers and not calls:
        looks = f" ({text} had text that looks like a call)" if text else ""
        out.append(f"models.agent: the probe rollout offered tools on {offers} call(s) and no "
                   f"tool call came back{looks}: the server may ignore `tools` (llama.cpp "
                   "needs --jinja and a tool-capable chat template; vLLM needs "
                   "--enable-auto-tool-choice and a --tool-call-parser)")
    answered = int(probe.get("attempts") or 0) - int(probe.get("unknown_attempts") or 0) \
        - int(probe.get("rejected_attempts") or 0)
    seconds = float(probe.get("answered_s") or 0.0)
    if answered <= 0 or seconds <= 0:
        return out
    per_call = seconds / answered
    cap = config.engine.max_in_flight
    in_flight = min(config.engine.concurrency, cap) if cap else config.engine.concurrency
    slots = agent.concurrency
    if slots is not None and in_flight > slots:
        out.append(f"models.agent: the engine runs up to {in_flight} rollouts at once but the "
                   f"endpoint declares {slots} slot(s) (models.agent.concurrency): calls will "
                   "queue; lower engine.concurrency (or engine.max_in_flight) to the slots")
    wait = per_call * math.ceil(in_flight / (slots or 1))
    if wait > agent.deadline_s:
        served = f"{slots} slot(s)" if slots else "one call at a time (no slots declared)"
        out.append(f"models.agent: at the probe's {per_call:.1f}s per call, {in_flight} "
                   f"rollouts in flight on {served} wait about {wait:.0f}s for a call, past "
                   f"deadline_s {agent.deadline_s:g}: calls will time out and be paid again")
    return out
