"""The finalize verdict on the held-out test.

not_measured: incomplete or unscored; no_edit: the best is the seed; else, by the paired 95% CI of
best minus seed, confirmed above 0, contradicted below, else not_confirmed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from capevolve._policy.gate.thresholds import exceeds
from capevolve.kinds import EvalStatus, TestVerdict


@dataclass(frozen=True)
class TestSide:
    """One side's test evaluation."""

    __test__ = False  # not a pytest test class

    eval_id: str
    status: EvalStatus | str
    incomplete_reason: str | None
    task_means: Mapping[str, float]


@dataclass(frozen=True)
class Missing:
    """Why a test evaluation is not a measurement."""

    unscored: dict[str, list[str]] = field(default_factory=dict)
    """eval id -> test tasks with no valid trial."""
    incomplete: dict[str, str] = field(default_factory=dict)
    """eval id -> why it is incomplete."""

    def __bool__(self) -> bool:
        return bool(self.unscored or self.incomplete)

    def describe(self) -> list[str]:
        """One line per problem."""
        lines = [f"{eval_id} is incomplete: {why}" for eval_id, why in self.incomplete.items()]
        for eval_id, tasks in self.unscored.items():
            shown = ", ".join(tasks[:10]) + (f" (+{len(tasks) - 10} more)" if len(tasks) > 10
                                             else "")
            lines.append(f"{eval_id}: {len(tasks)} test tasks unscored: {shown}")
        return lines


def missing(sides: Sequence[TestSide], test_ids: Sequence[str]) -> Missing:
    """What keeps ``sides`` from measuring the test split."""
    found = Missing()
    for side in sides:
        if side.status != EvalStatus.COMPLETE:
            found.incomplete[side.eval_id] = side.incomplete_reason or f"status {side.status}"
        unscored = sorted(t for t in test_ids if t not in side.task_means)
        if unscored:
            found.unscored[side.eval_id] = unscored
    return found


def verdict(best_id: str, baseline_id: str, gap: Missing,
            ci95: tuple[float, float] | None) -> TestVerdict:
    """The verdict (``ci95`` None: not estimable)."""
    if gap:
        return TestVerdict.NOT_MEASURED
    if best_id == baseline_id:
        return TestVerdict.NO_EDIT
    if ci95 is None:
        return TestVerdict.NOT_CONFIRMED
    low, high = ci95
    if exceeds(low, 0.0):
        return TestVerdict.CONFIRMED
    if exceeds(0.0, high):
        return TestVerdict.CONTRADICTED
    return TestVerdict.NOT_CONFIRMED


def sentence(kind: TestVerdict, val_delta: float | None, test_delta: float | None) -> str:
    """The verdict in words."""
    val = "—" if val_delta is None else f"{val_delta:+.3f}"
    test = "—" if test_delta is None else f"{test_delta:+.3f}"
    return {
        TestVerdict.CONFIRMED: f"confirmed: the val gain ({val}) holds on test ({test}, "
                               "95% CI above 0)",
        TestVerdict.NOT_CONFIRMED: f"not confirmed: the test delta ({test}) is within noise "
                                   f"of 0 (95% CI contains 0); val gain {val}",
        TestVerdict.CONTRADICTED: f"contradicted: the best is worse than the seed on test "
                                  f"({test}, 95% CI below 0) despite a val gain of {val}",
        TestVerdict.NO_EDIT: "no edit: the best is the seed, there is no gain to confirm",
        TestVerdict.NOT_MEASURED: "not measured: the test evaluation is incomplete (no delta, "
                                  "no CI)",
    }[kind]
