"""``capevolve down``: stop the local Ray capevolve started and shares between commands.

Contract: :func:`down` stops this installation's owned local Ray (see
:mod:`capevolve._engine.ray.owned`) and removes its state; a Ray joined by address is
never touched. It imports no ray: stopping is a signal to the owned Ray's daemon.
"""

from __future__ import annotations

from typing import Any


def down(force: bool = False) -> dict[str, Any]:
    """Stop the owned local Ray (an EngineError while another command is connected, unless
    ``force``); returns ``stopped``, ``state``, ``message`` (and its ``address``, ``pid``)."""
    from capevolve._engine.ray.owned import down as stop_owned

    return stop_owned(force=force)
