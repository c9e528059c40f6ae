"""Model endpoints: each role's pinned settings, the one client, the usage meter.

A :func:`scope` per rollout carries them into whatever process runs it.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TypeVar

from capevolve.errors import ConfigError, ModelError, ModelUnavailable, RolloutLimitReached
from capevolve.models.client import ModelClient
from capevolve.models.meter import Meter
from capevolve.models.prices import Price, table_price
from capevolve.models.settings import ModelSettings, resolve

__all__ = ["Meter", "ModelClient", "ModelError", "ModelSettings", "ModelUnavailable", "Price",
           "RolloutLimitReached", "Scope", "agent_client", "current_judge_meter",
           "judging", "resolve", "scope", "table_price"]

T = TypeVar("T")


@dataclass(frozen=True)
class Scope:
    """A rollout's agent settings (None: no agent model) and meter."""

    settings: ModelSettings | None
    meter: Meter


_SCOPE: contextvars.ContextVar[Scope | None] = contextvars.ContextVar("capevolve_model",
                                                                       default=None)
_JUDGE: contextvars.ContextVar[Meter | None] = contextvars.ContextVar("capevolve_judge",
                                                                     default=None)


@contextlib.contextmanager
def _set(var: contextvars.ContextVar[T | None], value: T) -> Iterator[T]:
    """``var`` set to ``value`` for the body."""
    token = var.set(value)
    try:
        yield value
    finally:
        var.reset(token)


def scope(settings: ModelSettings | None, meter: Meter) -> contextlib.AbstractContextManager[Scope]:
    """Run the body as one rollout, counting on ``meter``."""
    return _set(_SCOPE, Scope(settings, meter))


def judging(meter: Meter) -> contextlib.AbstractContextManager[Meter]:
    """Count the body's judge calls on ``meter``."""
    return _set(_JUDGE, meter)


def current_judge_meter() -> Meter | None:
    """The running scoring's meter, if any."""
    return _JUDGE.get()


def agent_client() -> ModelClient:
    """The running rollout's agent client; ConfigError outside one or without an agent."""
    found = _SCOPE.get()
    if found is None or found.settings is None:
        raise ConfigError("no agent model: declare models.agent in capevolve.yaml (the "
                          "client exists only inside run_target)")
    return ModelClient(found.settings, found.meter)
