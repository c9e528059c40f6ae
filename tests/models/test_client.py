"""The model client against a scripted OpenAI-compatible server on a real socket."""

from __future__ import annotations

import time

import openai  # noqa: F401 - loaded once here, so the timed calls measure the calls only
import pytest
from fixtures.chat_server import ChatServer, Drop, Reply, Sleep, completion

from capevolve.config_models import ModelConfig, PriceConfig
from capevolve.errors import ModelError, ModelUnavailable
from capevolve.models import Meter, ModelClient, resolve


def _client(url: str, meter: Meter | None = None, **config) -> ModelClient:
    settings = resolve(ModelConfig(base_url=url, model="m", **{"backoff_s": 0.01, **config}),
                       "agent")
    return ModelClient(settings, meter)


def _call(url: str, **config) -> tuple[ModelClient, dict | Exception]:
    client = _client(url, **config)
    try:
        return client, client.complete({"messages": [{"role": "user", "content": "hi"}]})
    except ModelError as exc:
        return client, exc


def test_pinned_settings_override_the_payload_and_usage_is_counted():
    """model, temperature and the token bound are the pinned ones whatever the payload
    says; the reported usage and model are on the meter, priced from config."""
    with ChatServer([completion("ok", prompt_tokens=70, completion_tokens=5)]) as server:
        client = _client(server.base_url, temperature=0.5, max_tokens=33,
                         price=PriceConfig(input=2.0, output=4.0))
        client.complete({"messages": [], "model": "other", "temperature": 1.9,
                         "max_tokens": 4000})
    body = server.requests[0]["body"]
    assert (body["model"], body["temperature"], body["max_tokens"]) == ("m", 0.5, 33)
    snap = client.meter.snapshot()
    assert (snap["prompt_tokens"], snap["completion_tokens"], snap["attempts"]) == (70, 5, 1)
    assert snap["models"] == ["scripted"] and client.meter.cost_usd == pytest.approx(160e-6)


def test_429_with_retry_after_and_500_are_retried_and_counted():
    """A 429 (Retry-After honoured) is a rejected attempt, a 500 an attempt of unknown
    tokens (never zero); the third attempt's usage is counted."""
    script = [Reply(429, {"error": "slow"}, {"Retry-After": "0.3"}),
              Reply(500, {"error": "boom"}), completion("ok")]
    with ChatServer(script) as server:
        t0 = time.monotonic()
        client, out = _call(server.base_url)
        took = time.monotonic() - t0
    assert isinstance(out, dict) and took >= 0.3
    c = client.meter.counts
    assert (c["attempts"], c["rejected_attempts"], c["unknown_attempts"]) == (3, 1, 1)
    assert client.meter.tokens == 60 and client.meter.partial


def test_429_forever_stops_after_the_retries_as_quota():
    """An exhausted quota costs 1 + retries requests, then ModelUnavailable of kind quota."""
    with ChatServer(default=Reply(429, {"error": "insufficient_quota"})) as server:
        client, out = _call(server.base_url, retries=2)
    assert isinstance(out, ModelUnavailable) and out.failure == "quota"
    assert len(server.requests) == 3 and client.meter.failure == "quota"


@pytest.mark.slow
def test_x_should_retry_false_stops_and_true_retries():
    """x-should-retry: false is final even for a 503; true retries even a 400."""
    with ChatServer([Reply(503, {}, {"x-should-retry": "false"})]) as server:
        _, out = _call(server.base_url)
    assert isinstance(out, ModelError) and len(server.requests) == 1
    with ChatServer([Reply(400, {}, {"x-should-retry": "true"}), completion("ok")]) as server:
        _, out = _call(server.base_url)
    assert isinstance(out, dict) and len(server.requests) == 2


def test_auth_is_final_and_named():
    """A 401 is one attempt, ModelError of kind auth."""
    with ChatServer([Reply(401, {"error": "bad key"})]) as server:
        _, out = _call(server.base_url)
    assert isinstance(out, ModelError) and not isinstance(out, ModelUnavailable)
    assert out.failure == "auth" and len(server.requests) == 1


@pytest.mark.slow
def test_a_slow_prefill_is_not_cut_by_a_per_attempt_timeout():
    """One attempt may use the whole call deadline: a 1.5 s answer within a 5 s deadline
    is one attempt, not a timeout and a paid retry."""
    with ChatServer([Sleep(1.5, completion("late"))]) as server:
        client, out = _call(server.base_url, deadline_s=5.0)
    assert isinstance(out, dict) and len(server.requests) == 1
    assert client.meter.counts["attempts"] == 1


