"""The capevolve Typer application (console scripts ``capevolve`` and ``cap-evolve``)."""

from __future__ import annotations

from typing import Annotated

import typer

from capevolve.cli import (
    compare_cmds,
    diagnose_cmds,
    doctor_cmds,
    eval_cmds,
    export_cmds,
    inspect_cmds,
    output,
    project_cmds,
    view_cmds,
)

app = typer.Typer(
    name="capevolve", no_args_is_help=True, pretty_exceptions_enable=False,
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
    """The root options (--version, -h / --help); the help text is the app's."""

for module, names in (
    (project_cmds, ("init", "check", "run")),
    (eval_cmds, ("evaluate", "gate", "accept", "reject", "finalize")),
    (inspect_cmds, ("status", "report", "query")),
):
    for name in names:
        app.command(name)(getattr(module, name))
app.command("doctor")(doctor_cmds.doctor)
app.command("compare")(compare_cmds.compare)
app.command("diff")(compare_cmds.diff)
app.command("view")(view_cmds.view)
app.add_typer(diagnose_cmds.diagnose_app, name="diagnose")
app.add_typer(diagnose_cmds.census_app, name="census")
app.add_typer(export_cmds.export_app, name="export")


def main() -> None:
    """Console-script entry point (keeps stdout for the JSON result until exit)."""
    output._Stdout.keep_redirect = True
    app()
