"""The OpenAI-compatible agent against a scripted chat-completions server on a real socket."""

from __future__ import annotations

import json
import time

import pytest
from fixtures.chat_server import ChatServer, Reply, Sleep

from capevolve_adapters.openai_agent.adapter import AgentSettings, OpenAIRetailAdapter
from capevolve_adapters.openai_agent.client import ClientConfig
from capevolve_adapters.openai_agent.loop import ModelConfig


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


def _adapter(url, retries=2, timeout_s=5.0, prices=(None, None), max_turns=8, **bounds):
    return OpenAIRetailAdapter(AgentSettings(
        client=ClientConfig(base_url=url, api_key="sk-test", timeout_s=timeout_s,
                            retries=retries, backoff_s=0.01),
        model=ModelConfig(model="scripted-model", temperature=0.3, max_turns=max_turns,
                          usd_per_1m_input=prices[0], usd_per_1m_output=prices[1],
                          **bounds)))


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
    with ChatServer(_good_script(cancel_task)) as server:
        adapter = _adapter(server.base_url, prices=(1.0, 2.0))
        rollout = adapter.run_target(oracle_candidate, cancel_task, trial=1, seed=4242)
    assert rollout.error is None
    score = adapter.score(cancel_task, rollout)
    assert score.reward == 1.0, score.feedback
    first = server.requests[0]
    assert first["path"] == "/v1/chat/completions"
    assert first["headers"]["Authorization"] == "Bearer sk-test"
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
    with ChatServer(script) as server:
        adapter = _adapter(server.base_url)
        rollout = adapter.run_target(oracle_candidate, cancel_task, trial=0, seed=1)
    tool_msgs = [m for m in server.requests[1]["body"]["messages"] if m["role"] == "tool"]
    assert "unknown tool 'refund_everything'" in tool_msgs[0]["content"]
    assert "not valid JSON" in tool_msgs[1]["content"]
    assert rollout.error is None and rollout.cost_usd is None
    assert adapter.score(cancel_task, rollout).reward < 1.0


def test_rate_limit_and_server_error_are_retried(cancel_task, oracle_candidate):
    """429 (with Retry-After) and 503 are retried with backoff; the rollout then succeeds."""
    script = [Reply(429, {"error": "slow down"}, {"Retry-After": "0"}),
              Reply(503, {"error": "overloaded"})] + _good_script(cancel_task)
    with ChatServer(script) as server:
        adapter = _adapter(server.base_url, retries=2)
        rollout = adapter.run_target(oracle_candidate, cancel_task, trial=0, seed=1)
    assert rollout.error is None and rollout.trace["http_attempts"] == 6
    assert adapter.score(cancel_task, rollout).reward == 1.0


def test_persistent_5xx_is_a_transient_infra_error_not_a_score(cancel_task,
                                                               oracle_candidate):
    """After the bounded retries a 5xx becomes Rollout(error, transient=True)."""
    with ChatServer([Reply(500, {"error": "boom"})] * 3) as server:
        rollout = _adapter(server.base_url, retries=2).run_target(
            oracle_candidate, cancel_task, trial=0, seed=1)
    assert len(server.requests) == 3
    assert rollout.transient and "after 3 attempts" in rollout.error and "500" in rollout.error


def test_timeout_is_transient(cancel_task, oracle_candidate):
    """A server slower than the client timeout is retried, then a transient error."""
    slow = Sleep(0.5, _reply("late"))
    with ChatServer([slow, slow]) as server:
        rollout = _adapter(server.base_url, retries=1, timeout_s=0.1).run_target(
            oracle_candidate, cancel_task, trial=0, seed=1)
    assert rollout.transient and "timed out" in rollout.error


def test_client_error_is_not_retried(cancel_task, oracle_candidate):
    """A 401 is a non-transient error after one attempt."""
    with ChatServer([Reply(401, {"error": "bad key"})]) as server:
        rollout = _adapter(server.base_url).run_target(oracle_candidate, cancel_task, trial=0,
                                                   seed=1)
    assert len(server.requests) == 1
    assert not rollout.transient and rollout.error.startswith("HTTP 401")


def test_max_turns_bounds_the_loop(cancel_task, oracle_candidate):
    """A model that keeps calling tools is stopped after max_turns; the rollout is scored."""
    loop = [_reply(calls=[("list_orders", {"user_id": "U001"})])] * 5
    with ChatServer(loop) as server:
        rollout = _adapter(server.base_url, max_turns=3).run_target(
            oracle_candidate, cancel_task, trial=0, seed=1)
    assert len(server.requests) == 3 and rollout.error is None
    assert "max_turns=3" in rollout.trace["notes"][0]


def test_malformed_candidate_never_reaches_the_endpoint(cancel_task, writable_seed):
    """A broken tools.py is a rollout error with file and line; no request is sent."""
    (writable_seed / "tools" / "tools.py").write_text("def oops(:\n")
    with ChatServer([]) as server:
        rollout = _adapter(server.base_url).run_target(writable_seed, cancel_task, trial=0, seed=1)
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


