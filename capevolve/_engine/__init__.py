"""Execution: plan units, run them on workers, score them on scorers, hand back rows."""

from __future__ import annotations

from typing import TYPE_CHECKING

from capevolve.kinds import EngineKind

if TYPE_CHECKING:  # (the worker process imports this package, never the config)
    from capevolve._engine.contract import Engine
    from capevolve.config import EngineConfig


def make_engine(config: EngineConfig, address: str | None = None) -> Engine:
    """The configured engine; ray is imported only for the Ray engine."""
    if config.kind == EngineKind.LOCAL:
        from capevolve._engine.local import LocalEngine

        return LocalEngine(config)
    from capevolve._engine.ray.engine import RayEngine

    return RayEngine(config, address=address or config.address)
