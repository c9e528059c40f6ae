"""report.md: every number recomputed from the stored rollouts by code.

Evaluations below the gate's coverage floor are shown as "not measured", unknown cost as
"not recorded", and pass^k only for the k every task was measured at.
"""

from __future__ import annotations

from typing import Any

from capevolve._store import jsonfiles
from capevolve._loop.evaluate import run_config, summarize
from capevolve._loop.finalize import paired_delta
from capevolve.kinds import EventKind, Split
from capevolve._store.rundir import RunDir
from capevolve._loop.status import evaluations


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
    """Latest gate / accept / reject per candidate."""
    out: dict[str, dict[str, Any]] = {}
    for event in run.events():
        cid = event.get("candidate_id")
        if event["kind"] == EventKind.GATE:
            out.setdefault(cid, {})["gate"] = event
        elif event["kind"] in (EventKind.ACCEPT, EventKind.REJECT):
            out.setdefault(cid, {})["decision"] = event["kind"]
    return out


def _cost(spent: dict[str, Any]) -> str:
    if spent["cost_usd"] is None:
        return "not recorded"
    note = f" ({spent['cost_unrecorded']} rollouts not recorded)" if spent["cost_unrecorded"] else ""
    return f"${spent['cost_usd']:.4f}{note}"


def render(run: RunDir) -> str:
    """The markdown report of a run."""
    config = run_config(run)
    floor = config.gate.min_coverage
    lines = [f"# capevolve report: {config.name}", "",
             f"Run `{run.run_id}` · best candidate **{run.best_id}** · "
             f"splits train {len(run.splits.train)} / val {len(run.splits.val)} / "
             f"test {len(run.splits.test)} tasks (seed {run.splits.seed})", ""]
    lines += ["## Validation", "",
              "| candidate | eval | mean ± SE | scored | errors | pass^k | gate | decision |",
              "|---|---|---|---|---|---|---|---|"]
    decided = _decisions(run)
    for record in evaluations(run):
        if record["split"] != Split.VAL:
            continue
        stats = summarize(run, record["eval_id"], run.splits.ids(record["split"]))
        info = decided.get(record["candidate_id"], {})
        gate = info.get("gate")
        gate_text = (f"{gate['decision']} (Δ {_num(gate['delta'])}, SE {_num(gate['se'])})"
                     if gate else "—")
        decision = info.get("decision") or ("baseline" if record["candidate_id"] == "seed"
                                            else "—")
        lines.append(
            f"| {record['candidate_id']} | {record['eval_id']} | {_measured(stats, floor)} | "
            f"{stats['n_scored']}/{stats['n_tasks']} | {stats['n_errors']} | {_pass_k(stats)} "
            f"| {gate_text} | {decision} |")
    lines += ["", "## Held-out test", ""]
    lines += _final_section(run, floor)
    spent = run.spent.to_dict()
    lines += ["", "## Spend", "",
              f"- iterations: {spent['iterations']}", f"- metric calls: {spent['metric_calls']}",
              f"- tokens: {spent['tokens'] or 'not recorded'}", f"- cost: {_cost(spent)}",
              f"- rollout wall time: {spent['wall_s']:.1f} s",
              f"- stop condition: {config.stop_condition or '—'}", ""]
    return "\n".join(lines)


def _final_section(run: RunDir, floor: float) -> list[str]:
    if not run.layout.final.is_file():
        return ["Not finalized: the test split has not been scored."]
    final = jsonfiles.read(run.layout.final)
    ids = run.splits.ids(Split.TEST)
    best = summarize(run, final["test"]["eval_id"], ids)
    base = summarize(run, final["test_baseline"]["eval_id"], ids)
    delta = paired_delta(best, base)
    ci = delta["ci95"]
    return [
        f"- best `{final['best_id']}`: {_measured(best, floor)} "
        f"({best['n_scored']}/{best['n_tasks']} scored; {_pass_k(best)})",
        f"- seed `{final['baseline_id']}`: {_measured(base, floor)} "
        f"({base['n_scored']}/{base['n_tasks']} scored; {_pass_k(base)})",
        f"- paired delta: {_num(delta['delta'])} (SE {_num(delta['se'])}, "
        f"95% CI {('[' + _num(ci[0]) + ', ' + _num(ci[1]) + ']') if ci else '—'}, "
        f"n = {delta['n_compared']} tasks)",
    ]


def write_report(run: RunDir) -> str:
    """Write report.md into the run dir and return its text."""
    text = render(run)
    run.layout.report_md.write_text(text, encoding="utf-8")
    return text
