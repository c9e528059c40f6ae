"""Commands beside the gate: ``no-change`` (an unscorable iteration), ``confirm`` and ``probe``."""

from __future__ import annotations

from typing import Annotated

import typer

import capevolve
from capevolve.cli.options import (
    AddressOpt,
    EngineOpt,
    JsonOpt,
    MaybeRunDirOpt,
    RunProjectOpt,
    resolve_run_dir,
    split_or_fail,
)
from capevolve.cli.output import command, emit


@command
def no_change(*, run_dir: MaybeRunDirOpt = None, project: RunProjectOpt = None,
              reason: Annotated[str, typer.Option(
                  "--reason", help="Why the change could not be scored (required, non-empty).")],
              candidate: Annotated[str | None, typer.Option(
                  "--candidate", "-c", help="The candidate id, when there was one.")] = None,
              json: JsonOpt = False) -> None:
    """Record an iteration whose change could not be scored (harness broken, judge
    unreachable): the best carries forward and no iteration is spent."""
    run_dir = resolve_run_dir(run_dir, project)
    result = capevolve.no_change(run_dir, reason, candidate)
    emit(result.to_dict(), json, f"no_change recorded as result {result.result}: best stays "
                                 f"{result.best_id}")


@command
def confirm(*, run_dir: MaybeRunDirOpt = None, project: RunProjectOpt = None,
            candidate: Annotated[str, typer.Option("--candidate", "-c", help="Candidate id.")],
            trials: Annotated[int | None, typer.Option(
                "--trials", min=1, help="More trials per side (default: num_trials).")] = None,
            address: AddressOpt = None, engine: EngineOpt = None, json: JsonOpt = False) -> None:
    """Re-run a kept candidate and its reference with more trials (fresh seeds shared by
    both) and record the pooled, higher-power numbers; the best never changes."""
    run_dir = resolve_run_dir(run_dir, project)
    r = capevolve.confirm(run_dir, candidate, trials=trials, engine=engine, address=address)
    t = "—" if r.t is None else f"{r.t:.2f}"
    emit(r.to_dict(), json,
         f"{candidate} vs {r.reference_id} over {r.n_candidate}+{r.n_best} trials: delta "
         f"{r.delta:+.4f}, SE_diff {r.se_diff:.4f}, t {t}: {r.confidence} (was "
         f"{r.label_before})" + (", still TENTATIVE" if r.tentative else "")
         + f"; raw band {'cleared' if r.raw_band_cleared else 'not cleared'}; "
         f"best stays {r.best_id}")


@command
def probe(*, run_dir: MaybeRunDirOpt = None, project: RunProjectOpt = None,
          candidate: Annotated[str, typer.Option(
              "--candidate", "-c", help="A candidate directory or id.")],
          tasks: Annotated[str | None, typer.Option(
              "--tasks", help="Comma-separated task ids of the split to probe.")] = None,
          cluster: Annotated[str | None, typer.Option(
              "--cluster", help="A recorded census bucket or a diagnose cluster signature "
                                "of the split: probe its tasks.")] = None,
          failing: Annotated[bool, typer.Option(
              "--failing", help="Probe every task the best fails on the split.")] = False,
          split: Annotated[str, typer.Option("--split", "-s", help="train or val.")] = "val",
          address: AddressOpt = None, engine: EngineOpt = None, json: JsonOpt = False) -> None:
    """Evaluate a candidate on its targeted datapoints only and report how many targeted
    failures flipped against the best. A probe is never gated: it can kill a hypothesis, never
    accept one."""
    run_dir = resolve_run_dir(run_dir, project)
    split_or_fail(split, "probe")
    ids = None if tasks is None else [t.strip() for t in tasks.split(",") if t.strip()]
    r = capevolve.probe(run_dir, candidate, tasks=ids, cluster=cluster, failing=failing,
                        split=split, engine=engine, address=address)
    hint = ("; suggestion: record `capevolve no-change --reason ...`"
            if r.suggestion == "no_change" else "")
    emit(r.to_dict(), json, f"{r.eval_id} [{r.status}]: {r.reasoning}{hint}")
