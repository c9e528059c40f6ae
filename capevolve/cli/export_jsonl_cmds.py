"""``capevolve export jsonl``: an evaluation's datapoints as JSON lines, written atomically."""

from __future__ import annotations

import json
import os
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
    from capevolve.report.export_jsonl import export_lines

    lines = list(export_lines(run_dir, eval_id))
    path = out or Path(run_dir) / "exports" / f"{eval_id}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines),
                   encoding="utf-8")
    os.replace(tmp, path)
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
    run_dir = resolve_run_dir(run_dir, project)
    _write(run_dir, eval_id, out, json)
