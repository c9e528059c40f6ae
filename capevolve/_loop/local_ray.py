"""The local Ray capevolve shares between commands: join it early, stop it (``capevolve down``).

Contract: :func:`down` stops this installation's owned local Ray (see
:mod:`capevolve._engine.ray.owned`) and removes its state; a Ray joined by address is
never touched. It imports no ray: stopping is a signal to the owned Ray's daemon.
:func:`join_early` starts importing Ray and joining it in a thread when the run's engine is
Ray, so a command's own imports and checks overlap it; this module imports no ray itself.
"""

from __future__ import annotations

from typing import Any

from capevolve._store.rundir import RunDir
from capevolve.kinds import EngineKind


def down(force: bool = False) -> dict[str, Any]:
    """Stop the owned local Ray (an EngineError while another command is connected, unless
    ``force``); returns ``stopped``, ``state``, ``message`` (and its ``address``, ``pid``)."""
    from capevolve._engine.ray.owned import down as stop_owned

    return stop_owned(force=force)


def join_early(run: RunDir, kind: EngineKind | str | None = None,
               address: str | None = None) -> None:
    """Start joining Ray in the background when ``run`` evaluates on Ray (its frozen engine
    kind, or ``kind``): the engine's own start waits for it (see
    :func:`capevolve._engine.ray.engine.join_early`). An unknown kind is left for the engine's
    own check."""
    engine = run.manifest.config.engine
    if str(kind or engine.kind) != EngineKind.RAY.value:
        return
    from capevolve._engine.ray.engine import join_early as start

    start(address or engine.address, reuse=engine.reuse_local_ray)