@pytest.mark.slow
def test_a_hang_past_the_deadline_is_unavailable_with_unknown_tokens():
    """A server that never answers within the deadline: unreachable, the attempt's tokens
    unknown (the server may have worked), the call bounded by its deadline."""
    with ChatServer(default=Sleep(3.0, completion("late"))) as server:
        t0 = time.monotonic()
        client, out = _call(server.base_url, deadline_s=0.8)
        took = time.monotonic() - t0
    assert isinstance(out, ModelUnavailable) and out.failure == "unreachable"
    assert took < 2.5 and client.meter.counts["unknown_attempts"] >= 1


def test_a_dropped_connection_is_retried():
    """A connection closed without an answer is retried (its tokens unknown)."""
    with ChatServer([Drop(), completion("ok")]) as server:
        client, out = _call(server.base_url)
    assert isinstance(out, dict) and client.meter.counts["unknown_attempts"] == 1


@pytest.mark.slow
def test_a_max_tokens_refusal_switches_to_max_completion_tokens():
    """A reasoning model's 400 asking for max_completion_tokens switches the field (auto)
    and resends; the configured field is sent as configured."""
    refusal = Reply(400, {"error": {"message": "Unsupported parameter: 'max_tokens' is not "
                                    "supported with this model. Use 'max_completion_tokens' "
                                    "instead.", "code": "unsupported_parameter"}})
    with ChatServer([refusal, completion("ok")]) as server:
        _, out = _call(server.base_url + "/", max_tokens=40)
    assert isinstance(out, dict)
    assert "max_tokens" in server.requests[0]["body"]
    assert server.requests[1]["body"]["max_completion_tokens"] == 40
    assert "max_tokens" not in server.requests[1]["body"]
    with ChatServer([completion("ok")]) as server:
        _call(server.base_url, token_param="max_completion_tokens", max_tokens=9)
    assert server.requests[0]["body"]["max_completion_tokens"] == 9


def test_a_context_length_400_is_a_recorded_failure_not_a_retry():
    """The provider's context-length 400 is ModelError of kind context_length, once."""
    text = "This model's maximum context length is 4096 tokens. However, you requested 5000"
    with ChatServer([Reply(400, {"error": {"message": text}})]) as server:
        _, out = _call(server.base_url)
    assert isinstance(out, ModelError) and out.failure == "context_length"
    assert len(server.requests) == 1


def test_a_cut_tool_call_never_reaches_the_caller():
    """finish_reason length with a tool call: the call is removed and the choice marked."""
    cut = completion(None, finish_reason="length", tool_calls=[
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": '}}])
    with ChatServer([cut]) as server:
        client, out = _call(server.base_url)
    assert isinstance(out, dict)
    choice = out["choices"][0]
    assert choice["cut"] is True and not choice["message"]["tool_calls"]
    assert client.meter.counts["truncated"] == 1 and client.meter.tokens == 60


def test_unknown_price_leaves_cost_none_and_partial():
    """A model the table does not know, no price in config: cost None, partial."""
    with ChatServer([completion("ok")]) as server:
        client, _ = _call(server.base_url)
    assert client.settings.price is None and client.meter.cost_usd is None
    assert client.meter.partial


@pytest.mark.slow
def test_a_prompt_over_the_context_is_refused_unsent_where_the_endpoint_measures_it():
    """With context_tokens, the endpoint's tokenizer measures the prompt first: over the
    window with max_tokens it is a context_length ModelError, nothing sent or counted;
    within it the call is sent. An endpoint without a tokenizer is asked once, then its
    prompts are sent unmeasured (its own 400 still names the context)."""
    with ChatServer([completion("ok")], tokenizer=lambda m: 900) as server:
        unsent, refused = _call(server.base_url, context_tokens=1000, max_tokens=200)
        client, answered = _call(server.base_url, context_tokens=1100, max_tokens=200)
        assert isinstance(refused, ModelError) and refused.failure == "context_length"
        assert "prompt is 900 tokens" in str(refused) and "context_tokens 1000" in str(refused)
        assert isinstance(answered, dict) and len(server.requests) == 1
        assert unsent.meter.counts["attempts"] == 0
        assert unsent.meter.failure == "context_length"
    with ChatServer([completion("ok"), completion("ok")]) as server:
        first, _ = _call(server.base_url, context_tokens=10, max_tokens=5)
        _call(server.base_url, context_tokens=10, max_tokens=5)
        assert len(server.requests) == 2 and len(server.tokenized) == 2  # asked once
    assert first.meter.counts["attempts"] == 1
