"""Commands that read a run: status, estimate, report, query; verify checks its history and
rows, and quarantine sets aside what is forged."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

import capevolve
from capevolve.cli.options import JsonOpt, MaybeRunDirOpt, RunProjectOpt, resolve_run_dir
from capevolve.cli.output import command, emit, fmt_mean, stop_line

if TYPE_CHECKING:
    from capevolve.records import Estimate, FinalLine, Quarantine, RunStatus, Verification


def _status_human(status: RunStatus, decisions: list[dict[str, Any]]) -> str:
    from capevolve.report.data import model_spend_lines, standing_text
    from capevolve.report.words import keep_count, scored_text, usd

    spent, budget, best = status.spent, status.budget, status.best_val
    standing = status.best_standing.to_dict() if status.best_standing else {}

    def cap(value: float) -> str:
        return f" of {value:g}" if value else " (no cap)"

    lines = [
        f"run {status.run_id} ({status.project}): best {status.best_id}"
        f"{standing_text(standing)} val "
        f"{fmt_mean(best.mean, best.stderr) if best else fmt_mean(None, None)}",
        f"iterations {spent.iterations}{cap(budget.max_iterations)}; metric calls "
        f"{spent.metric_calls}{cap(budget.max_metric_calls)}; tokens "
        f"{spent.tokens or 'not recorded'}; cost {usd(spent.cost_usd)}{cap(budget.max_usd)}; "
        f"wall {spent.wall_s:.1f}s",
        f"stop condition: {status.stop_condition or '—'}; stall {status.stall}",
        *(f"model calls, {line}" for line in model_spend_lines(
            {role: spend.to_dict() for role, spend in status.model_spend.items()})),
    ]
    lines += [f"WARNING: {w}" for w in status.containment]
    stop = stop_line(status.stop)
    if stop:
        lines.append(stop)
    loop = status.optimize
    if loop:
        outcomes = ", ".join(f"{k} {v}" for k, v in loop.outcomes.items()) or "none yet"
        lines.append(f"optimize loop ({loop.algorithm}, {loop.proposer}): "
                     f"{loop.iterations} iterations ({outcomes}); "
                     f"{'stopped: ' + loop.stopped if loop.stopped else 'not stopped'}")
        if loop.plateau:
            lines.append(loop.plateau)
    if status.budget_exhausted:
        lines.append("budget exhausted: " + "; ".join(status.budget_exhausted))
    gates = status.gates
    lines.append(f"gates run {gates.gates} ({gates.exploratory_gates} exploratory); "
                 f"expected false accepts {gates.expected_false_accepts:.3f} at the run's "
                 "gate settings" + keep_count(gates.to_dict()))
    if gates.guarantee:
        lines.append(f"the loop guarantees: {gates.guarantee}")
    for e in status.evaluations:
        lines.append(f"  {e.eval_id}: {fmt_mean(e.mean, e.stderr)} "
                     f"({scored_text(e.n_scored, e.n_tasks, e.excluded_reasons)}) [{e.status}]")
    lines.append("candidates:")
    for c in decisions:
        gate = f"; gate said {c['gate']}" if c["gate"] else ""
        lines.append(f"  {c['candidate_id']} (parent {c['parent'] or '—'}): {c['decision']}"
                     f"{standing_text(c)}{gate}; val {fmt_mean(c['val_mean'], c['val_stderr'])}")
    return "\n".join(lines + _final_lines(status.final))


def _final_lines(final: FinalLine | None) -> list[str]:
    if final is None:
        return ["not finalized"]
    if final.interrupted:
        return [final.verdict_text]
    return [f"finalized: {final.verdict_text}", *(f"  missing: {m}" for m in final.missing),
            *([f"  {final.test_reuse}"] if final.test_reuse else [])]


@command
def status(run_dir: MaybeRunDirOpt = None, project: RunProjectOpt = None,
           json: JsonOpt = False) -> None:
    """Best candidate, spend against budget, gates and expected false accepts,
    evaluations, each candidate's decision, the finalize verdict. Read-only."""
    from capevolve import _api
    from capevolve.report.data import candidate_decisions

    run = capevolve.open_run(resolve_run_dir(run_dir, project))
    status = capevolve.status(run)
    decisions = candidate_decisions(_api.run_dir_of(run))
    emit({**status.to_dict(), "decisions": decisions}, json, _status_human(status, decisions))


