"""``capevolve optimize``: the automated loop (propose -> evaluate -> gate -> accept|reject)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

import capevolve
from capevolve.cli.options import (
    AddressOpt,
    EngineOpt,
    JsonOpt,
    MaybeRunDirOpt,
    RunProjectOpt,
    resolve_run_dir,
)
from capevolve.cli.output import command, emit, fmt_mean, progress

if TYPE_CHECKING:
    from capevolve.records import IterationLine, MeanLine, OptimizeSummary


def iteration_line(row: IterationLine) -> str:
    """One row of the iteration table (a gate's power on an indented line)."""
    from capevolve.report.words import gate_power_text, num

    what = row.title or row.focus or ""
    screen = f" screen {row.screen}" if row.screen else ""
    numbers = (f" val {num(row.val_child)} vs {num(row.val_best)}"
               f" delta {num(row.delta, '{:+.3f}')} se {num(row.se)}"
               if row.val_child is not None else "")
    reason = f" ({row.reason})" if row.outcome != "accept" and row.reason else ""
    power = gate_power_text(row.power)
    return (f"{row.iteration:>4}  {row.parent:>8} -> {row.child or '—':<8} "
            f"{row.outcome:<12}{screen}{numbers}  {what}{reason}"
            + (f"\n      {power}" if power else ""))


def _val(line: MeanLine | None) -> str:
    return fmt_mean(None, None) if line is None else fmt_mean(line.mean, line.stderr)


def render(result: OptimizeSummary) -> str:
    """The iteration table, stop reason and sealed test result."""
    lines = [f"optimize {result.algorithm} with {result.proposer} on {result.run_dir}",
             "iter    parent -> child    outcome", *map(iteration_line, result.iterations),
             f"stopped: {result.stop_reason}"]
    if result.plateau:
        lines.append(result.plateau)
    lines.append(f"best {result.best_id} val {_val(result.best_val)} "
                 f"(seed {_val(result.seed_val)})")
    from capevolve.report.words import usd

    opt = result.spend.optimizer
    lines.append(f"spend: {result.spend.run.metric_calls} metric calls; "
                 f"optimizer {opt.tokens} tokens, {usd(opt.cost_usd)}, {opt.wall_s:.1f}s")
    final = result.final
    if final:
        test, base = final.test, final.test_baseline
        lines.append(f"sealed test: {final.best_id} {fmt_mean(test.mean, test.stderr)}"
                     f" vs seed {fmt_mean(base.mean, base.stderr)}: {final.verdict_text}")
    elif result.not_finalized:
        lines.append(f"not finalized: {result.not_finalized}")
    return "\n".join(lines)


@command
def optimize(
    *, run_dir: MaybeRunDirOpt = None, project: RunProjectOpt = None,
    algorithm: Annotated[str | None, typer.Option(
        "--algorithm", help="hill-climb (parent = best) or pareto (GEPA-style frontier).")] = None,
    proposer: Annotated[str | None, typer.Option(
        "--proposer", help='scripted:DIR, command:"CLI ... {workdir} ...", or llm[:options].')]
    = None,
    iterations: Annotated[int | None, typer.Option(
        "--iterations", help="Stop after this many iterations (in total, across resumes).")]
    = None,
    parallel: Annotated[int, typer.Option(
        "--parallel", help="Children proposed and evaluated concurrently on one shared "
        "engine, decided in order.")]
    = 1,
    minibatch: Annotated[int | None, typer.Option(
        "--minibatch", help="Train tasks a pareto child is screened on per iteration "
        "(default 3; recorded with the loop).")] = None,
    focus: Annotated[str | None, typer.Option(
        "--focus", help="all, cyclic or hardest-first (over the parent's train clusters).")]
    = None,
    timeout: Annotated[float, typer.Option(
        "--timeout", help="Wall-time bound of one proposal, seconds.")] = 900.0,
    finalize: Annotated[bool, typer.Option(
        "--finalize", help="When the loop stops: seal test once and write report.md.")]
    = False,
    spend_test_ids: Annotated[bool, typer.Option(
        "--spend-test-ids", help="With --finalize: score test even when the best is still the "
        "seed (the project's test ids then count as used).")] = False,
    resume: Annotated[bool, typer.Option(
        "--resume", help="Continue this run's killed or stopped loop with its settings.")]
    = False,
    engine: EngineOpt = None,
    address: AddressOpt = None,
    json: JsonOpt = False,
) -> None:
    """Evolve the run's best candidate automatically: each iteration a proposer edits a
    copy of a parent, and the child goes evaluate -> gate -> accept|reject. Stops at the stop
    condition, a budget cap or --iterations; bad settings exit 2 before any rollout."""
    run_dir = resolve_run_dir(run_dir, project)
    from capevolve.progress.iterations import IterationRow
    from capevolve.progress.live import live_progress
    from capevolve.report.words import gate_power_text

    with live_progress() as display:  # on stderr: each evaluation's units and the table
        def shown(row: IterationLine) -> None:
            if display is None:
                progress(iteration_line(row))
                return
            display.iteration(IterationRow(
                iteration=row.iteration, candidate_id=row.child or "—", parent=row.parent,
                proposer=proposer or "as recorded", decision=row.outcome,
                val_mean=row.val_child, metric_calls=row.metric_calls,
                cost_usd=row.proposer_cost_usd, power=gate_power_text(row.power)))

        if not resume:
            from capevolve.cli.inspect_cmds import estimate_line

            found = capevolve.estimate(run_dir, iterations=iterations, finalize=finalize)
            if found.per_rollout.source != "none":  # a run that calls a model
                progress(estimate_line(found))
        result = capevolve.optimize_run(
            run_dir, algorithm=algorithm, proposer=proposer, iterations=iterations,
            parallel=parallel, focus=focus, timeout_s=timeout, finalize=finalize,
            resume=resume, engine=None if engine is None else str(engine), address=address,
            on_iteration=shown, minibatch=minibatch,
            spend_test_ids=spend_test_ids)
    emit(result.to_dict(), json, render(result))
