"""``capevolve doctor``: check a Ray cluster before any rollout is paid for."""

from __future__ import annotations

from typing import Annotated

import typer

from capevolve.cli.options import AddressOpt, JsonOpt
from capevolve.cli.output import command, emit, progress
from capevolve._loop.doctor import diagnose, render


@command
def doctor(address: AddressOpt = None,
           timeout_s: Annotated[float, typer.Option(
               "--timeout", min=1, help="Seconds to wait for every node's probe.")] = 60.0,
           json: JsonOpt = False) -> None:
    """Connect to the cluster, list nodes, CPUs, object store, Python / Ray / capevolve
    versions on the driver and every node; exit 1 if a node mismatches or cannot import
    capevolve."""
    progress(f"capevolve: probing {address or 'a local Ray'} ...")
    report = diagnose(address, timeout_s)
    emit(report, json, render(report))
    if not report["ok"]:
        raise typer.Exit(1)


if __name__ == "__main__":  # `python -m capevolve.cli.doctor_cmds` before app.py registers it
    typer.run(doctor)
