"""Resolved model settings: prices, the candidate's model.yaml, what is compared."""

from __future__ import annotations

import pytest

from capevolve.config import parse_config
from capevolve.config_models import ModelConfig, PriceConfig
from capevolve.errors import ConfigError
from capevolve.models import Meter, resolve, table_price
from capevolve.models.settings import differences, with_candidate


def _settings(**config):
    return resolve(ModelConfig(**{"base_url": "http://127.0.0.1:1/v1", "model": "m",
                                  **config}), "agent")


def test_prices_come_from_config_first_then_the_table():
    """A configured price wins; a well-known model id is priced by the table; an unknown
    one has no price (None, never 0)."""
    assert _settings(price=PriceConfig(input=1, output=2)).price_source == "config"
    table = resolve(ModelConfig(provider="openai", model="gpt-4o-mini"), "agent")
    assert table.price_source == "table" and table.price == table_price("gpt-4o-mini")
    assert table.base_url == "https://api.openai.com/v1"
    assert _settings(model="no-such-model-xyz").price is None


def test_the_fingerprint_follows_what_changes_results_only():
    """temperature changes the fingerprint; a deadline or retry count does not."""
    base = _settings()
    assert _settings(temperature=0.7).fingerprint() != base.fingerprint()
    assert _settings(deadline_s=9.0, retries=1).fingerprint() == base.fingerprint()
    assert differences(_settings(max_tokens=64).compared(), base.compared()) == ["max_tokens"]


def test_a_candidates_model_yaml_is_its_edit():
    """model.yaml's keys are applied and recorded in ``edited``; a new model is priced."""
    edited = with_candidate(_settings(), {"model.yaml": b"model: gpt-4o-mini\ntemperature: 1\n"})
    assert (edited.model, edited.temperature) == ("gpt-4o-mini", 1.0)
    assert edited.edited == ("model", "temperature") and edited.price_source == "table"
    assert with_candidate(_settings(), {}) == _settings()


@pytest.mark.parametrize(("text", "match"), [
    (b"base_url: http://evil/v1\n", "base_url may not be set by a candidate"),
    (b"api_key_env: HOME\n", "api_key_env may not be set"),
    (b"- a list\n", "expected a mapping"),
    (b"temperature: [\n", "not YAML"),
    (b"temperature: hot\n", "temperature"),
    (b"max_tokens: -3\n", "max_tokens"),
])
def test_a_bad_model_yaml_is_one_line_naming_the_key(text, match):
    """Anything but the allowed keys with valid values is refused, naming it."""
    with pytest.raises(ConfigError, match=match):
        with_candidate(_settings(), {"model.yaml": text})


@pytest.mark.parametrize(("models", "match"), [
    ({"agent": {"model": "m"}}, "exactly one of provider and base_url"),
    ({"agent": {"model": "m", "provider": "acme"}}, "provider 'acme' is not one of"),
    ({"agent": {"model": "m", "base_url": "http://x/v1", "temprature": 0}}, "temprature"),
    ({"agent": {"model": "m", "base_url": "http://x/v1", "max_tokens": 0}}, "max_tokens"),
    ({"agent": {"model": "m", "base_url": "http://x/v1", "token_param": "n"}}, "token_param"),
    ({"rollout": {"max_usd": -1}}, "rollout.max_usd"),
])
def test_a_bad_models_section_names_the_key(models, match):
    """The models: section is strict: one line naming the file and the key path."""
    with pytest.raises(ConfigError, match=match):
        parse_config({"name": "p", "adapter": "a.py:A", "capability_path": "seed",
                      "models": models}, "capevolve.yaml")


def test_the_meter_never_counts_unknown_as_zero_and_merges_only_counts():
    """An answer without usage is an unknown attempt; a malformed snapshot adds nothing."""
    meter = Meter()
    meter.answered({"prompt_tokens": 5, "completion_tokens": 1}, "m", None)
    meter.answered(None, "m", None)
    meter.failed(unknown=False, failure="quota")
    assert meter.counts["unknown_attempts"] == 1 and meter.counts["rejected_attempts"] == 1
    assert meter.tokens == 6 and meter.cost_usd is None and meter.partial
    other = Meter()
    other.merge({"attempts": -4, "prompt_tokens": "many", "cost_usd": float("nan"),
                 "models": [3, "x"], "failure": 7})
    other.merge(meter.snapshot())
    assert other.counts == meter.counts and other.models == {"m", "x"}
    assert other.failure == "quota"
