"""The report's "Optimization loop" section, from optimize/ledger.jsonl."""

from __future__ import annotations

from capevolve._loop.loop_status import loop_status
from capevolve._store.iterations import LoopFiles
from capevolve._store.rundir import RunDir


def _num(value: float | None, fmt: str = "{:+.3f}") -> str:
    return "—" if value is None else fmt.format(value)


def loop_section(run: RunDir) -> list[str]:
    """Markdown lines of the section (none when the run has no optimize loop)."""
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
                     f"{_num(gate.delta if gate else None)} | "
                     f"{_num(gate.se if gate else None, '{:.3f}')} | {r.metric_calls} | "
                     f"{note} |")
    spend = status["optimizer_spend"]
    cost = "not recorded" if spend["cost_usd"] is None else f"${spend['cost_usd']:.4f}"
    lines += ["", f"- plateau: {status['plateau'] or 'no'}",
              f"- optimizer spend: {spend['tokens']} tokens, {cost}, {spend['wall_s']:.1f} s "
              "of proposer time", ""]
    return lines
