"""One model role's resolved settings: what a run pins and every row records."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from capevolve.config_models import ModelConfig, ModelsConfig, RolloutLimits, TokenParam
from capevolve.errors import ConfigError
from capevolve.models.prices import Price, table_price

CANDIDATE_FILE = "model.yaml"
"""A candidate's agent model settings (its edit)."""
CANDIDATE_KEYS = frozenset({"model", "temperature", "top_p", "max_tokens"})
"""The settings a candidate's model.yaml may set."""
COMPARED = ("base_url", "model", "temperature", "top_p", "max_tokens", "token_param",
            "limits")
"""Settings that must match for a comparison."""


class ModelSettings(BaseModel):
    """A role's model settings as pinned in the run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: str
    """agent, judge or proposer."""
    base_url: str
    """The endpoint."""
    model: str
    """The model id."""
    api_key_env: str | None = None
    """The variable holding the key (never recorded)."""
    temperature: float | None = 0.0
    """Sampling temperature (None: not sent)."""
    top_p: float | None = None
    """Nucleus sampling (None: not sent)."""
    max_tokens: int = 512
    """Bound of one answer."""
    token_param: TokenParam = TokenParam.AUTO
    """The request field of the bound (auto: detected)."""
    context_tokens: int | None = None
    """The context window, when declared."""
    deadline_s: float = 300.0
    """Bound of one call, retries included."""
    connect_timeout_s: float = 10.0
    """Bound of opening a connection."""
    retries: int = 4
    """Extra attempts for retryable failures."""
    backoff_s: float = 1.0
    """First backoff wait."""
    concurrency: int | None = None
    """Declared slots of the endpoint."""
    price: Price | None = None
    """Dollars per million tokens (None: unknown)."""
    price_source: str = "none"
    """config, table or none."""
    structured: bool = True
    """Ask for a JSON schema where offered."""
    limits: RolloutLimits = RolloutLimits()
    """Per-rollout bounds (agent)."""
    breaker_failures: int = 3
    """Consecutive same-kind failed rollouts that stop an evaluation."""
    edited: tuple[str, ...] = ()
    """Settings the candidate's model.yaml chose (its edit)."""

    def compared(self) -> dict[str, Any]:
        """The settings that change results."""
        data = self.model_dump(mode="json")
        return {key: data[key] for key in COMPARED}

    def fingerprint(self) -> str:
        """sha256 of the compared settings (canonical JSON)."""
        text = json.dumps(self.compared(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def to_json(self) -> str:
        """Canonical JSON (travels on the job)."""
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))


def resolve(config: ModelConfig, role: str, models: ModelsConfig | None = None) -> ModelSettings:
    """A role's settings, priced from config, else the shipped table."""
    models = models or ModelsConfig()
    price = (table_price(config.model, config.url) if config.price is None
             else Price(input=config.price.input, output=config.price.output))
    source = "none" if price is None else "table" if config.price is None else "config"
    return ModelSettings(
        role=role, base_url=config.url, model=config.model, api_key_env=config.api_key_env,
        temperature=config.temperature, top_p=config.top_p, max_tokens=config.max_tokens,
        token_param=config.token_param, context_tokens=config.context_tokens,
        deadline_s=config.deadline_s, connect_timeout_s=config.connect_timeout_s,
        retries=config.retries, backoff_s=config.backoff_s, concurrency=config.concurrency,
        price=price, price_source=source, structured=config.structured,
        limits=models.rollout if role == "agent" else RolloutLimits(),
        breaker_failures=models.breaker.failures)


def with_candidate(settings: ModelSettings, files: dict[str, bytes]) -> ModelSettings:
    """``settings`` with the candidate's ``model.yaml`` applied; ConfigError if bad."""
    raw = files.get(CANDIDATE_FILE)
    if raw is None:
        return settings
    where = f"candidate {CANDIDATE_FILE}"
    try:
        data = yaml.safe_load(raw.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{where}: not YAML text ({type(exc).__name__})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping of {', '.join(sorted(CANDIDATE_KEYS))}")
    unknown = sorted(str(k) for k in data if k not in CANDIDATE_KEYS)
    if unknown:
        raise ConfigError(f"{where}: {unknown[0]} may not be set by a candidate (only "
                          f"{', '.join(sorted(CANDIDATE_KEYS))})")
    try:
        ModelConfig.model_validate({"base_url": settings.base_url, "model": settings.model,
                                    **data})  # the config's types and ranges
        edited = ModelSettings.model_validate({**settings.model_dump(), **data,
                                               "edited": tuple(sorted(data))})
        if edited.model != settings.model:
            price = table_price(edited.model, edited.base_url)
            edited = edited.model_copy(update={
                "price": price, "price_source": "table" if price else "none"})
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ConfigError(f"{where}: {'.'.join(map(str, first['loc']))}: "
                          f"{first['msg']}") from None
    return edited


def differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Sorted compared settings that differ."""
    return sorted(key for key in COMPARED if a.get(key) != b.get(key))
