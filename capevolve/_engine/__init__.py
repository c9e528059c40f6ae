"""Execution: plan units, run them on workers, score them on scorers, hand back rows.

Workers (:mod:`.worker`; local subprocesses or Ray rollout actors) run ``run_target`` and
so run candidate code; scorers (:mod:`.scorer`; the local driver or Ray scorer actors)
call ``score`` in processes where no candidate module was ever imported, and build every
row. :mod:`.dispatch` drives both; :mod:`.contract` is the seam (it imports no engine).
:mod:`.contain` keeps user code's exits (``sys.exit``, ``os._exit``, ``KeyboardInterrupt``,
forks) inside the unit that made them: they are error rows, never the end of a process.
Only :mod:`capevolve._engine.ray` imports ray; :func:`make_engine` imports it lazily.
"""

from __future__ import annotations

from capevolve._engine.contract import Engine
from capevolve.config import EngineConfig
from capevolve.kinds import EngineKind


def make_engine(config: EngineConfig, address: str | None = None) -> Engine:
    """Build the configured engine; Ray is imported only when the Ray engine is chosen."""
    if config.kind == EngineKind.LOCAL:
        from capevolve._engine.local import LocalEngine

        return LocalEngine(config)
    from capevolve._engine.ray.engine import RayEngine

    return RayEngine(config, address=address or config.address)
