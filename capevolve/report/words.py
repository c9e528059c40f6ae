"""Numbers in words, said the same by the CLI, report.md and report.html."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def num(value: float | None, fmt: str = "{:.3f}") -> str:
    """``value`` formatted by ``fmt``; "—" when it was never measured."""
    return "—" if value is None else fmt.format(value)


def usd(cost: float | None) -> str:
    """``$0.0123``, or "not recorded" when no call was priced."""
    return "not recorded" if cost is None else f"${cost:.4f}"


def pass_k_text(table: Mapping[int, float] | Mapping[str, float]) -> str:
    """``pass^1 0.800, pass^2 0.650``; "—" when nothing was measured."""
    return ", ".join(f"pass^{k} {v:.3f}" for k, v in table.items()) or "—"


def scored_text(n_scored: int | None, n_tasks: int | None,
                excluded_reasons: Mapping[str, int] | None) -> str:
    """``scored 14/15 / excluded 2 (why)``: scored tasks, and unscorable ones with why."""
    reasons = dict(excluded_reasons or {})
    excluded = sum(reasons.values())
    text = f"scored {n_scored if n_scored is not None else 0}/{n_tasks or 0} / excluded {excluded}"
    if excluded:
        text += " (" + "; ".join(reason if len(reasons) == 1 else f"{count}: {reason}"
                                 for reason, count in reasons.items()) + ")"
    return text


def gate_power_text(power: Mapping[str, Any] | None) -> str | None:
    """A gate's recorded ``power`` in words; None without one."""
    if not power or power.get("mde") is None:
        return None
    n, k = power["n_tasks"], power["trials"]
    text = (f"power: this gate ({n} tasks x {k} trials) detects a true gain of about "
            f"+{power['mde']:.3f} ({power['power']:.0%} of the time, from the spread it "
            "measured); a smaller one mostly reads as noise")
    needed = power.get("trials_for_min_delta")
    if needed is not None and needed > k:
        text += f"; {needed} trials per task would detect gate.min_delta"
    return text


def keep_count(ledger: Mapping[str, Any]) -> str:
    """How keep-best counts its tentative keeps (empty under the strict policy)."""
    if not ledger.get("keep_best"):
        return ""
    return (f"; keep-best counts each of its {ledger['tentative_keeps']} keeps not shown "
            "beyond noise as 1 (a possible false keep)")
