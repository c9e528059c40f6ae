"""``capevolve export``: an evaluation's datapoints as JSON lines (jsonl), written atomically;
the run into MLflow (mlflow)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from capevolve.cli.options import JsonOpt, MaybeRunDirOpt, RunProjectOpt, resolve_run_dir
from capevolve.cli.output import command, emit
from capevolve.errors import ConfigError

EvalOpt = Annotated[str, typer.Option("--eval", help="The evaluation id (evals/<id>.json).")]
OutOpt = Annotated[Path | None, typer.Option(
    "--out", help="Where to write (default <run_dir>/exports/<eval_id>.jsonl).")]

export_app = typer.Typer(no_args_is_help=False, invoke_without_command=True,
                         help="Export an evaluation's per-datapoint results (jsonl) or the run "
                         "into MLflow (mlflow).")


def _write(run_dir: Path, eval_id: str, out: Path | None, as_json: bool) -> None:
    from capevolve.report.export_jsonl import write_export

    path, lines = write_export(run_dir, eval_id, out)
    scored = sum(1 for line in lines if line["score"] is not None)
    excluded = sum(1 for line in lines if "excluded" in line)
    emit({"eval_id": eval_id, "path": str(path), "lines": len(lines), "scored": scored,
          "excluded": excluded}, as_json,
         f"wrote {len(lines)} lines ({scored} scored, {excluded} excluded) to {path}")


@export_app.callback()
@command
def export(ctx: typer.Context, run_dir: Annotated[Path | None, typer.Option(
               "--run-dir", "-r", envvar="CAPEVOLVE_RUN_DIR",
               help="The run directory (with --format).")] = None,
           project: RunProjectOpt = None,
           eval_id: Annotated[str | None, typer.Option(
               "--eval", help="The evaluation id (with --format).")] = None,
           fmt: Annotated[str | None, typer.Option(
               "--format", help="jsonl (the same as `capevolve export jsonl`).")] = None,
           out: OutOpt = None, json: JsonOpt = False) -> None:
    """Export an evaluation: `capevolve export jsonl --eval ID` or `--eval ID --format jsonl`."""
    if ctx.invoked_subcommand is not None:
        return
    if fmt != "jsonl":
        raise ConfigError(f"export: --format must be jsonl, got {fmt!r}" if fmt else
                          "export: name a format (`capevolve export jsonl --eval ID`)")
    if not eval_id:
        raise ConfigError("export: --eval ID is required")
    _write(resolve_run_dir(run_dir, project), eval_id, out, json)


@export_app.command("jsonl")
@command
def jsonl(*, run_dir: MaybeRunDirOpt = None,
          project: RunProjectOpt = None, eval_id: EvalOpt, out: OutOpt = None,
          json: JsonOpt = False) -> None:
    """One JSON line per datapoint: id, input snippet, output, score, justification."""
    _write(resolve_run_dir(run_dir, project), eval_id, out, json)


@export_app.command("mlflow")
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
