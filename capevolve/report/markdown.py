"""report.md, every number recomputed from stored rollouts; pass^k is shown only for a k
every task was measured at."""

from __future__ import annotations

from typing import Any

from capevolve._loop.decide import false_accept_ledger
from capevolve._loop.finalize import final_record, val_gain
from capevolve._loop.finalize import progress as finalize_progress
from capevolve._loop.frozen_config import run_config
from capevolve._loop.loop_status import loop_status
from capevolve._loop.model_spend import model_spend
from capevolve._loop.status import evaluations, run_warnings
from capevolve._loop.summary import summarize
from capevolve._policy import budget
from capevolve._store.documents import read_final
from capevolve._store.evals import find_eval
from capevolve._store.iterations import LoopFiles
from capevolve._store.jsonfiles import write_bytes_atomic
from capevolve._store.rundir import RunDir
from capevolve.kinds import Split
from capevolve.report.data import model_spend_lines, standing_text
from capevolve.report.lineage import decisions
from capevolve.report.words import gate_power_text, keep_count, num, pass_k_text, scored_text, usd


def _measured(stats: dict[str, Any], floor: float) -> str:
    if stats["n_scored"] == 0 or stats["coverage"] < floor:
        return f"not measured (coverage {stats['coverage']:.2f} < {floor:g})"
    return f"{num(stats['mean'])} ± {num(stats['stderr'])}"


def _cost(spent: dict[str, Any]) -> str:
    unrecorded = spent["cost_unrecorded"] if spent["cost_usd"] is not None else 0
    return usd(spent["cost_usd"]) + (f" ({unrecorded} rollouts not recorded)" if unrecorded
                                     else "")


def render(run: RunDir) -> str:
    """The markdown report of a run."""
    config = run_config(run)
    floor = config.gate.min_coverage
    lines = [f"# capevolve report: {config.name}", "",
             f"Run `{run.run_id}` · best candidate **{run.best_id}** · "
             f"splits train {len(run.splits.train)} / val {len(run.splits.val)} / "
             f"test {len(run.splits.test)} tasks (seed {run.splits.seed})", ""]
    warnings = run_warnings(run)
    lines += [f"> **Warning:** {w}." for w in warnings] + ([""] if warnings else [])
    lines += ["## Validation", "",
              "| candidate | eval | mean ± SE | scored | errors | pass^k | gate | decision |",
              "|---|---|---|---|---|---|---|---|"]
    decided = decisions(run)
    sensitivity: list[str] = []
    for record in evaluations(run):
        if record["split"] != Split.VAL:
            continue
        stored = find_eval(run, record["eval_id"])
        excluded = stored.excluded_tasks if stored is not None else {}  # in no denominator
        stats = summarize(run, record["eval_id"],
                          tuple(t for t in run.splits.ids(record["split"]) if t not in excluded))
        info = decided.get(record["candidate_id"], {})
        gate = info.get("gate")
        gate_text = (f"{gate['decision']} (Δ {num(gate['delta'])}, SE {num(gate['se'])})"
                     if gate else "—")
        decision = (info["decision"] + standing_text(info) if info.get("decision")
                    else "baseline" if record["candidate_id"] == "seed" else "—")
        scored = scored_text(stats["n_scored"], stats["n_tasks"],
                             stored.excluded_reasons if stored is not None else None)
        lines.append(
            f"| {record['candidate_id']} | {record['eval_id']} | {_measured(stats, floor)} | "
            f"{scored} | {stats['n_errors']} | {pass_k_text(stats['pass_k'])} "
            f"| {gate_text} | {decision} |")
        power = gate_power_text(gate.get("power")) if gate else None
        if power:
            sensitivity.append(f"- {record['candidate_id']}'s gate: {power}")
    lines += ["", *sensitivity, *([""] if sensitivity else []), *_loop_section(run)]
    lines += ["## Gates", ""] + _gates_section(run)
    lines += ["", "## Held-out test", ""]
    lines += _final_section(run, floor)
    spent = run.spent.to_dict()
    lines += ["", "## Spend", "",
              f"- iterations: {spent['iterations']}", f"- metric calls: {spent['metric_calls']}",
              f"- tokens: {spent['tokens'] or 'not recorded'}", f"- cost: {_cost(spent)}",
              f"- rollout wall time: {spent['wall_s']:.1f} s",
              *(f"- model calls, {line}" for line in model_spend_lines(
                  model_spend(run, budget.spend_by_role(run.events()).get("optimizer")))),
              f"- stop condition: {config.stop_condition or '—'}", ""]
    return "\n".join(lines)


