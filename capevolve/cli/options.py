"""Options shared by several commands (Annotated types, CAPEVOLVE_ env defaults)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from capevolve.kinds import EngineKind

JsonOpt = Annotated[bool, typer.Option("--json", help="Print exactly one JSON object on stdout.")]
RunDirOpt = Annotated[Path, typer.Option("--run-dir", "-r", envvar="CAPEVOLVE_RUN_DIR",
                                         help="The run directory.")]
AddressOpt = Annotated[str | None, typer.Option(
    "--address", envvar="RAY_ADDRESS", help="Ray cluster to join (default: start local Ray).")]
EngineOpt = Annotated[EngineKind | None, typer.Option(
    "--engine", envvar="CAPEVOLVE_ENGINE", help="Override engine.kind (ray or local).")]

