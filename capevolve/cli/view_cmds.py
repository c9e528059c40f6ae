"""``capevolve view``: the local, read-only web viewer of a run."""

from __future__ import annotations

from typing import Annotated

import typer

from capevolve.cli.options import JsonOpt, MaybeRunDirOpt, RunProjectOpt, resolve_run_dir
from capevolve.cli.output import command, emit, progress


@command
def view(*, run_dir: MaybeRunDirOpt = None, project: RunProjectOpt = None,
         port: Annotated[int, typer.Option("--port", "-p", min=0, max=65535,
                                           help="Port (0: any free port).")] = 8765,
         host: Annotated[str, typer.Option(
             "--host", help="Address to bind. The default serves this machine only; any "
             "other address lets others on the network read the run.")] = "127.0.0.1",
         json: JsonOpt = False) -> None:
    """Serve a read-only web viewer of the run (overview, task -> trial browser, candidates
    side by side, diffs). Ctrl-C stops it."""
    run_dir = resolve_run_dir(run_dir, project)
    from capevolve.view.server import ViewerServer

    try:
        server = ViewerServer(run_dir, host=host, port=port)
    except OSError as exc:
        raise_bind_error(host, port, exc)
    scope = ("bound to loopback: only this machine can connect" if server.loopback else
             f"bound to {host}: anyone who can reach this address can read the run")
    emit({"url": server.url, "run_dir": str(run_dir), "loopback": server.loopback}, json,
         f"capevolve view: {server.url} ({scope}); Ctrl-C stops")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        progress("capevolve view: stopped")
    finally:
        server.server_close()


def raise_bind_error(host: str, port: int, exc: OSError) -> None:
    """One line for an address that cannot be bound."""
    from capevolve.errors import ConfigError

    raise ConfigError(f"view: cannot serve on {host}:{port} ({exc.strerror or exc}); "
                      "choose another --port or --host") from None
