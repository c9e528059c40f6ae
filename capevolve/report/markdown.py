"""report.md, every number recomputed from stored rollouts; pass^k is shown only for a k
every task was measured at."""

from __future__ import annotations

import os
from typing import Any

from capevolve._loop.decide import false_accept_ledger
from capevolve._loop.finalize import final_record, val_gain
from capevolve._loop.finalize import progress as finalize_progress
from capevolve._loop.frozen_config import run_config
from capevolve._loop.model_spend import model_spend
from capevolve._loop.standing import standings
from capevolve._loop.status import evaluations, run_warnings
from capevolve._loop.summary import summarize
from capevolve._policy import budget
from capevolve._store.documents import read_final
from capevolve._store.evals import find_eval
from capevolve._store.rundir import RunDir
from capevolve.kinds import EventKind, Split
from capevolve.report.data import model_spend_lines, standing_text
from capevolve.report.loop_section import loop_section
from capevolve.report.words import gate_power_text, keep_count, scored_text


def _num(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _measured(stats: dict[str, Any], floor: float) -> str:
    if stats["n_scored"] == 0 or stats["coverage"] < floor:
        return f"not measured (coverage {stats['coverage']:.2f} < {floor:g})"
    return f"{_num(stats['mean'])} ± {_num(stats['stderr'])}"


def _pass_k(stats: dict[str, Any]) -> str:
    table = stats["pass_k"]
    return ", ".join(f"pass^{k} {v:.3f}" for k, v in table.items()) or "—"


def _decisions(run: RunDir) -> dict[str, dict[str, Any]]:
    """Latest gate and accept / reject per candidate, with an accept's standing."""
    out: dict[str, dict[str, Any]] = {}
    kept = standings(run)
    for event in run.events():
        cid = str(getattr(event, "candidate_id", None))
        if event.kind == EventKind.GATE:
            out.setdefault(cid, {})["gate"] = event.to_json()
        elif event.kind in (EventKind.ACCEPT, EventKind.REJECT):
            entry = kept.get(cid, {}) if event.kind == EventKind.ACCEPT else {}
            out.setdefault(cid, {})["decision"] = str(event.kind) + standing_text(entry)
    return out


def _cost(spent: dict[str, Any]) -> str:
    if spent["cost_usd"] is None:
        return "not recorded"
    unrecorded = spent["cost_unrecorded"]
    note = f" ({unrecorded} rollouts not recorded)" if unrecorded else ""
    return f"${spent['cost_usd']:.4f}{note}"


def render(run: RunDir) -> str:
    """The markdown report of a run."""
    config = run_config(run)
    floor = config.gate.min_coverage
    lines = [f"# capevolve report: {config.name}", "",
             f"Run `{run.run_id}` · best candidate **{run.best_id}** · "
             f"splits train {len(run.splits.train)} / val {len(run.splits.val)} / "
             f"test {len(run.splits.test)} tasks (seed {run.splits.seed})", ""]
    lines += [f"> **Warning:** {w}." for w in run_warnings(run)] + (
        [""] if run_warnings(run) else [])
    lines += ["## Validation", "",
              "| candidate | eval | mean ± SE | scored | errors | pass^k | gate | decision |",
              "|---|---|---|---|---|---|---|---|"]
    decided = _decisions(run)
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
        gate_text = (f"{gate['decision']} (Δ {_num(gate['delta'])}, SE {_num(gate['se'])})"
                     if gate else "—")
        decision = info.get("decision") or ("baseline" if record["candidate_id"] == "seed"
                                            else "—")
        scored = scored_text(stats["n_scored"], stats["n_tasks"],
                             stored.excluded_reasons if stored is not None else None)
        lines.append(
            f"| {record['candidate_id']} | {record['eval_id']} | {_measured(stats, floor)} | "
            f"{scored} | {stats['n_errors']} | {_pass_k(stats)} "
            f"| {gate_text} | {decision} |")
        power = gate_power_text(gate.get("power")) if gate else None
        if power:
            sensitivity.append(f"- {record['candidate_id']}'s gate: {power}")
    lines += ["", *sensitivity, *([""] if sensitivity else []), *loop_section(run)]
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
        f"({best['n_scored']}/{best['n_tasks']} scored; {_pass_k(best)})",
        f"- seed `{final.baseline_id}`: {_measured(base, floor)} "
        f"({base['n_scored']}/{base['n_tasks']} scored; {_pass_k(base)})",
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
            f"- paired delta: {_num(again.delta)} ({se_kind} {_num(again.se)}, 95% CI "
            f"{('[' + _num(ci[0]) + ', ' + _num(ci[1]) + ']') if ci else '—'}, "
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
    planned = ("—" if summary.planned_bound is None else f"{summary.planned_bound:.3f}")
    return [
        f"- gates run: {summary.gates} ({summary.decision_gates} deciding, "
        f"{summary.exploratory_gates} exploratory)",
        f"- expected false accepts so far: {summary.expected_false_accepts:.3f} "
        f"(over {summary.distinct_pairs} decisive evaluation pairs; {per_gate})"
        f"{keep_count(summary.to_dict())}",
        f"- bound on any false accept over the budgeted iterations: {planned}",
        f"- the loop guarantees: {summary.guarantee}",
    ]


def write_report(run: RunDir) -> str:
    """Write report.md under the run lock and return its text."""
    with run.locked():
        text = render(run)
        target = run.layout.report_md
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
    return text
