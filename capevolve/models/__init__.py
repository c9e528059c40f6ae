"""Model endpoints: the pinned settings of each role, the one client, and the usage meter.

An adapter calls :func:`agent_client` inside ``run_target``: the client carries the
evaluation's pinned agent settings (``models.agent`` of the run, with the candidate's
``model.yaml`` applied) and counts every attempt on the rollout's meter, whatever process
runs the rollout. The engine opens a :func:`scope` per unit from the job's data (the
settings travel on the job as JSON, the meter's snapshot comes back with the outcome),
so no setting is read from the driver's process state.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass

from capevolve.errors import ConfigError, ModelError, ModelUnavailable, RolloutLimitReached
from capevolve.models.client import ModelClient
from capevolve.models.meter import Meter
from capevolve.models.prices import Price, table_price
from capevolve.models.settings import ModelSettings, resolve

__all__ = ["Meter", "ModelClient", "ModelError", "ModelSettings", "ModelUnavailable", "Price",
           "RolloutLimitReached", "Scope", "agent_client", "current_judge_meter",
           "current_scope", "judging", "resolve", "scope", "table_price"]


@dataclass(frozen=True)
class Scope:
    """The agent settings (None: the project declares no agent model) and the meter of
    the rollout running in this context."""

    settings: ModelSettings | None
    meter: Meter


_SCOPE: contextvars.ContextVar[Scope | None] = contextvars.ContextVar("capevolve_model",
                                                                       default=None)


@contextlib.contextmanager
def scope(settings: ModelSettings | None, meter: Meter) -> Iterator[Scope]:
    """Run the body as one rollout with these settings, counting on ``meter``."""
    current = Scope(settings, meter)
    token = _SCOPE.set(current)
    try:
        yield current
    finally:
        _SCOPE.reset(token)


def current_scope() -> Scope | None:
    """The scope of the rollout running in this context, if any."""
    return _SCOPE.get()


_JUDGE: contextvars.ContextVar[Meter | None] = contextvars.ContextVar("capevolve_judge",
                                                                     default=None)


@contextlib.contextmanager
def judging(meter: Meter) -> Iterator[Meter]:
    """Count the judge calls of the body (one row's scoring) on ``meter``."""
    token = _JUDGE.set(meter)
    try:
        yield meter
    finally:
        _JUDGE.reset(token)


def current_judge_meter() -> Meter | None:
    """The meter of the scoring running in this context, if any."""
    return _JUDGE.get()


def agent_client() -> ModelClient:
    """A client of the running rollout's agent model (see the module docstring);
    ConfigError when the project declares no ``models.agent`` or no rollout is running."""
    found = _SCOPE.get()
    if found is None or found.settings is None:
        raise ConfigError("no agent model: declare models.agent in capevolve.yaml (the "
                          "client exists only inside run_target)")
    return ModelClient(found.settings, found.meter)
