"""Options shared by several commands (Annotated types, CAPEVOLVE_ env defaults)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from capevolve.kinds import EngineKind, Split

JsonOpt = Annotated[bool, typer.Option("--json", help="Print exactly one JSON object on stdout.")]
AddressOpt = Annotated[str | None, typer.Option(
    "--address", envvar="RAY_ADDRESS", help="Ray cluster to join (default: start local Ray).")]
EngineOpt = Annotated[EngineKind | None, typer.Option(
    "--engine", envvar="CAPEVOLVE_ENGINE", help="Override engine.kind (ray or local).")]


# A run named by its project: `--project P` without `--run-dir` means P's latest run.
MaybeRunDirOpt = Annotated[Path | None, typer.Option(
    "--run-dir", "-r", envvar="CAPEVOLVE_RUN_DIR",
    help="The run directory (default: the latest run of --project, else of the current "
         "directory's project).")]
RunProjectOpt = Annotated[Path | None, typer.Option(
    "--project", "-p", help="Use this project's latest run (under <project>/.capevolve/) "
                            "when --run-dir is omitted (default: the current directory, "
                            "when it holds a capevolve.yaml).")]


def resolve_run_dir(run_dir: str | Path | None, project: Path | None) -> Path:
    """``run_dir``, else the latest run of ``project`` or of a project in the current
    directory; ConfigError otherwise."""
    if run_dir is not None:
        return Path(run_dir)
    if project is None and (Path.cwd() / "capevolve.yaml").is_file():
        project = Path(".")
    if project is None:
        from capevolve.errors import ConfigError

        raise ConfigError("--run-dir R or --project P is required (P's latest run; the "
                          "current directory is used when it holds a capevolve.yaml)")
    from capevolve import _api

    return _api.latest_run_dir(project)


def split_or_fail(split: str, verb: str) -> str:
    """``split`` if it is train or val; else one error line, exit 2."""
    from capevolve.cli.output import fail

    if split in (Split.TRAIN, Split.VAL):
        return split
    lowered = split.strip().lower()
    if lowered == Split.TEST:
        fail(f"--split {split!r}: {verb} takes train or val; the test split is held out and "
             "scored once, by `capevolve finalize`")
    near = [s for s in ("train", "val") if lowered.startswith(s) or s.startswith(lowered[:3])]
    hint = f" (did you mean {near[0]}?)" if lowered and len(near) == 1 else ""
    fail(f"--split {split!r}: no such split; {verb} takes train or val{hint}")
