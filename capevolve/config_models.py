"""The ``models:`` section of capevolve.yaml: each role's endpoint, pinned in the run; the
environment gives only API keys. Also the strict numbers and the section base of every
capevolve.yaml model, and the one-line form of a validation error.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationError, model_validator

Int = Annotated[int, Strict()]
"""Strict integer: no booleans, floats or quoted numbers."""
Num = Annotated[float, Strict()]
"""Strict number: no booleans or quoted numbers."""

PROVIDERS = {
    "openai": "https://api.openai.com/v1",
    "openrouter": "https://openrouter.ai/api/v1",
    "anthropic": "https://api.anthropic.com/v1",
    "groq": "https://api.groq.com/openai/v1",
    "together": "https://api.together.xyz/v1",
    "deepseek": "https://api.deepseek.com/v1",
    "mistral": "https://api.mistral.ai/v1",
}
"""Each named provider's OpenAI-compatible base URL."""


class TokenParam(StrEnum):
    """Which request field carries the answer's token bound."""

    AUTO = "auto"
    MAX_TOKENS = "max_tokens"
    MAX_COMPLETION_TOKENS = "max_completion_tokens"


def one_line(exc: ValidationError) -> str:
    """The first five problems of ``exc`` as ``path: message; ...`` (+N more)."""
    parts = [f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in exc.errors()]
    return "; ".join(parts[:5]) + (f" (+{len(parts) - 5} more)" if len(parts) > 5 else "")


class Section(BaseModel):
    """A config section: unknown keys and non-finite numbers are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)  # as Record's


class PriceConfig(Section):
    """Dollars per million tokens, overriding the shipped price table."""

    input: Num = Field(ge=0)
    """Dollars per million prompt tokens."""
    output: Num = Field(ge=0)
    """Dollars per million completion tokens."""


class ModelConfig(Section):
    """One model endpoint and how to call it."""

    model: str = Field(min_length=1)
    """The model id sent with every request."""
    provider: str | None = None
    """A named provider (a key of ``PROVIDERS``) instead of base_url."""
    base_url: str | None = None
    """An OpenAI-compatible endpoint (``http://host:port/v1``)."""
    api_key_env: str | None = None
    """Environment variable of the API key; None: no key sent."""
    temperature: Num | None = Field(0.0, ge=0, le=2)
    """Sampling temperature; None: not sent."""
    top_p: Num | None = Field(None, gt=0, le=1)
    """Nucleus sampling; None: not sent."""
    max_tokens: Int = Field(512, ge=1)
    """Token bound of one answer."""
    token_param: TokenParam = TokenParam.AUTO
    """Request field of max_tokens; auto: switch if the provider refuses one."""
    context_tokens: Int | None = Field(None, ge=1)
    """Context window in tokens; a prompt that cannot fit is not sent."""
    deadline_s: Num = Field(300.0, gt=0)
    """Wall-time bound of one call in seconds, retries and waits included."""
    connect_timeout_s: Num = Field(10.0, gt=0)
    """Seconds allowed to open a connection."""
    retries: Int = Field(4, ge=0, le=20)
    """Extra attempts for retryable failures (429, 5xx, timeouts)."""
    backoff_s: Num = Field(1.0, ge=0)
    """First backoff wait in seconds, doubling per retry; Retry-After wins."""
    concurrency: Int | None = Field(None, ge=1)
    """The endpoint's declared slots; check warns when the run needs more."""
    price: PriceConfig | None = None
    """Prices; None: the shipped price table's."""
    structured: bool = True
    """judge and proposer: ask for a JSON schema where offered."""

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


class RolloutLimits(Section):
    """Bounds of one rollout; reaching one is the agent's failure."""

    max_tokens: Int | None = Field(None, ge=1)
    """Prompt + completion tokens over the rollout's calls."""
    max_turns: Int | None = Field(None, ge=1)
    """Model calls."""
    max_usd: Num | None = Field(None, gt=0)
    """Dollars (needs a known price)."""


class BreakerConfig(Section):
    """When an evaluation stops on an endpoint that keeps failing."""

    failures: Int = Field(3, ge=1)
    """Consecutive same-kind model failures that stop the evaluation."""


class ModelsConfig(Section):
    """The models of a project, by role (``models:``)."""

    agent: ModelConfig | None = None
    """The agent's model (``capevolve.models.agent_client``)."""
    judge: ModelConfig | None = None
    """The default judge model of judge evaluators."""
    proposer: ModelConfig | None = None
    """The ``llm`` proposer's model."""
    rollout: RolloutLimits = RolloutLimits()
    """Per-rollout bounds."""
    breaker: BreakerConfig = BreakerConfig()
    """The circuit breaker of every endpoint."""
