"""Options shared by several commands (Annotated types, CAPEVOLVE_ env defaults)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from capevolve.config import EngineConfig
from capevolve._engine import make_engine
from capevolve._engine.contract import Engine
from capevolve.kinds import EngineKind

JsonOpt = Annotated[bool, typer.Option("--json", help="Print exactly one JSON object on stdout.")]
RunDirOpt = Annotated[Path, typer.Option("--run-dir", "-r", envvar="CAPEVOLVE_RUN_DIR",
                                         help="The run directory.")]
AddressOpt = Annotated[Optional[str], typer.Option(
    "--address", envvar="RAY_ADDRESS", help="Ray cluster to join (default: start local Ray).")]
EngineOpt = Annotated[Optional[EngineKind], typer.Option(
    "--engine", envvar="CAPEVOLVE_ENGINE", help="Override engine.kind (ray or local).")]


def build_engine(config: EngineConfig, kind: EngineKind | None, address: str | None) -> Engine:
    """The configured engine, with the command line's overrides applied."""
    if kind is not None:
        config = config.model_copy(update={"kind": kind})
    return make_engine(config, address)
