"""Which engine a verb runs on: the configured one; callers override only kind and address."""

from __future__ import annotations

from capevolve._engine import make_engine
from capevolve._engine.contract import Engine
from capevolve.config import EngineConfig
from capevolve.errors import ConfigError
from capevolve.kinds import EngineKind


def engine_for(config: EngineConfig, kind: EngineKind | str | None = None,
               address: str | None = None) -> Engine:
    """The engine ``config`` describes, with ``kind`` and ``address`` when given."""
    if kind is not None:
        try:
            chosen = EngineKind(kind)
        except ValueError:
            valid = ", ".join(k.value for k in EngineKind)
            raise ConfigError(f"engine {kind!r}: expected one of {valid}") from None
        config = config.model_copy(update={"kind": chosen})
    return make_engine(config, address)
