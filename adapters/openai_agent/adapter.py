"""OpenAIRetailAdapter: the retail environment with a real model behind an OpenAI-compatible
chat-completions endpoint (OpenAI, vLLM, Ollama, llama.cpp server, ...).

Same tasks and scorer as :class:`retail.adapter.RetailAdapter`; only the agent differs.
The model is the project's ``models.agent`` (capevolve.yaml), reached through
:func:`capevolve.models.agent_client`: settings pinned in the run, every call counted
(tokens and cost of the rollout are capevolve's meter's, retries included). The per-trial
seed is sent as ``seed``. An endpoint that stays unavailable gives
``Rollout(error=..., transient=True)`` (missing data, never a 0 reward); a refused request
(auth, context length) is a rollout error naming it; a rollout that reaches a bound
(``models.rollout`` limits, or the wall time ``rollout_wall_s``) is
``Rollout(error="bound reached: ...")`` with ``trace["bound"]`` naming it. A malformed
candidate is a rollout error naming file and line.
"""

from __future__ import annotations

from pathlib import Path

from capevolve.adapter import Rollout, Task
from capevolve.errors import ModelError, ModelUnavailable, RolloutLimitReached
from capevolve.models import agent_client

from ..retail.adapter import RetailAdapter, customer, db_summary
from ..retail.capability import CapabilityError, load_capability
from ..retail.store import fresh_db
from ..retail.toolbox import ToolBox
from .loop import BoundReached, Turns, run_conversation

ROLLOUT_WALL_S = 240.0
"""Wall-time bound of one rollout, inside the engine's ``timeout_s`` (300 in
benchmarks/retail/openai), so the bound is what stops a slow rollout."""


class OpenAIRetailAdapter(RetailAdapter):
    """The retail tasks and scorer, with a chat model as the agent."""

    def __init__(self, rollout_wall_s: float = ROLLOUT_WALL_S) -> None:
        self.rollout_wall_s = rollout_wall_s

    def run_target(self, candidate: Path, task: Task, *, trial: int, seed: int) -> Rollout:
        """One conversation between the model and the scripted customer on ``task``."""
        try:
            capability = load_capability(Path(candidate))
        except CapabilityError as exc:
            return Rollout(error=str(exc))
        box = ToolBox(capability.tools, fresh_db())
        client = agent_client()
        turns = Turns()
        try:
            run_conversation(client, capability, customer(task), box, seed,
                             self.rollout_wall_s, turns)
        except (BoundReached, RolloutLimitReached) as exc:
            return Rollout(error=str(exc), trace={
                "messages": box.messages, "bound": exc.bound, "turns": turns.turns,
                "notes": turns.notes})
        except ModelUnavailable as exc:
            return Rollout(error=str(exc), transient=True, trace={"messages": box.messages})
        except ModelError as exc:
            return Rollout(error=str(exc), trace={"messages": box.messages,
                                                  "model_failure": exc.failure})
        final = next((m["content"] for m in reversed(box.messages)
                      if m["role"] == "assistant"), "")
        trace = {"messages": box.messages, "db": db_summary(box.db), "trial": trial,
                 "model": client.settings.model, "turns": turns.turns, "notes": turns.notes}
        return Rollout(output=final, trace=trace, tool_calls=box.calls)
