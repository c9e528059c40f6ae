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


# A run named by its project: `--project P` without `--run-dir` means P's latest run.
MaybeRunDirOpt = Annotated[Path | None, typer.Option(
    "--run-dir", "-r", envvar="CAPEVOLVE_RUN_DIR",
    help="The run directory (default with --project: that project's latest run).")]
RunProjectOpt = Annotated[Path | None, typer.Option(
    "--project", "-p", help="Use this project's latest run (under <project>/.capevolve/) "
                            "when --run-dir is omitted.")]


def resolve_run_dir(run_dir: Path | None, project: Path | None) -> Path:
    """``run_dir``, else the latest run of ``project``; a usage error without either."""
    if run_dir is not None:
        return run_dir
    if project is None:
        from capevolve.errors import ConfigError

        raise ConfigError("--run-dir is required (or --project P for P's latest run)")
    from capevolve import _api

    return _api.latest_run_dir(project)
