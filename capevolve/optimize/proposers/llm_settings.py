"""Settings of the ``llm`` proposer: the spec's options over the run's
``models.proposer``; only the API key comes from the environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from capevolve.config_models import TokenParam
from capevolve.errors import ConfigError
from capevolve.models import ModelSettings, Price

SHARED = ("base_url", "model", "max_tokens", "context_tokens", "token_param", "retries",
          "backoff_s", "structured")
"""Options that are model settings of the same name, as they are."""


class Select(StrEnum):
    """Which component file one proposal rewrites."""

    ROUND_ROBIN = "round_robin"  # the editable text files in turn, by iteration
    CLUSTER = "cluster"          # the file the top (or focused) diagnosis cluster points at


class LLMSettings(BaseModel):
    """Endpoint, model and how the proposer uses them."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    base_url: str = Field(min_length=1)
    """The OpenAI-compatible API root, e.g. ``http://127.0.0.1:8000/v1``."""
    model: str = Field(min_length=1)
    api_key_env: str = "OPENAI_API_KEY"
    """The *name* of the API key's variable (unset: no key)."""
    temperature: float = Field(0.7, ge=0, le=2)
    max_tokens: int = Field(2048, ge=1, le=1_000_000)
    """Bound of one answer (the whole improved file)."""
    context_tokens: int | None = Field(None, ge=1)
    """A prompt that cannot fit this window with max_tokens is not sent."""
    token_param: TokenParam = TokenParam.AUTO
    structured: bool = True
    """Ask for the answer's JSON schema where the endpoint takes it."""
    usd_per_1m_input: float | None = Field(None, ge=0)
    usd_per_1m_output: float | None = Field(None, ge=0)
    """Prices per million prompt / completion tokens; cost needs both."""
    timeout_s: float = Field(600.0, gt=0)
    """Bound of one model call, retries included; never past the proposal's bound."""
    retries: int = Field(3, ge=0, le=10)
    backoff_s: float = Field(1.0, ge=0)
    select: Select = Select.CLUSTER
    minibatch: int = Field(3, ge=1, le=50)
    """Reflective examples shown per proposal."""
    max_file_chars: int = Field(20_000, ge=100)
    """Larger component files are not offered to the model."""
    probe: bool = True
    """Check at build time that the endpoint answers."""

    def model_settings(self, deadline_s: float | None = None) -> ModelSettings:
        """As model-client settings (role proposer); ``deadline_s`` lowers the bound."""
        price = None if self.usd_per_1m_input is None or self.usd_per_1m_output is None \
            else Price(input=self.usd_per_1m_input, output=self.usd_per_1m_output)
        bound = self.timeout_s if deadline_s is None else min(self.timeout_s, deadline_s)
        return ModelSettings(role="proposer", **{k: getattr(self, k) for k in SHARED},
                             api_key_env=self.api_key_env, temperature=self.temperature,
                             deadline_s=bound, price=price,
                             price_source="none" if price is None else "config")


def parse_options(options: str) -> dict[str, str]:
    """``key=value,key=value`` -> dict; a malformed or repeated pair is a ConfigError."""
    pairs: dict[str, str] = {}
    for item in (part.strip() for part in options.split(",")):
        if not item:
            continue
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--proposer llm:{options}: {item!r} is not key=value")
        if key in pairs:
            raise ConfigError(f"--proposer llm:{options}: {key!r} given twice")
        pairs[key] = value.strip()
    return pairs


def declared(pinned: ModelSettings | None) -> dict[str, object]:
    """The options ``models.proposer`` (as the run pinned it) gives."""
    if pinned is None:
        return {}
    price = pinned.price
    return {**{k: getattr(pinned, k) for k in SHARED},
            "api_key_env": pinned.api_key_env or LLMSettings.model_fields["api_key_env"].default,
            "temperature": 0.0 if pinned.temperature is None else pinned.temperature,
            "timeout_s": pinned.deadline_s,
            "usd_per_1m_input": None if price is None else price.input,
            "usd_per_1m_output": None if price is None else price.output}


def load_settings(options: str, pinned: ModelSettings | None = None) -> LLMSettings:
    """The settings of an ``llm`` spec; ConfigError if invalid."""
    given = parse_options(options)
    known = set(LLMSettings.model_fields)
    unknown = sorted(set(given) - known)
    if unknown:
        raise ConfigError(f"--proposer llm: unknown option {unknown[0]!r} "
                          f"(expected some of {', '.join(sorted(known))})")
    values = {**declared(pinned), **given}
    for key in ("base_url", "model"):
        if not values.get(key):
            raise ConfigError(f"--proposer llm: no {key}: declare models.proposer in "
                              f"capevolve.yaml (or give llm:{key}=...)")
    try:
        return LLMSettings.model_validate(values)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "options"
        raise ConfigError(f"--proposer llm: {field}: {first['msg']}") from None


def api_key(settings: LLMSettings, env: Mapping[str, str] | None = None) -> str | None:
    """The API key from the variable ``settings.api_key_env`` names, or None."""
    return (env or {}).get(settings.api_key_env) or os.environ.get(settings.api_key_env) or None
