"""``capevolve down``: stop capevolve's own local Ray."""

from __future__ import annotations

from typing import Annotated

import typer

from capevolve.cli.options import JsonOpt
from capevolve.cli.output import command, emit


@command
def down(force: Annotated[bool, typer.Option(
             "--force", help="Stop it even while other commands are connected (their "
             "evaluations lose the rollouts in flight; rerun them to resume).")] = False,
         json: JsonOpt = False) -> None:
    """Stop capevolve's own local Ray and remove its state (it also stops itself after
    CAPEVOLVE_RAY_IDLE_S idle seconds, default 900). Exit 2 while another command uses it,
    unless --force; a Ray joined with --address / RAY_ADDRESS is never touched. Nothing
    running: exit 0."""
    from capevolve import _api

    result = _api.local_ray_down(force=force)
    emit(result, json, result["message"])