def _loop_section(run: RunDir) -> list[str]:
    """The "Optimization loop" section, from optimize/ledger.jsonl (none when the run has no
    optimize loop)."""
    status = loop_status(run)
    if status is None:
        return []
    lines = ["## Optimization loop", "",
             f"{status['algorithm']} with `{status['proposer']}`: {status['iterations']} "
             f"iterations; stopped: {status['stopped'] or 'not stopped (killed or running)'}",
             "", "| # | parent | child | outcome | val Δ | SE | rollouts | note |",
             "|---|---|---|---|---|---|---|---|"]
    for r in LoopFiles(run.root).read_ledger():
        gate = r.gate
        note = r.detail.get("title") or r.focus or (r.reasons[0] if r.reasons else "")
        note = str(note).replace("|", "/")[:120]
        lines.append(f"| {r.iteration} | {r.parent_id} | {r.child_id or '—'} | {r.outcome} | "
                     f"{num(gate.delta if gate else None, '{:+.3f}')} | "
                     f"{num(gate.se if gate else None)} | {r.metric_calls} | "
                     f"{note} |")
    spend = status["optimizer_spend"]
    lines += ["", f"- plateau: {status['plateau'] or 'no'}",
              f"- optimizer spend: {spend['tokens']} tokens, {usd(spend['cost_usd'])}, "
              f"{spend['wall_s']:.1f} s of proposer time", ""]
    return lines


def _final_section(run: RunDir, floor: float) -> list[str]:
    if not run.layout.final.is_file():
        interrupted = finalize_progress(run)
        if interrupted is not None:
            return [f"Not finalized: {interrupted} (no delta, no verdict until it completes)."]
        return ["Not finalized: the test split has not been scored."]
    final = read_final(run.layout)
    ids = run.splits.ids(Split.TEST)
    sides = []
    for summary in (final.test, final.test_baseline):
        stored = find_eval(run, summary.eval_id)
        clusters = dict(stored.clusters) if stored is not None and stored.clusters else None
        excluded = stored.excluded_tasks if stored is not None else {}
        stats = summarize(run, summary.eval_id, tuple(t for t in ids if t not in excluded),
                          clusters)
        sides.append({**summary.to_json(), **stats,
                      "incomplete_reason": stored.incomplete_reason if stored else None})
    best, base = sides
    again = final_record(final.best_id, best, base, ids, val_gain(run, final.best_id),
                         final.test_reuse, final.test_ids_sha256)
    lines = [
        f"- best `{final.best_id}`: {_measured(best, floor)} "
        f"({best['n_scored']}/{best['n_tasks']} scored; {pass_k_text(best['pass_k'])})",
        f"- seed `{final.baseline_id}`: {_measured(base, floor)} "
        f"({base['n_scored']}/{base['n_tasks']} scored; {pass_k_text(base['pass_k'])})",
    ]
    if again.missing:
        lines.append("- paired delta: not measured (no delta, no CI): the test evaluation "
                     "is incomplete")
        lines += [f"  - missing: {item}" for item in again.missing]
    else:
        ci = again.ci95
        se_kind = (f"CR1 clustered SE over {again.n_clusters} clusters"
                   if again.n_clusters else "SE")
        lines.append(
            f"- paired delta: {num(again.delta)} ({se_kind} {num(again.se)}, 95% CI "
            f"{('[' + num(ci[0]) + ', ' + num(ci[1]) + ']') if ci else '—'}, "
            f"n = {again.n_compared} tasks)")
    label, _, why = again.verdict_text.partition(": ")
    lines.append(f"- verdict: **{label}**: {why}" if why else f"- verdict: **{label}**")
    reuse = final.test_reuse
    lines.append(f"- {reuse.message}" + (f" (runs {', '.join(reuse.earlier_runs)})"
                                         if reuse and reuse.earlier_runs else "")
                 if reuse else "- test reuse: not recorded")
    return lines


def _gates_section(run: RunDir) -> list[str]:
    summary = false_accept_ledger(run)
    per_gate = ("k_se fixed: per-gate alpha depends on each gate's df"
                if summary.per_gate_alpha is None else f"alpha {summary.per_gate_alpha:.4g} "
                f"per gate ({summary.alpha_spending})")
    return [
        f"- gates run: {summary.gates} ({summary.decision_gates} deciding, "
        f"{summary.exploratory_gates} exploratory)",
        f"- expected false accepts so far: {summary.expected_false_accepts:.3f} "
        f"(over {summary.distinct_pairs} decisive evaluation pairs; {per_gate})"
        f"{keep_count(summary.to_dict())}",
        f"- bound on any false accept over the budgeted iterations: {num(summary.planned_bound)}",
        f"- the loop guarantees: {summary.guarantee}",
    ]


def write_report(run: RunDir) -> str:
    """Write report.md under the run lock and return its text."""
    with run.locked():
        text = render(run)
        write_bytes_atomic(run.layout.report_md, text.encode("utf-8"), sync=False)
    return text
