"""The OpenAI-compatible agent against a scripted chat-completions server on a real socket."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self

import pytest

from capevolve_adapters.openai_agent.adapter import AgentSettings, OpenAIRetailAdapter
from capevolve_adapters.openai_agent.client import ClientConfig
from capevolve_adapters.openai_agent.loop import ModelConfig


class ScriptedServer:
    """A chat-completions server that answers each POST with the next scripted reply.

    A reply is a dict (200 JSON body) or ``(status, body, headers)`` or ``("sleep", s)``.
    Every request body and its headers are kept in ``requests``.
    """

    def __init__(self, script: list) -> None:
        self.script, self.requests = list(script), []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append({"path": self.path, "body": body,
                                       "auth": self.headers.get("Authorization")})
                reply = owner.script.pop(0) if owner.script else (500, {"error": "empty"}, {})
                if isinstance(reply, tuple) and reply[0] == "sleep":
                    time.sleep(reply[1])
                    reply = reply[2]
                status, payload, headers = reply if isinstance(reply, tuple) else (200, reply, {})
                data = json.dumps(payload).encode()
                self.send_response(status)
                for key, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _reply(content=None, calls=(), usage=(50, 10)):
    message = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function",
             "function": {"name": name, "arguments": args if isinstance(args, str)
                          else json.dumps(args)}}
            for i, (name, args) in enumerate(calls)]
    return {"choices": [{"message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]}}


def _adapter(url, retries=2, timeout_s=5.0, prices=(None, None), max_turns=8):
    return OpenAIRetailAdapter(AgentSettings(
        client=ClientConfig(base_url=url, api_key="sk-test", timeout_s=timeout_s,
                            retries=retries, backoff_s=0.01),
        model=ModelConfig(model="scripted-model", temperature=0.3, max_turns=max_turns,
                          usd_per_1m_input=prices[0], usd_per_1m_output=prices[1])))


@pytest.fixture(scope="module")
def cancel_task(retail_tasks):
    """A pending-order cancellation whose gold is one cancel_order call."""
    return next(t for t in retail_tasks.values() if t.metadata["kind"] == "cancel")


def _good_script(task):
    args = task.target["actions"][0]["arguments"]
    amount = task.target["facts"][0]["value"]
    return [
        _reply(calls=[("get_order", {"order_id": args["order_id"]})]),
        _reply(f"I can cancel order #{args['order_id']}. Shall I proceed?"),
        _reply(calls=[("cancel_order", args)]),
        _reply(f"Your order is cancelled; ${amount:.2f} goes back to your card."),
    ]


def test_full_conversation_scores_one_and_sends_policy_tools_and_seed(
        cancel_task, oracle_candidate):
    """A scripted model that confirms, cancels and reports the refund scores 1.0; requests
    carry the policy as system prompt, the tool schemas, the seed, model and API key."""
    with ScriptedServer(_good_script(cancel_task)) as server:
        adapter = _adapter(server.url, prices=(1.0, 2.0))
        rollout = adapter.run_target(oracle_candidate, cancel_task, trial=1, seed=4242)
    assert rollout.error is None
    score = adapter.score(cancel_task, rollout)
    assert score.reward == 1.0, score.feedback
    first = server.requests[0]
    assert first["path"] == "/v1/chat/completions" and first["auth"] == "Bearer sk-test"
    body = first["body"]
    policy = (oracle_candidate / "policy" / "policy.md").read_text()
    assert body["messages"][0] == {"role": "system", "content": policy}
    assert body["seed"] == 4242 and body["model"] == "scripted-model"
    assert body["temperature"] == 0.3
    assert "cancel_order" in {t["function"]["name"] for t in body["tools"]}
    assert server.requests[2]["body"]["messages"][-1] == {"role": "user",
                                                          "content": "Yes, please go ahead."}
    assert rollout.tokens == 4 * 60 and rollout.cost_usd == pytest.approx((200 + 80) / 1e6)
    assert [c.name for c in rollout.tool_calls] == ["get_order", "cancel_order"]


def test_unknown_tool_and_bad_json_are_tool_errors_the_model_sees(cancel_task,
                                                                   oracle_candidate):
    """An unknown tool name and unparseable arguments come back to the model as errors."""
    script = [_reply(calls=[("refund_everything", {}), ("get_order", "{not json")]),
              _reply("Sorry, I could not do that.")]
    with ScriptedServer(script) as server:
        adapter = _adapter(server.url)
        rollout = adapter.run_target(oracle_candidate, cancel_task, trial=0, seed=1)
    tool_msgs = [m for m in server.requests[1]["body"]["messages"] if m["role"] == "tool"]
    assert "unknown tool 'refund_everything'" in tool_msgs[0]["content"]
    assert "not valid JSON" in tool_msgs[1]["content"]
    assert rollout.error is None and rollout.cost_usd is None
    assert adapter.score(cancel_task, rollout).reward < 1.0


def test_rate_limit_and_server_error_are_retried(cancel_task, oracle_candidate):
    """429 (with Retry-After) and 503 are retried with backoff; the rollout then succeeds."""
    script = [(429, {"error": "slow down"}, {"Retry-After": "0"}),
              (503, {"error": "overloaded"}, {})] + _good_script(cancel_task)
    with ScriptedServer(script) as server:
        adapter = _adapter(server.url, retries=2)
        rollout = adapter.run_target(oracle_candidate, cancel_task, trial=0, seed=1)
    assert rollout.error is None and rollout.trace["http_attempts"] == 6
    assert adapter.score(cancel_task, rollout).reward == 1.0


def test_persistent_5xx_is_a_transient_infra_error_not_a_score(cancel_task,
                                                               oracle_candidate):
    """After the bounded retries a 5xx becomes Rollout(error, transient=True)."""
    with ScriptedServer([(500, {"error": "boom"}, {})] * 3) as server:
        rollout = _adapter(server.url, retries=2).run_target(
            oracle_candidate, cancel_task, trial=0, seed=1)
    assert len(server.requests) == 3
    assert rollout.transient and "after 3 attempts" in rollout.error and "500" in rollout.error


def test_timeout_is_transient(cancel_task, oracle_candidate):
    """A server slower than the client timeout is retried, then a transient error."""
    slow = ("sleep", 0.5, _reply("late"))
    with ScriptedServer([slow, slow]) as server:
        rollout = _adapter(server.url, retries=1, timeout_s=0.1).run_target(
            oracle_candidate, cancel_task, trial=0, seed=1)
    assert rollout.transient and "timed out" in rollout.error


def test_client_error_is_not_retried(cancel_task, oracle_candidate):
    """A 401 is a non-transient error after one attempt."""
    with ScriptedServer([(401, {"error": "bad key"}, {})]) as server:
        rollout = _adapter(server.url).run_target(oracle_candidate, cancel_task, trial=0,
                                                   seed=1)
    assert len(server.requests) == 1
    assert not rollout.transient and rollout.error.startswith("HTTP 401")


def test_max_turns_bounds_the_loop(cancel_task, oracle_candidate):
    """A model that keeps calling tools is stopped after max_turns; the rollout is scored."""
    loop = [_reply(calls=[("list_orders", {"user_id": "U001"})])] * 5
    with ScriptedServer(loop) as server:
        rollout = _adapter(server.url, max_turns=3).run_target(
            oracle_candidate, cancel_task, trial=0, seed=1)
    assert len(server.requests) == 3 and rollout.error is None
    assert "max_turns=3" in rollout.trace["notes"][0]


def test_malformed_candidate_never_reaches_the_endpoint(cancel_task, writable_seed):
    """A broken tools.py is a rollout error with file and line; no request is sent."""
    (writable_seed / "tools" / "tools.py").write_text("def oops(:\n")
    with ScriptedServer([]) as server:
        rollout = _adapter(server.url).run_target(writable_seed, cancel_task, trial=0, seed=1)
    assert rollout.error.startswith("tools/tools.py:1: SyntaxError") and not server.requests


def test_settings_from_env_reads_the_key_from_the_named_variable():
    """from_env takes the base URL, model and prices from CAPEVOLVE_OPENAI_* and the key
    from the variable API_KEY_ENV names."""
    settings = AgentSettings.from_env({
        "CAPEVOLVE_OPENAI_BASE_URL": "http://127.0.0.1:11434/v1",
        "CAPEVOLVE_OPENAI_MODEL": "qwen2.5:7b", "CAPEVOLVE_OPENAI_API_KEY_ENV": "MY_KEY",
        "MY_KEY": "secret", "CAPEVOLVE_OPENAI_USD_PER_1M_INPUT": "0.5"})
    assert settings.client.base_url.endswith(":11434/v1") and settings.client.api_key == "secret"
    assert settings.model.model == "qwen2.5:7b"
    assert settings.model.usd_per_1m_input == 0.5 and settings.model.usd_per_1m_output is None
