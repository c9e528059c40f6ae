"""The local Ray capevolve shares between commands: join it early, stop it (``capevolve down``)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from capevolve._store.rundir import RunDir
from capevolve.kinds import EngineKind


def down(force: bool = False) -> dict[str, Any]:
    """Stop the owned local Ray (an EngineError while another command is connected, unless
    ``force``); returns ``stopped``, ``state``, ``message`` (and its ``address``, ``pid``)."""
    from capevolve._engine.ray.owned import down as stop_owned

    return stop_owned(force=force)


def join_early(run: RunDir, kind: EngineKind | str | None = None,
               address: str | None = None, prefetch: bool = False) -> None:
    """When ``run`` evaluates on Ray (its frozen engine kind, or ``kind``), import Ray and
    join it in a daemon thread, the import included, so it overlaps the command's own
    imports and checks (:func:`capevolve._engine.ray.owned.join_quietly`: nothing is started
    there; the engine's own start waits for it). With ``prefetch`` (one evaluation of the
    run's project follows), the warm actors it will use are claimed and bound there too
    (:mod:`capevolve._engine.ray.owned_prefetch`). An unknown kind is left for the engine's
    own check."""
    config = run.manifest.config
    engine = config.engine
    if str(kind or engine.kind) != EngineKind.RAY.value:
        return
    root = str(Path(run.manifest.project_dir).resolve())  # the job's project_root

    def claim_ahead() -> None:
        from capevolve._engine.ray.owned_prefetch import prefetch

        prefetch(engine, root, config.adapter)

    def join() -> None:
        from capevolve._engine.ray.owned import join_quietly

        join_quietly(address or engine.address, reuse=engine.reuse_local_ray,
                     then=claim_ahead if prefetch else None)

    threading.Thread(target=join, name="ray-join", daemon=True).start()
