"""Usage errors (unknown command or option, bad value) on one line."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from typer import Abort
from typer._click.exceptions import ClickException, UsageError  # typer vendors its click
from typer.core import TyperGroup


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
