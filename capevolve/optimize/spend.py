"""What an iteration records beside its ledger line: the proposer's spend and wall time."""

from __future__ import annotations

from datetime import UTC, datetime

from capevolve.kinds import EventKind, SpendRole
from capevolve.optimize.session import Session
from capevolve.records._optimize import IterationRecord


def record_optimizer_spend(s: Session, record: IterationRecord) -> None:
    """Record the proposer's tokens and cost as one ``optimizer`` spend event per iteration
    (unknown or partial cost: one ``cost_unrecorded``)."""
    spend = record.spend
    usage = record.detail.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    unknown = any(isinstance(usage.get(k), int) and usage[k] > 0
                  for k in ("unknown_attempts", "unpriced_calls"))
    if not spend.tokens and not spend.cost_usd and not unknown:
        return
    session = f"optimize:{record.iteration:04d}"
    if any(getattr(e, "session", None) == session for e in s.run.events(EventKind.SPEND)):
        return
    s.run.record(EventKind.SPEND, role=SpendRole.OPTIMIZER, session=session,
                  tokens=spend.tokens, cost_usd=float(spend.cost_usd or 0.0),
                  cost_unrecorded=0 if spend.cost_usd is not None and not unknown else 1)


def since(started: str) -> float:
    """Seconds since the ISO time ``started`` (0 if unreadable)."""
    try:
        then = datetime.fromisoformat(started.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    return max(0.0, (datetime.now(UTC) - then).total_seconds())
