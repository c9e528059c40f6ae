"""The ``models:`` section of capevolve.yaml: every model a project calls, by role.

Each role (``agent``, ``judge``, ``proposer``) names an OpenAI-compatible endpoint and how to
call it; everything that changes a result lives here and is pinned in the run (the environment
supplies only API keys, by the variable named in ``api_key_env``).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, Strict, model_validator

Int = Annotated[int, Strict()]
Num = Annotated[float, Strict()]

PROVIDERS = {
    "openai": "https://api.openai.com/v1",
    "openrouter": "https://openrouter.ai/api/v1",
    "anthropic": "https://api.anthropic.com/v1",
    "groq": "https://api.groq.com/openai/v1",
    "together": "https://api.together.xyz/v1",
    "deepseek": "https://api.deepseek.com/v1",
    "mistral": "https://api.mistral.ai/v1",
}
"""The base URL of each named provider's OpenAI-compatible API."""


class TokenParam(StrEnum):
    """Which request field carries the answer's token bound."""

    AUTO = "auto"
    MAX_TOKENS = "max_tokens"
    MAX_COMPLETION_TOKENS = "max_completion_tokens"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class PriceConfig(_Section):
    """Dollars per million tokens (overrides the shipped price table)."""

    input: Num = Field(ge=0)
    """Dollars per million prompt tokens."""
    output: Num = Field(ge=0)
    """Dollars per million completion tokens."""


class ModelConfig(_Section):
    """One model endpoint and how to call it."""

    model: str = Field(min_length=1)
    """The model id sent with every request."""
    provider: str | None = None
    """A named provider (openai, openrouter, anthropic, groq, together, deepseek,
    mistral) instead of base_url."""
    base_url: str | None = None
    """An OpenAI-compatible endpoint (``http://host:port/v1``)."""
    api_key_env: str | None = None
    """The environment variable holding the API key (None: no key sent)."""
    temperature: Num | None = Field(0.0, ge=0, le=2)
    """Sampling temperature (None: not sent, the server's default)."""
    top_p: Num | None = Field(None, gt=0, le=1)
    """Nucleus sampling (None: not sent)."""
    max_tokens: Int = Field(512, ge=1)
    """Bound of one answer."""
    token_param: TokenParam = TokenParam.AUTO
    """The field that carries max_tokens: auto sends max_tokens and switches to
    max_completion_tokens when the provider refuses it (reasoning models)."""
    context_tokens: Int | None = Field(None, ge=1)
    """The model's context window; a prompt that cannot fit is refused before sending."""
    deadline_s: Num = Field(300.0, gt=0)
    """Wall-time bound of one call, retries and waits included; one attempt may use all of
    what is left (a slow prefill is not cut off)."""
    connect_timeout_s: Num = Field(10.0, gt=0)
    """Bound of opening a connection."""
    retries: Int = Field(4, ge=0, le=20)
    """Extra attempts after the first, for retryable failures (429, 5xx, timeouts)."""
    backoff_s: Num = Field(1.0, ge=0)
    """First backoff wait; doubles per retry, with jitter (Retry-After wins)."""
    concurrency: Int | None = Field(None, ge=1)
    """The endpoint's declared slots (check warns when the run needs more)."""
    price: PriceConfig | None = None
    """Prices (None: the shipped price table, when it knows the model)."""
    structured: bool = True
    """judge and proposer: ask for a JSON schema (response_format) where offered."""

    @model_validator(mode="after")
    def _one_endpoint(self) -> ModelConfig:
        if (self.provider is None) == (self.base_url is None):
            raise ValueError("give exactly one of provider and base_url")
        if self.provider is not None and self.provider not in PROVIDERS:
            raise ValueError(f"provider {self.provider!r} is not one of "
                             f"{', '.join(sorted(PROVIDERS))} (or give base_url)")
        return self

    @property
    def url(self) -> str:
        """The endpoint's base URL (the provider's, or base_url)."""
        return PROVIDERS[self.provider] if self.provider else str(self.base_url)


class RolloutLimits(_Section):
    """Bounds of one rollout; reaching one ends it as the agent's failure, naming it."""

    max_tokens: Int | None = Field(None, ge=1)
    """Prompt + completion tokens summed over the rollout's calls."""
    max_turns: Int | None = Field(None, ge=1)
    """Model calls."""
    max_usd: Num | None = Field(None, gt=0)
    """Dollars (needs a known price)."""


class BreakerConfig(_Section):
    """When an evaluation stops dispatching because its endpoint keeps failing."""

    failures: Int = Field(3, ge=1)
    """Consecutive rollouts failed by the same kind of model failure (quota, auth,
    unreachable) after which the evaluation stops: incomplete, with the reason."""


class ModelsConfig(_Section):
    """The models of a project, by role (``models:``)."""

    agent: ModelConfig | None = None
    """The agent's model (adapters get its client from ``capevolve.models.agent_client``)."""
    judge: ModelConfig | None = None
    """The default judge model of judge evaluators."""
    proposer: ModelConfig | None = None
    """The ``llm`` proposer's model."""
    rollout: RolloutLimits = RolloutLimits()
    """Per-rollout bounds (part of the pinned settings)."""
    breaker: BreakerConfig = BreakerConfig()
    """The circuit breaker of every endpoint."""