def estimate_line(found: Estimate) -> str:
    """One line: rollouts, tokens and dollars as ranges."""
    usd = found.usd
    cost = "cost unknown (no price)" if usd.low is None or usd.high is None \
        else f"${usd.low:.4f} .. ${usd.high:.4f}"
    cap = f" (budget.max_usd ${found.max_usd:g})" if found.max_usd else ""
    return (f"estimate: {found.rollouts.low} .. {found.rollouts.high} rollouts, "
            f"{found.tokens.low} .. {found.tokens.high} tokens, {cost}{cap}; "
            f"per rollout from the {found.per_rollout.source}")


@command
def estimate(run_dir: MaybeRunDirOpt = None, project: RunProjectOpt = None,
             iterations: Annotated[int | None, typer.Option(
                 "--iterations", min=0, help="Iterations planned (default: "
                 "budget.max_iterations).")] = None,
             json: JsonOpt = False) -> None:
    """What the run will spend before spending it: planned rollouts times one rollout's
    tokens and dollars, as a range. Read-only."""
    run = capevolve.open_run(resolve_run_dir(run_dir, project))
    found = capevolve.estimate(run, iterations=iterations)
    emit(found.to_dict(), json, estimate_line(found))


@command
def report(run_dir: MaybeRunDirOpt = None, project: RunProjectOpt = None,
           html: Annotated[bool, typer.Option(
               "--html", help="Also write report.html next to report.md: one self-contained "
               "page with the plots (no network needed to open it).")] = False,
           json: JsonOpt = False) -> None:
    """Write report.md from stored data and print it; --html also writes report.html,
    --json prints the report's data too."""
    from capevolve import _api
    from capevolve.report.data import report_data
    from capevolve.report.markdown import write_report

    run = _api.run_dir_of(resolve_run_dir(run_dir, project))
    data = report_data(run) if json or html else None  # read and checked before any write
    text = write_report(run)
    payload: dict[str, Any] = {"report": str(run.layout.report_md), "markdown": text}
    if html:
        from capevolve.report.html import write_html

        payload["html"] = str(write_html(run, data))
    if json:
        payload["data"] = data
    emit(payload, json, text + (f"\nreport.html: {payload['html']}" if html else ""))


@command
def query(sql: Annotated[str, typer.Argument(
              help="One read-only SELECT over the `rollouts` view.")],
          run_dir: MaybeRunDirOpt = None, project: RunProjectOpt = None,
          json: JsonOpt = False) -> None:
    """Run one read-only DuckDB SELECT over the `rollouts` view (one row per unit); writes,
    ATTACH, INSTALL/LOAD, PRAGMA/SET and other files are refused (exit 2)."""
    columns, rows = capevolve.query(resolve_run_dir(run_dir, project), sql)
    payload = {"columns": columns, "rows": [list(r) for r in rows]}
    shown = rows[:200]
    widths = [max([len(c)] + [len(str(r[i])) for r in shown]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))]
    lines += ["  ".join(str(v).ljust(w) for v, w in zip(r, widths, strict=True)) for r in shown]
    if len(rows) > 200:
        lines.append(f"... {len(rows) - 200} more rows (use --json for all)")
    emit(payload, json, "\n".join(lines))


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
    result = capevolve.verify(resolve_run_dir(run_dir, project))
    emit(result.to_dict(), json, _verify_human(result), failed=not result.ok)


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
    result = capevolve.quarantine(resolve_run_dir(run_dir, project))
    emit(result.to_dict(), json, _quarantine_human(result), failed=not result.ok)
