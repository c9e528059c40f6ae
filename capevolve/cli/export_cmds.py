"""``capevolve export mlflow`` (registered on the ``export`` group)."""

from __future__ import annotations

from typing import Annotated

import typer

from capevolve.cli.options import JsonOpt, MaybeRunDirOpt, RunProjectOpt, resolve_run_dir
from capevolve.cli.output import command, emit


@command
def mlflow(*, run_dir: MaybeRunDirOpt = None, project: RunProjectOpt = None,
           tracking_uri: Annotated[str | None, typer.Option(
               "--tracking-uri", envvar="MLFLOW_TRACKING_URI",
               help="MLflow tracking store, e.g. sqlite:///mlflow.db or http://host:5000 "
               "(default: MLflow's own default).")] = None,
           experiment: Annotated[str | None, typer.Option(
               "--experiment", help="Experiment name (default: capevolve/<project>).")] = None,
           json: JsonOpt = False) -> None:
    """Log the run to MLflow: one run for the capevolve run and a nested run per candidate;
    exporting again updates them. Needs the `mlflow` extra."""
    run_dir = resolve_run_dir(run_dir, project)
    from capevolve import _api
    from capevolve.export.to_mlflow import export_mlflow

    result = export_mlflow(_api.run_dir_of(run_dir), tracking_uri, experiment)
    emit(result, json, f"exported {len(result['runs'])} candidates to MLflow experiment "
         f"{result['experiment']!r} (parent run {result['parent_run_id']})")
