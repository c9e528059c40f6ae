"""compare (per task) and diff (files): two candidates side by side; view: the local,
read-only web viewer of a run."""

from __future__ import annotations

from typing import Annotated

import typer

from capevolve.cli.options import (
    JsonOpt,
    MaybeRunDirOpt,
    RunProjectOpt,
    resolve_run_dir,
    split_or_fail,
)
from capevolve.cli.output import command, emit, progress
from capevolve.kinds import Split

CandidateA = Annotated[str, typer.Argument(metavar="A",
                                           help="The first candidate id (the reference).")]
CandidateB = Annotated[str, typer.Argument(metavar="B", help="The second candidate id.")]


def _compare_human(result: dict) -> str:
    from capevolve.report.words import num

    lines = [f"{result['a']} -> {result['b']} on {result['split']} ({result['eval_a']} vs "
             f"{result['eval_b']}): mean {num(result['mean_a'])} -> {num(result['mean_b'])};"
             f" {result['improved']} tasks up, {result['worsened']} down; "
             f"{len(result['flips']['fail->pass'])} fail->pass, "
             f"{len(result['flips']['pass->fail'])} pass->fail"]
    width = max((len(r["task_id"]) for r in result["tasks"]), default=4)
    lines.append(f"  {'task':<{width}}  {result['a']:>8}  {result['b']:>8}  {'delta':>7}  flip")
    for row in result["tasks"]:
        moved = ""
        if result["diagnosed"] and row["clusters_a"] != row["clusters_b"]:
            moved = (f"  [{', '.join(row['clusters_a']) or 'no cluster'} -> "
                     f"{', '.join(row['clusters_b']) or 'no cluster'}]")
        lines.append(f"  {row['task_id']:<{width}}  {num(row['mean_a']):>8}  "
                     f"{num(row['mean_b']):>8}  {num(row['delta'], '{:+.3f}'):>7}  "
                     f"{row['flip'] or ''}{moved}")
    return "\n".join(lines)


@command
def compare(a: CandidateA, b: CandidateB, *, run_dir: MaybeRunDirOpt = None,
            project: RunProjectOpt = None,
            split: Annotated[str, typer.Option("--split", "-s", help="val or train.")] = "val",
            json: JsonOpt = False) -> None:
    """Per-task paired table of two candidates on val or train: means, delta, flips and,
    when both were diagnosed, each task's cluster moves. Read-only."""
    run_dir = resolve_run_dir(run_dir, project)
    split_or_fail(split, "compare")
    from capevolve import _api
    from capevolve.view.compare import compare as compare_candidates

    result = compare_candidates(_api.run_dir_of(run_dir), a, b, Split(split))
    emit(result, json, _compare_human(result))


@command
def diff(a: CandidateA, b: CandidateB, *, run_dir: MaybeRunDirOpt = None,
         project: RunProjectOpt = None,
         stat: Annotated[bool, typer.Option("--stat", help="Only the changed files and "
                                            "line counts.")] = False,
         json: JsonOpt = False) -> None:
    """Unified diff of two candidates' files (their immutable snapshots). Read-only."""
    from capevolve import _api
    from capevolve.view.diff import diff as diff_candidates
    from capevolve.view.diff import stat_text

    result = diff_candidates(_api.run_dir_of(resolve_run_dir(run_dir, project)), a, b)
    if stat:
        result = {**result, "files": [{k: v for k, v in c.items() if k != "diff"}
                                      for c in result["files"]]}
        emit(result, json, stat_text(result))
        return
    text = "".join(c["diff"] or f"binary file {c['path']} differs ({c['status']})\n"
                   for c in result["files"])
    emit(result, json, text.rstrip("\n") or stat_text(result))


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
    except OSError as exc:  # one line for an address that cannot be bound
        from capevolve.errors import ConfigError

        raise ConfigError(f"view: cannot serve on {host}:{port} ({exc.strerror or exc}); "
                          "choose another --port or --host") from None
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
