"""The capevolve Typer application (console scripts ``capevolve`` and ``cap-evolve``)."""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import Annotated

import typer

from capevolve.cli import (
    compare_cmds,
    decision_cmds,
    diagnose_cmds,
    doctor_cmds,
    down_cmds,
    eval_cmds,
    export_cmds,
    export_jsonl_cmds,
    inspect_cmds,
    optimize_cmds,
    output,
    project_cmds,
    usage,
    verify_cmds,
    view_cmds,
)

app = typer.Typer(
    name="capevolve", no_args_is_help=True, pretty_exceptions_enable=False,
    cls=usage.OneLineUsageGroup,
    add_completion=False, context_settings={"help_option_names": ["-h", "--help"]},
    help="Evolve the capabilities of LLM agents and measure every edit honestly.",
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"capevolve {version('capevolve')}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option(
        "--version", "-V", callback=_version, is_eager=True,
        help="Print the installed version and exit.")] = False) -> None:
    """The root options; the help text is the app's."""

for module, names in (
    (project_cmds, ("init", "check", "run")),
    (eval_cmds, ("checkout", "evaluate", "gate", "accept", "reject", "finalize")),
    (inspect_cmds, ("status", "estimate", "report", "query")),
    (verify_cmds, ("verify", "quarantine")),
):
    for name in names:
        app.command(name)(getattr(module, name))
app.command("doctor")(doctor_cmds.doctor)
app.command("down")(down_cmds.down)
app.command("no-change")(decision_cmds.no_change)
app.command("confirm")(decision_cmds.confirm)
app.command("probe")(decision_cmds.probe)
app.command("optimize")(optimize_cmds.optimize)
app.command("compare")(compare_cmds.compare)
app.command("diff")(compare_cmds.diff)
app.command("view")(view_cmds.view)
app.add_typer(diagnose_cmds.diagnose_app, name="diagnose")
app.add_typer(diagnose_cmds.census_app, name="census")
export_jsonl_cmds.export_app.command("mlflow")(export_cmds.mlflow)
app.add_typer(export_jsonl_cmds.export_app, name="export")


def main() -> None:
    """Console-script entry point; threads left running by user code never keep the process
    alive."""
    output._Stdout.keep_redirect = True
    try:
        app()
    except SystemExit as exc:
        _exit_without_leaked_threads(exc)
        raise
    _exit_without_leaked_threads(SystemExit(0))


def _exit_without_leaked_threads(exc: SystemExit) -> None:
    main_thread = threading.main_thread()
    leaked = [t.name for t in threading.enumerate()
              if t is not main_thread and not t.daemon and t.is_alive()]
    if not leaked:
        return
    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    sys.stderr.write(f"capevolve: {len(leaked)} thread(s) started by user code still running "
                     f"({', '.join(sorted(leaked)[:3])}); exiting without waiting for them\n")
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
