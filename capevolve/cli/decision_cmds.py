"""Commands that record an iteration outside the gate: ``no-change``."""

from __future__ import annotations

from typing import Annotated

import typer

import capevolve
from capevolve.cli.options import JsonOpt, RunDirOpt
from capevolve.cli.output import command, emit


@command
def no_change(run_dir: RunDirOpt,
              reason: Annotated[str, typer.Option(
                  "--reason", help="Why the change could not be scored (required, non-empty).")],
              candidate: Annotated[str | None, typer.Option(
                  "--candidate", "-c", help="The candidate id, when there was one.")] = None,
              json: JsonOpt = False) -> None:
    """Record an iteration whose change could not be scored (harness broken, judge
    unreachable): the best is carried forward, results/<n>.json is written with the reason,
    and no iteration is spent (excluded from every aggregate)."""
    result = capevolve.no_change(run_dir, reason, candidate)
    emit(result, json, f"no_change recorded as result {result['result']}: best stays "
                       f"{result['best_id']}")
