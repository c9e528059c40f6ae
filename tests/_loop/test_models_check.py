"""`capevolve check` on the agent's endpoint, from the probe rollout against a scripted
server on a real socket: a server that ignores tools, and calls that will queue past
their deadline."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fixtures.chat_server import ChatServer, Sleep, completion

from capevolve._loop.project import check

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "model_adapter.py"
TOOLS = [{"type": "function", "function": {"name": "cancel_order", "parameters": {
    "type": "object", "properties": {"order_id": {"type": "string"}}}}}]
CALL = [{"id": "c1", "type": "function",
         "function": {"name": "cancel_order", "arguments": '{"order_id": "1"}'}}]


def _project(root: Path, url: str, engine: str = "concurrency: 1", agent: str = "",
             tools: bool = True) -> Path:
    root.mkdir()
    shutil.copy(FIXTURE, root / "adapter.py")
    (root / "seed").mkdir()
    (root / "seed" / "prompt.txt").write_text("say yes")
    if tools:
        (root / "seed" / "tools.json").write_text(json.dumps(TOOLS))
    (root / "capevolve.yaml").write_text(
        "name: m\nadapter: adapter.py:ModelAdapter\ncapability_path: seed\n"
        f"engine: {{kind: local, {engine}}}\n"
        f"models:\n  agent: {{base_url: '{url}', model: m, retries: 0{agent}}}\n")
    return root


def _warnings(tmp_path: Path, name: str, answer, **kw) -> list[str]:
    with ChatServer(default=answer) as server:
        found = check(_project(tmp_path / name, server.base_url, **kw))
    assert found["ok"], found["problems"]
    return [w for w in found["warnings"] if w.startswith("models.agent")]


@pytest.mark.slow
def test_a_server_that_ignores_tools_is_named(tmp_path):
    """Tools offered and text that looks like a call instead of a tool call: warned, with
    the count; a real tool call, or no tools offered, is no warning."""
    ignored = _warnings(tmp_path, "a", completion('{"name": "cancel_order", '
                                                  '"arguments": {"order_id": "1"}}'))
    assert len(ignored) == 1 and "offered tools on 1 call(s) and no tool call came back" \
        in ignored[0] and "(1 had text that looks like a call)" in ignored[0]
    named = _warnings(tmp_path, "b", completion("I will call cancel_order(1) now"))
    assert "(1 had text that looks like a call)" in named[0]
    plain = _warnings(tmp_path, "c", completion("yes"))
    assert "no tool call came back:" in plain[0]
    assert _warnings(tmp_path, "d", completion(None, tool_calls=CALL)) == []
    assert _warnings(tmp_path, "e", completion("yes"), tools=False) == []


@pytest.mark.slow
def test_rollouts_in_flight_past_the_slots_and_the_deadline_are_named(tmp_path):
    """The probe measures the call time: 8 rollouts in flight on 2 declared slots queue
    (warned), and 4 calls ahead at the measured time pass deadline_s (warned); one
    rollout at a time on the same endpoint is no warning."""
    slow = Sleep(0.4, completion("yes"))
    found = _warnings(tmp_path, "a", slow, engine="concurrency: 8",
                      agent=", concurrency: 2, deadline_s: 1.2", tools=False)
    assert len(found) == 2, found
    assert "runs up to 8 rollouts at once but the endpoint declares 2 slot(s)" in found[0]
    assert "8 rollouts in flight on 2 slot(s) wait about" in found[1]
    assert "past deadline_s 1.2" in found[1]
    undeclared = _warnings(tmp_path, "b", slow, engine="concurrency: 8",
                           agent=", deadline_s: 2", tools=False)
    assert len(undeclared) == 1 and "one call at a time (no slots declared)" in undeclared[0]
    assert _warnings(tmp_path, "c", slow, agent=", concurrency: 2, deadline_s: 1.2",
                     tools=False) == []
