"""Which engine a verb runs on (the configured one; callers override only kind and address),
and the local Ray capevolve shares between commands: join it early, or stop it."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from capevolve._store.rundir import RunDir
from capevolve.config import EngineConfig
from capevolve.errors import ConfigError
from capevolve.kinds import EngineKind

if TYPE_CHECKING:
    from capevolve._engine.contract import Engine


def engine_for(config: EngineConfig, kind: EngineKind | str | None = None,
               address: str | None = None) -> Engine:
    """The engine ``config`` describes, with ``kind`` and ``address`` when given."""
    from capevolve._engine import make_engine  # after join_early: Ray's join starts first

    if kind is not None:
        try:
            chosen = EngineKind(kind)
        except ValueError:
            valid = ", ".join(k.value for k in EngineKind)
            raise ConfigError(f"engine {kind!r}: expected one of {valid}") from None
        config = config.model_copy(update={"kind": chosen})
    return make_engine(config, address)


def down(force: bool = False) -> dict[str, Any]:
    """Stop the owned local Ray (EngineError while a command is connected, unless ``force``);
    returns ``stopped``, ``state`` and ``message``."""
    from capevolve._engine.ray.owned import down as stop_owned

    return stop_owned(force=force)


def join_early(run: RunDir, kind: EngineKind | str | None = None,
               address: str | None = None) -> None:
    """When ``run`` evaluates on Ray, join it in a daemon thread; nothing is started there."""
    engine = run.manifest.config.engine
    if str(kind or engine.kind) != EngineKind.RAY.value:
        return

    def join() -> None:
        from capevolve._engine.ray.owned import join_quietly

        join_quietly(address or engine.address, reuse=engine.reuse_local_ray)

    threading.Thread(target=join, name="ray-join", daemon=True).start()
