"""The OpenAI-compatible agent against a scripted chat-completions server on a real socket."""

from __future__ import annotations

import json
import time

import pytest
from fixtures.chat_server import ChatServer, Reply, Sleep

from capevolve.config_models import ModelConfig, ModelsConfig, PriceConfig, RolloutLimits
from capevolve.models import Meter, resolve, scope
from capevolve_adapters.openai_agent.adapter import OpenAIRetailAdapter


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


class _Run:
    """The adapter with an agent model scope, as the engine opens one per unit."""

    def __init__(self, url, retries=2, prices=(None, None), max_tokens=512,
                 rollout_wall_s=240.0, max_tokens_per_rollout=None, max_turns=None):
        price = None if prices[0] is None else PriceConfig(input=prices[0], output=prices[1])
        models = ModelsConfig(rollout=RolloutLimits(max_tokens=max_tokens_per_rollout,
                                                     max_turns=max_turns))
        self.settings = resolve(ModelConfig(
            base_url=url, model="scripted-model", api_key_env="CAPEVOLVE_TEST_KEY",
            temperature=0.3, max_tokens=max_tokens, retries=retries, backoff_s=0.01,
            price=price), "agent", models)
        self.adapter = OpenAIRetailAdapter(rollout_wall_s=rollout_wall_s)
        self.meter = Meter()

    def run_target(self, *args, **kwargs):
        with scope(self.settings, self.meter):
            return self.adapter.run_target(*args, **kwargs)

    def score(self, *args):
        return self.adapter.score(*args)


def _adapter(url, **kwargs):
    return _Run(url, **kwargs)


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("CAPEVOLVE_TEST_KEY", "sk-test")


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


@pytest.mark.slow
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
    assert {k.lower(): v for k, v in first["headers"].items()}["authorization"] == "Bearer sk-test"
    body = first["body"]
    policy = (oracle_candidate / "policy" / "policy.md").read_text()
    assert body["messages"][0] == {"role": "system", "content": policy}
    assert body["seed"] == 4242 and body["model"] == "scripted-model"
    assert body["temperature"] == 0.3
    assert "cancel_order" in {t["function"]["name"] for t in body["tools"]}
    assert server.requests[2]["body"]["messages"][-1] == {"role": "user",
                                                          "content": "Yes, please go ahead."}
    assert adapter.meter.tokens == 4 * 60
    assert adapter.meter.cost_usd == pytest.approx((200 + 80) / 1e6)
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
    assert rollout.error is None and adapter.meter.cost_usd is None
    assert adapter.score(cancel_task, rollout).reward < 1.0


def test_rate_limit_and_server_error_are_retried(cancel_task, oracle_candidate):
    """429 (with Retry-After) and 503 are retried with backoff; the rollout then succeeds."""
    script = [Reply(429, {"error": "slow down"}, {"Retry-After": "0"}),
              Reply(503, {"error": "overloaded"})] + _good_script(cancel_task)
    with ChatServer(script) as server:
        adapter = _adapter(server.base_url, retries=2)
        rollout = adapter.run_target(oracle_candidate, cancel_task, trial=0, seed=1)
    assert rollout.error is None and adapter.meter.counts["attempts"] == 6
    assert adapter.meter.counts["rejected_attempts"] == 1  # the 429: nothing served
    assert adapter.meter.counts["unknown_attempts"] == 1  # the 503: tokens unknown
    assert adapter.score(cancel_task, rollout).reward == 1.0


def test_persistent_5xx_is_a_transient_infra_error_not_a_score(cancel_task,
                                                               oracle_candidate):
    """After the bounded retries a 5xx becomes Rollout(error, transient=True)."""
    with ChatServer([Reply(500, {"error": "boom"})] * 3) as server:
        run = _adapter(server.base_url, retries=2)
        rollout = run.run_target(oracle_candidate, cancel_task, trial=0, seed=1)
    assert len(server.requests) == 3
    assert rollout.transient and "after 3 attempts" in rollout.error and "500" in rollout.error
    assert run.meter.failure == "server"


def test_client_error_is_not_retried(cancel_task, oracle_candidate):
    """A 401 is a non-transient error after one attempt."""
    with ChatServer([Reply(401, {"error": "bad key"})]) as server:
        rollout = _adapter(server.base_url).run_target(oracle_candidate, cancel_task, trial=0,
                                                   seed=1)
    assert len(server.requests) == 1
    assert not rollout.transient and rollout.error.startswith("HTTP 401")
    assert rollout.trace["model_failure"] == "auth"


def test_max_turns_ends_the_rollout_as_the_agents_failure(cancel_task, oracle_candidate):
    """A model that keeps calling tools is stopped after models.rollout.max_turns calls:
    an error naming the bound (missing data, never a score)."""
    loop = [_reply(calls=[("list_orders", {"user_id": "U001"})])] * 5
    with ChatServer(loop) as server:
        rollout = _adapter(server.base_url, max_turns=3).run_target(
            oracle_candidate, cancel_task, trial=0, seed=1)
    assert len(server.requests) == 3
    assert rollout.trace["bound"] == "turns" and "max_turns" in rollout.error


def test_malformed_candidate_never_reaches_the_endpoint(cancel_task, writable_seed):
    """A broken tools.py is a rollout error with file and line; no request is sent."""
    (writable_seed / "tools" / "tools.py").write_text("def oops(:\n")
    with ChatServer([]) as server:
        rollout = _adapter(server.base_url).run_target(writable_seed, cancel_task, trial=0, seed=1)
    assert rollout.error.startswith("tools/tools.py:1: SyntaxError") and not server.requests


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
    """A model that keeps calling tools with large prompts reaches models.rollout.max_tokens: the
    rollout stops there and is an error naming the bound (missing data, not retried), with
    the tokens it spent."""
    loop = [_reply(calls=[("list_orders", {"user_id": "U001"})], usage=(1000, 100))] * 10
    with ChatServer(loop) as server:
        adapter = _adapter(server.base_url, max_turns=10, max_tokens_per_rollout=2500)
        rollout = adapter.run_target(oracle_candidate, cancel_task, trial=0, seed=1)
    assert len(server.requests) == 3
    assert rollout.error.startswith("bound reached: 3300 tokens of 2500")
    assert rollout.trace["bound"] == "tokens" and not rollout.transient
    assert adapter.meter.tokens == 3300 and rollout.output is None


@pytest.mark.slow
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


@pytest.mark.slow
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
