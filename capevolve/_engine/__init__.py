"""Execution: plan units, run them on workers, score them on scorers, hand back rows.

Workers (:mod:`.worker`; local subprocesses or Ray rollout actors) run ``run_target`` and
so run candidate code; scorers (:mod:`.scorer`; local scorer subprocesses or Ray scorer actors)
call ``score`` in processes where no candidate module was ever imported, and build every
row. :mod:`.dispatch` drives both; :mod:`.contract` is the seam (it imports no engine).
:mod:`.contain` keeps user code's exits (``sys.exit``, ``os._exit``, ``KeyboardInterrupt``,
forks) inside the unit that made them: they are error rows, never the end of a process.
Only :mod:`capevolve._engine.ray` imports ray; :func:`make_engine` imports it lazily.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the worker and scorer processes import this package: keep it light
    from capevolve._engine.contract import Engine
    from capevolve.config import EngineConfig


def make_engine(config: EngineConfig, address: str | None = None) -> Engine:
    """Build the configured engine; Ray is imported only when the Ray engine is chosen."""
    from capevolve.kinds import EngineKind

    if config.kind == EngineKind.LOCAL:
        from capevolve._engine.local import LocalEngine

        return LocalEngine(config)
    from capevolve._engine.ray.engine import RayEngine

    return RayEngine(config, address=address or config.address)
