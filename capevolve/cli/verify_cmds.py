"""verify and quarantine: check a run's history and rows, set aside what is forged."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

import capevolve
from capevolve.cli.options import JsonOpt, MaybeRunDirOpt, RunProjectOpt, resolve_run_dir
from capevolve.cli.output import command, emit

if TYPE_CHECKING:
    from capevolve.records import Quarantine, Verification


def _verify_human(result: Verification) -> str:
    lines = [f"{result.run_dir}: {result.events} events, {result.parts} parts "
             f"({result.hashed} hashed)"]
    lines += [f"problem: {line}" for line in result.lines]
    lines += [f"note: {note}" for note in result.notes]
    if result.ok:
        lines.append("ok: history and rows are as capevolve wrote them")
    else:
        lines.append(f"{len(result.lines)} problems; `capevolve quarantine --run-dir "
                     f"{result.run_dir}` sets them aside and records that it did")
    return "\n".join(lines)


@command
def verify(*, run_dir: MaybeRunDirOpt = None,
           project: RunProjectOpt = None, json: JsonOpt = False) -> None:
    """Check the event log (hash chain, signatures, mirrored head), every Parquet part
    against its record, and seal/final against the log. Exit 1 on any problem; writes nothing."""
    run_dir = resolve_run_dir(run_dir, project)
    result = capevolve.verify(run_dir)
    emit(result.to_dict(), json, _verify_human(result))
    if not result.ok:
        raise typer.Exit(1)


def _quarantine_human(result: Quarantine) -> str:
    if not result.problems:
        return f"{result.run_dir}: nothing to quarantine (verify finds no problem)"
    lines = [f"problem: {line}" for line in result.problems]
    for path, target in result.moved.items():
        lines.append(f"moved: {path} -> {target}" if target else f"acknowledged missing: {path}")
    if result.reset_events:
        lines.append("events.jsonl: cut back to its last verified line (the whole log is "
                     "kept in quarantine/)")
    lines += [f"left (not repairable here): {line}" for line in result.left]
    lines.append("ok: the run verifies" if result.ok else
                 f"still failing: {'; '.join(result.remaining)}")
    return "\n".join(lines)


@command
def quarantine(*, run_dir: MaybeRunDirOpt = None,
               project: RunProjectOpt = None, json: JsonOpt = False) -> None:
    """Repair a run that fails `capevolve verify`: move unrecorded or changed parts into
    quarantine/<time>/ (the next evaluate reruns their units), acknowledge missing ones, cut a
    broken event log back to its last verified line, and record it all. Exit 1 if something
    cannot be repaired (a deleted seal or final)."""
    run_dir = resolve_run_dir(run_dir, project)
    result = capevolve.quarantine(run_dir)
    emit(result.to_dict(), json, _quarantine_human(result))
    if not result.ok:
        raise typer.Exit(1)
