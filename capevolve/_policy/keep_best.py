"""Keep-best: keep a move toward the goal that passes the audit."""

from __future__ import annotations

from collections.abc import Sequence

from capevolve._policy.audit import Audit
from capevolve._policy.gate import GateNumbers
from capevolve._policy.gate.thresholds import exceeds
from capevolve.kinds import Confidence, Decision, Standing

__all__ = ["Standing", "keep_best", "standing", "tentative"]


def tentative(decision: Decision, label: Confidence | str | None) -> bool:
    """Accepted without a significant label."""
    return decision == Decision.ACCEPT and label != Confidence.SIGNIFICANT


def standing(decision: Decision | str, label: Confidence | str | None,
             confirmations: Sequence[Confidence | str] = ()) -> Standing | None:
    """An accept's standing: significant at its gate, else confirmed once a confirmation is
    significant, else tentative."""
    if decision != Decision.ACCEPT:
        return None
    if label == Confidence.SIGNIFICANT:
        return Standing.SIGNIFICANT
    if any(c == Confidence.SIGNIFICANT for c in confirmations):
        return Standing.CONFIRMED
    return Standing.TENTATIVE


def keep_best(strict: GateNumbers, check: Audit) -> GateNumbers:
    """The keep-best verdict from the strict gate and the audit."""
    if strict.decision == Decision.INDECISIVE:
        return strict
    if not check.passed:
        return strict.model_copy(update=dict(decision=Decision.REJECT, reasons=[
            f"keep-best: refused, {check.reasoning}", *strict.reasons]))
    if strict.delta is not None and exceeds(strict.delta, 0.0):
        label = strict.confidence
        note = ("significant: the move is shown beyond noise" if label ==
                Confidence.SIGNIFICANT else
                f"{label}: kept as the best but TENTATIVE, the gain could be noise and the "
                "score should be read carefully until confirmed (capevolve confirm)")
        return strict.model_copy(update=dict(decision=Decision.ACCEPT, reasons=[
            f"keep-best: the point estimate moved toward the goal (delta "
            f"{strict.delta:+.4f}) and the audit passed; {note}", *strict.reasons]))
    return strict.model_copy(update=dict(decision=Decision.REJECT, reasons=[
        "keep-best: the point estimate did not move toward the goal", *strict.reasons]))