def test_every_call_sends_max_tokens_and_a_cut_answer_is_noted(cancel_task, oracle_candidate):
    """max_tokens bounds each answer; an answer cut there (finish_reason=length) is noted in
    the trace and the conversation goes on."""
    cut = _reply("I will look into your ord")
    cut["choices"][0]["finish_reason"] = "length"
    with ChatServer([cut, _reply("Anything else?")]) as server:
        rollout = _adapter(server.base_url, max_tokens=64).run_target(
            oracle_candidate, cancel_task, trial=0, seed=1)
    assert [r["body"]["max_tokens"] for r in server.requests] == [64] * len(server.requests)
    assert rollout.error is None
    assert "model call 1 cut at max_tokens=64" in rollout.trace["notes"]


def test_the_token_budget_stops_the_rollout_as_an_error(cancel_task, oracle_candidate):
    """A model that keeps calling tools with large prompts reaches rollout_tokens: the
    rollout stops there and is an error naming the bound (missing data, not retried), with
    the tokens it spent."""
    loop = [_reply(calls=[("list_orders", {"user_id": "U001"})], usage=(1000, 100))] * 10
    with ChatServer(loop) as server:
        adapter = _adapter(server.base_url, max_turns=10, rollout_tokens=2500)
        rollout = adapter.run_target(oracle_candidate, cancel_task, trial=0, seed=1)
    assert len(server.requests) == 3
    assert rollout.error.startswith("bound reached: rollout token budget 2500")
    assert rollout.trace["bound"] == "tokens" and not rollout.transient
    assert rollout.tokens == 3300 and rollout.output is None


def test_the_wall_time_bound_stops_a_slow_conversation(cancel_task, oracle_candidate):
    """Turns that each take 0.3 s reach rollout_wall_s=0.8 within about a second: an
    error naming the wall-time bound, never a score."""
    slow = Sleep(0.3, _reply(calls=[("list_orders", {"user_id": "U001"})]))
    with ChatServer(default=slow) as server:
        adapter = _adapter(server.base_url, max_turns=50, rollout_wall_s=0.8)
        t0 = time.monotonic()
        rollout = adapter.run_target(oracle_candidate, cancel_task, trial=0, seed=1)
        took = time.monotonic() - t0
    assert rollout.trace["bound"] == "wall_time" and not rollout.transient
    assert rollout.error.startswith("bound reached: rollout wall time 0.8s")
    assert took < 1.6 and len(server.requests) <= 4


def test_a_call_in_flight_is_cut_by_the_rollout_deadline(cancel_task, oracle_candidate):
    """A single answer slower than the rollout's whole wall-time bound is cut at that bound
    (not at the 5 s socket timeout) and recorded as the bound."""
    with ChatServer(default=Sleep(3.0, _reply("late"))) as server:
        adapter = _adapter(server.base_url, rollout_wall_s=0.5)
        t0 = time.monotonic()
        rollout = adapter.run_target(oracle_candidate, cancel_task, trial=0, seed=1)
        took = time.monotonic() - t0
    assert rollout.trace["bound"] == "wall_time" and "during model call 1" in rollout.error
    assert took < 1.5


def test_bounds_have_sane_defaults_and_read_from_env():
    """Defaults bound every call and rollout; CAPEVOLVE_OPENAI_* override them."""
    default = AgentSettings.from_env({})
    assert default.model.max_tokens == 512 and default.model.rollout_wall_s == 240
    assert default.model.rollout_tokens == 60_000 and default.client.deadline_s == 180
    settings = AgentSettings.from_env({
        "CAPEVOLVE_OPENAI_MAX_TOKENS": "128", "CAPEVOLVE_OPENAI_ROLLOUT_WALL_S": "30",
        "CAPEVOLVE_OPENAI_ROLLOUT_TOKENS": "9000", "CAPEVOLVE_OPENAI_CALL_DEADLINE_S": "20"})
    assert settings.model.max_tokens == 128 and settings.model.rollout_wall_s == 30
    assert settings.model.rollout_tokens == 9000 and settings.client.deadline_s == 20


@pytest.mark.parametrize("name, value", [("MAX_TOKENS", "lots"), ("MAX_TOKENS", "0"),
                                         ("ROLLOUT_WALL_S", "-1"), ("ROLLOUT_WALL_S", "nan"),
                                         ("RETRIES", "1.5"), ("USD_PER_1M_INPUT", "free")])
def test_a_bad_setting_is_one_line_naming_the_variable(name, value):
    """A bound that is not a positive number (or a price that is not a number) is refused
    with the variable's name, never silently unbounded."""
    from capevolve.errors import ConfigError

    with pytest.raises(ConfigError, match=f"CAPEVOLVE_OPENAI_{name}="):
        AgentSettings.from_env({f"CAPEVOLVE_OPENAI_{name}": value})
