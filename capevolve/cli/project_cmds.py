"""Commands on a project: init, check, run (agent mode)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

import capevolve
from capevolve.cli.options import AddressOpt, EngineOpt, JsonOpt
from capevolve.cli.output import command, emit, exit_if_breaker, fmt_mean, progress, stop_line

ProjectOpt = Annotated[Path, typer.Option("--project", "-p", envvar="CAPEVOLVE_PROJECT",
                                          help="The project directory (holds capevolve.yaml).")]


@command
def init(directory: Annotated[Path, typer.Argument(help="Where to create the project.")],
         kind: Annotated[str, typer.Option(
             "--kind", help="adapter (an adapter class) or dataset (a JSONL file, a target "
                            "function and evaluators; no adapter code).")] = "adapter",
         json: JsonOpt = False) -> None:
    """Scaffold a runnable project: config, adapter skeleton (or dataset, target and
    evaluators with --kind dataset), seed capability, PROJECT.md."""
    result = capevolve.init_project(directory, kind=kind)
    emit(result.to_dict(), json, f"created {directory}: {', '.join(result.files)}\n"
                                 f"next: capevolve check --project {directory}")


@command
def check(project: ProjectOpt = Path("."), json: JsonOpt = False) -> None:
    """Check a project: config, adapter, tasks (non-empty, unique, stable) and score determinism.

    Exits 1, listing every problem, when the project is not runnable."""
    result = capevolve.check_project(project)
    problems = result.problems
    human = (f"ok: {result.n_tasks} tasks, adapter and scorer check out" if not problems
             else "problems:\n" + "\n".join(f"- {p}" for p in problems))
    metrics = result.metrics
    if metrics:
        human += ("\nmetrics: deterministic " + (", ".join(metrics["deterministic"]) or "none")
                  + "; judge " + (", ".join(metrics["judge"]) or "none"))
    human += "".join(f"\nwarning: {w}" for w in result.warnings)
    if result.power:
        human += "\n" + result.power.text
    stop = stop_line(result.stop)
    if stop:
        human += "\n" + stop
    emit(result.to_dict(), json, human, failed=bool(problems))


@command
def run(project: ProjectOpt = Path("."),
        run_dir: Annotated[Path | None, typer.Option(
            "--run-dir", "-r", help="Where to create the run (default "
                                    "<project>/.capevolve/run_<utc>).")] = None,
        address: AddressOpt = None, engine: EngineOpt = None, json: JsonOpt = False) -> None:
    """Agent mode: check -> freeze splits -> snapshot the seed -> baseline on val -> handoff."""
    progress(f"capevolve: checking {project} and scoring the seed on val ...")
    from capevolve.progress.live import live_progress

    with live_progress():  # the baseline's progress on stderr
        handoff = capevolve.start_run(project, run_dir, engine=engine, address=address)
    base = handoff.baseline
    from capevolve.report.words import scored_text

    human = "\n".join([
        f"run dir: {handoff.run_dir}",
        f"baseline (seed on val): {fmt_mean(base.mean, base.stderr)} "
        f"({scored_text(base.n_scored, base.n_tasks, base.excluded_reasons)})",
        *([handoff.power.text] if handoff.power else []),
        "next:", *(f"  {c}" for c in handoff.next),
    ])
    emit(handoff.to_dict(), json, human)
    exit_if_breaker(base.incomplete_reason)
