"""The capevolve Typer application (console scripts ``capevolve`` and ``cap-evolve``); usage
errors (unknown command or option, bad value) on one line."""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Sequence
from typing import Annotated, Any

import typer
from typer import Abort
from typer._click.exceptions import ClickException, UsageError  # typer vendors its click
from typer.core import TyperGroup

from capevolve.cli import (
    compare_cmds,
    diagnose_cmds,
    doctor_cmds,
    eval_cmds,
    export_jsonl_cmds,
    inspect_cmds,
    optimize_cmds,
    output,
    project_cmds,
)


def wants_one_line(args: Sequence[str]) -> bool:
    """Usage errors are one line with --json or when stdout is not a terminal."""
    if "--json" in args:
        return True
    try:
        return not sys.stdout.isatty()
    except (AttributeError, ValueError):
        return True


def usage_line(exc: ClickException) -> str:
    """The one line for a usage error, naming the command and its --help."""
    message = " ".join(exc.format_message().split())
    if isinstance(exc, UsageError) and exc.ctx is not None:
        path = exc.ctx.command_path
        return f"{path}: {message} (see `{path} --help`)"
    return message


def plain_help(command: Any) -> None:
    """Plain-text help for ``command`` and its subcommands: rich's renderer costs more
    start-up than the rest of --help."""
    if hasattr(command, "rich_markup_mode"):
        command.rich_markup_mode = None
    for sub in getattr(command, "commands", {}).values():
        plain_help(sub)


class OneLineUsageGroup(TyperGroup):
    """The root group: one-line usage errors where a program reads them."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             windows_expand_args: bool = True, **extra: Any) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        if wants_one_line(argv):
            plain_help(self)
        if not standalone_mode or not wants_one_line(argv):
            return super().main(argv, prog_name, complete_var, standalone_mode,
                                windows_expand_args, **extra)
        try:
            code = super().main(argv, prog_name, complete_var, False, windows_expand_args,
                                **extra)
        except ClickException as exc:
            sys.stderr.write(f"error: {usage_line(exc)}\n")
            sys.stderr.flush()
            sys.exit(exc.exit_code)
        except Abort:
            sys.stderr.write("error: aborted\n")
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


app = typer.Typer(
    name="capevolve", no_args_is_help=True, pretty_exceptions_enable=False,
    cls=OneLineUsageGroup,
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
    (inspect_cmds, ("status", "estimate", "report", "query", "verify", "quarantine")),
    (doctor_cmds, ("doctor", "down")),
    (eval_cmds, ("no-change", "confirm", "probe")),
    (optimize_cmds, ("optimize",)),
    (compare_cmds, ("compare", "diff", "view")),
):
    for name in names:
        app.command(name)(getattr(module, name.replace("-", "_")))
app.add_typer(diagnose_cmds.diagnose_app, name="diagnose")
app.add_typer(diagnose_cmds.census_app, name="census")
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
