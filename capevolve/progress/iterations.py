"""The optimizer's live iteration table: one :class:`IterationRow` per optimize iteration."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.table import Table


@dataclass(frozen=True)
class IterationRow:
    """One optimize iteration as the table shows it (None: not measured / not recorded)."""

    iteration: int
    candidate_id: str
    parent: str | None
    proposer: str
    decision: str
    val_mean: float | None = None
    val_se: float | None = None
    metric_calls: int | None = None
    cost_usd: float | None = None
    power: str | None = None
    """The gate's power sentence, for a gated child."""


def _mean(row: IterationRow) -> str:
    if row.val_mean is None:
        return "not measured"
    return f"{row.val_mean:.3f}" + ("" if row.val_se is None else f" ± {row.val_se:.3f}")


def _spend(row: IterationRow) -> str:
    calls = "—" if row.metric_calls is None else f"{row.metric_calls} rollouts"
    cost = "cost not recorded" if row.cost_usd is None else f"${row.cost_usd:.4f}"
    return f"{calls}, {cost}"


def iteration_line(row: IterationRow) -> str:
    """The row as one plain line (the gate's power sentence indented below)."""
    return (f"iteration {row.iteration}: {row.candidate_id} (parent {row.parent or '—'}, "
            f"{row.proposer}) val {_mean(row)} -> {row.decision}; spend {_spend(row)}"
            + (f"\n  {row.power}" if row.power else ""))


def iteration_table(rows: list[IterationRow]) -> Table:
    """The rich table of all rows so far."""
    from rich.table import Table

    table = Table(title="iterations", title_justify="left", box=None, header_style="bold")
    for name in ("iter", "candidate", "parent", "proposer", "val mean ± SE", "decision",
                 "spend"):
        table.add_column(name, no_wrap=True)
    for r in rows:
        table.add_row(str(r.iteration), r.candidate_id, r.parent or "—", r.proposer, _mean(r),
                      r.decision, _spend(r))
    return table
