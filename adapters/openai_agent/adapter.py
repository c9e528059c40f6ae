"""OpenAIRetailAdapter: the retail environment with a real model behind an OpenAI-compatible
chat-completions endpoint (OpenAI, vLLM, Ollama, llama.cpp server, ...).

Same tasks and scorer as :class:`retail.adapter.RetailAdapter`; only the agent differs.
Configuration comes from :class:`AgentSettings` (``from_env`` reads ``CAPEVOLVE_OPENAI_*``,
see README.md). The per-trial seed is sent as ``seed``. Tokens are the endpoint's reported
usage; cost is computed only when both prices are configured (else None, never 0).
Persistent 429 / 5xx / timeouts give ``Rollout(error=..., transient=True)``: missing data,
never a 0 reward. Every model call is bounded (``max_tokens``, a per-call deadline inside
the rollout's wall-time bound) and so is the rollout (wall time, tokens): a rollout that
reaches a bound is ``Rollout(error="bound reached: ...")`` with ``trace["bound"]`` naming
it and the tokens it spent (missing data, not a score; not retried). A malformed candidate
is a rollout error naming file and line.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capevolve.adapter import Rollout, Task
from capevolve.errors import ConfigError

from ..retail.adapter import RetailAdapter, customer, db_summary
from ..retail.capability import CapabilityError, load_capability
from ..retail.store import fresh_db
from ..retail.toolbox import ToolBox
from .client import ChatClient, ClientConfig, EndpointError, EndpointUnavailable
from .loop import BoundReached, ModelConfig, Usage, run_conversation

ENV_PREFIX = "CAPEVOLVE_OPENAI_"


@dataclass(frozen=True)
class AgentSettings:
    """Endpoint and model settings for the OpenAI-compatible agent."""

    client: ClientConfig
    model: ModelConfig

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AgentSettings:
        """Read ``CAPEVOLVE_OPENAI_{BASE_URL, MODEL, API_KEY_ENV, TEMPERATURE, MAX_TURNS,
        MAX_TOKENS, TIMEOUT_S, CALL_DEADLINE_S, ROLLOUT_WALL_S, ROLLOUT_TOKENS, RETRIES,
        BACKOFF_S, USD_PER_1M_INPUT, USD_PER_1M_OUTPUT}``; the API key is read from the
        variable named by API_KEY_ENV (default ``OPENAI_API_KEY``). A value that is not a
        number of the right kind (bounds and counts > 0, prices and backoff >= 0) is a
        ConfigError naming the variable."""
        source: Mapping[str, str] = os.environ if env is None else env

        def get(name: str, default: str) -> str:
            return source.get(ENV_PREFIX + name, default)

        def num(name: str, default: str, kind: type = float, low: float = 0.0,
                strict: bool = True) -> Any:
            raw = get(name, default)
            try:
                value = kind(raw)
            except ValueError:
                value = None
            if value is None or not math.isfinite(value) or value < low \
                    or (strict and value == low):
                rule = f"{'>' if strict else '>='} {low:g}"
                raise ConfigError(f"{ENV_PREFIX}{name}={raw!r}: expected a "
                                  f"{'whole ' if kind is int else ''}number {rule}")
            return value

        def price(name: str) -> float | None:
            return num(name, "", strict=False) if source.get(ENV_PREFIX + name) else None

        key_var = get("API_KEY_ENV", "OPENAI_API_KEY")
        return cls(
            client=ClientConfig(base_url=get("BASE_URL", "http://127.0.0.1:8000/v1"),
                                api_key=source.get(key_var) or None,
                                timeout_s=num("TIMEOUT_S", "60"),
                                deadline_s=num("CALL_DEADLINE_S", "180"),
                                retries=num("RETRIES", "3", int, strict=False),
                                backoff_s=num("BACKOFF_S", "1.0", strict=False)),
            model=ModelConfig(model=get("MODEL", "gpt-4o-mini"),
                              temperature=num("TEMPERATURE", "0", strict=False),
                              max_turns=num("MAX_TURNS", "12", int),
                              max_tokens=num("MAX_TOKENS", "512", int),
                              rollout_wall_s=num("ROLLOUT_WALL_S", "240"),
                              rollout_tokens=num("ROLLOUT_TOKENS", "60000", int),
                              usd_per_1m_input=price("USD_PER_1M_INPUT"),
                              usd_per_1m_output=price("USD_PER_1M_OUTPUT")))


class OpenAIRetailAdapter(RetailAdapter):
    """The retail tasks and scorer, with a chat model as the agent."""

    def __init__(self, settings: AgentSettings | None = None) -> None:
        self.settings = settings or AgentSettings.from_env()

    def run_target(self, candidate: Path, task: Task, *, trial: int, seed: int) -> Rollout:
        """One conversation between the model and the scripted customer on ``task``."""
        try:
            capability = load_capability(Path(candidate))
        except CapabilityError as exc:
            return Rollout(error=str(exc))
        box = ToolBox(capability.tools, fresh_db())
        client = ChatClient(self.settings.client)
        usage = Usage()
        try:
            run_conversation(client, self.settings.model, capability, customer(task), box,
                             seed, usage)
        except BoundReached as exc:
            return Rollout(error=str(exc), tokens=usage.tokens,
                           cost_usd=usage.cost(self.settings.model),
                           trace={"messages": box.messages, "bound": exc.bound,
                                  "turns": usage.turns, "notes": usage.notes,
                                  "http_attempts": client.attempts})
        except EndpointUnavailable as exc:
            return Rollout(error=str(exc), transient=True, tokens=usage.tokens,
                           cost_usd=usage.cost(self.settings.model),
                           trace={"messages": box.messages})
        except EndpointError as exc:
            return Rollout(error=str(exc), tokens=usage.tokens,
                           cost_usd=usage.cost(self.settings.model),
                           trace={"messages": box.messages})
        final = next((m["content"] for m in reversed(box.messages)
                      if m["role"] == "assistant"), "")
        trace = {"messages": box.messages, "db": db_summary(box.db), "trial": trial,
                 "model": self.settings.model.model, "turns": usage.turns,
                 "http_attempts": client.attempts, "notes": usage.notes}
        return Rollout(output=final, trace=trace, tool_calls=box.calls, tokens=usage.tokens,
                       cost_usd=usage.cost(self.settings.model))
