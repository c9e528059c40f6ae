"""The model client against the real llama.cpp server (Gemma 3 270M base, ``llm`` tier):
a real tool call travels the whole path with the repository's tool-capable chat template,
a cut one never reaches the next request, the prompt is measured by the server's own
tokenizer, and `check` names a server that drops tools."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fixtures.real_model import llama_tools_url, llama_url  # noqa: F401

from capevolve._loop.project import check
from capevolve.config_models import ModelConfig, PriceConfig
from capevolve.models import Meter, ModelClient, resolve

pytestmark = pytest.mark.llm
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "model_adapter.py"
TOOLS = [{"type": "function", "function": {
    "name": "cancel_order", "description": "Cancel an order",
    "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                   "required": ["order_id"]}}}]
ASK = [{"role": "user", "content": "Cancel order 42."}]


def _client(url: str, max_tokens: int) -> ModelClient:
    return ModelClient(resolve(ModelConfig(
        base_url=url, model="gemma", max_tokens=max_tokens, deadline_s=300, retries=1,
        price=PriceConfig(input=0, output=0)), "agent"), Meter())


def test_a_real_tool_call_travels_and_a_cut_one_never_reaches_the_next_request(
        llama_tools_url):  # noqa: F811
    """With tool_choice required the server constrains the answer to one tool call: it
    comes back parsed, is counted as a tool answer, and its result goes back in the next
    turn (HTTP 200). With a bound too small for the call, the cut call is removed from the
    answer, so the conversation that continues from it is accepted too. The prompt the
    server's tokenizer measures (tools included) is the prompt it reports."""
    client = _client(llama_tools_url, 48)
    measured = client.prompt_tokens(ASK, TOOLS)
    first = client.complete({"messages": ASK, "tools": TOOLS, "tool_choice": "required",
                             "parallel_tool_calls": False, "stop": ["</tool_call>"]})
    choice = first["choices"][0]
    calls = choice["message"]["tool_calls"]
    assert choice["finish_reason"] == "tool_calls" and calls[0]["function"]["name"] == \
        "cancel_order", choice
    assert measured == first["usage"]["prompt_tokens"]
    history = [*ASK, {"role": "assistant", "content": "", "tool_calls": calls},
               {"role": "tool", "tool_call_id": calls[0]["id"], "content": "cancelled"}]
    second = client.complete({"messages": history, "tools": TOOLS})
    assert second["choices"][0]["message"] is not None
    assert client.meter.counts["tool_answers"] >= 1 and client.meter.counts["attempts"] == 2

    cutter = _client(llama_tools_url, 6)
    cut = cutter.complete({"messages": ASK, "tools": TOOLS, "tool_choice": "required"})
    choice = cut["choices"][0]
    assert choice["finish_reason"] == "length" and cutter.meter.counts["truncated"] == 1
    assert not choice["message"].get("tool_calls")  # (removed by the client, if parsed)
    nxt = [*ASK, {"role": "assistant", "content": choice["message"]["content"] or ""},
           {"role": "user", "content": "Go on."}]
    assert cutter.complete({"messages": nxt, "tools": TOOLS})["choices"]


def test_check_names_a_server_that_drops_tools(llama_url, tmp_path):  # noqa: F811
    """Without a tool-capable template llama.cpp drops `tools`: the probe rollout offers
    them, no tool call comes back, and check says so."""
    root = tmp_path / "p"
    root.mkdir()
    shutil.copy(FIXTURE, root / "adapter.py")
    (root / "seed").mkdir()
    (root / "seed" / "prompt.txt").write_text("Cancel order")
    (root / "seed" / "tools.json").write_text(json.dumps(TOOLS))
    (root / "capevolve.yaml").write_text(
        "name: m\nadapter: adapter.py:ModelAdapter\ncapability_path: seed\n"
        "engine: {kind: local, concurrency: 1}\n"
        f"models:\n  agent: {{base_url: '{llama_url}', model: gemma, max_tokens: 16, "
        "deadline_s: 300}\n")
    found = check(root)
    assert found["ok"], found["problems"]
    assert any("no tool call came back" in w for w in found["warnings"]), found["warnings"]
