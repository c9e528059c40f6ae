"""The nested parts of the verbs' results."""

from __future__ import annotations

from typing import Any

from capevolve.kinds import Confidence, Standing, TestVerdict
from capevolve.records._base import Result


class Spent(Result):
    """What a run has spent."""

    iterations: int
    metric_calls: int
    tokens: int
    cost_usd: float | None
    """None: no rollout recorded a cost."""
    cost_unrecorded: int
    """Rollouts of unknown cost."""
    wall_s: float


class BudgetLeft(Result):
    """What is left under each cap (None: no cap)."""

    iterations: int | None
    metric_calls: int | None
    usd: float | None


class RoleSpend(Result):
    """The spend of one role."""

    metric_calls: int
    tokens: int
    cost_usd: float
    cost_unrecorded: int
    wall_s: float


class ModelSpend(Result):
    """The model calls of one role."""

    tokens: int
    cost_usd: float | None
    """None: no call was priced."""
    partial: bool
    """Some calls unpriced: the cost is a lower bound."""
    rollouts: int | None = None
    """agent: rollouts that called a model."""
    unknown_attempts: int | None = None
    """agent: attempts of unknown tokens."""
    rows: int | None = None
    """judge: rows graded."""


class RunProblem(Result):
    """One thing not as capevolve wrote it."""

    kind: str
    """events, head, part_unrecorded, part_changed, part_missing, document or candidate."""
    path: str
    """The file, relative to the run dir."""
    what: str
    """What is wrong."""


class ProposerSpend(Result):
    """What the proposers spent."""

    tokens: int
    cost_usd: float | None
    """None: no proposal reported a cost."""
    cost_unrecorded: int
    """Proposals of unknown cost."""
    wall_s: float


class CandidateStanding(Result):
    """How far to trust an accepted candidate."""

    standing: Standing | None
    """None for a strict accept."""
    confidence: Confidence | None
    """Its accepting gate's label."""
    policy: str | None
    """Its accepting gate's policy."""
    confirmations: int
    """Its valid stored confirmations."""


class GateLedger(Result):
    """A run's gates and the false accepts they risked."""

    gates: int
    decision_gates: int
    """Non-exploratory gates."""
    exploratory_gates: int
    """Gates with overridden settings."""
    distinct_pairs: int
    """Distinct pairs of decisive decision gates."""
    expected_false_accepts: float
    """Bound on expected false accepts so far."""
    alpha: float
    alpha_spending: str
    per_gate_alpha: float | None
    """Each gate's alpha, unless k_se is fixed."""
    planned_bound: float | None
    """Bound on P(any false accept) over the budget."""
    guarantee: str
    """What the loop guarantees."""
    keep_best: bool = False
    """The policy is keep-best."""
    tentative_keeps: int = 0
    """keep-best: pairs kept without significance."""


class FinalLine(Result):
    """final.json's verdict, or a finalize's progress."""

    verdict: TestVerdict
    verdict_text: str
    delta: float | None
    ci95: list[float] | None
    missing: list[str]
    test_reuse: str | None
    """Earlier test scorings, in words."""
    interrupted: bool = False
    """A finalize is interrupted or running."""


class StopPredicate(Result):
    """One parsed stop-condition clause."""

    kind: str
    value: float
    clause: str
    means: str


class StopParse(Result):
    """How the stop condition parsed."""

    text: str
    predicates: list[StopPredicate]
    unparsed: list[str]


class LoopLine(Result):
    """The optimize loop at a glance."""

    algorithm: str | None
    proposer: str | None
    iterations: int
    outcomes: dict[str, int]
    """Outcome -> iterations."""
    in_flight: list[int]
    """Iterations not yet in the ledger."""
    stopped: str | None
    optimizer_spend: ProposerSpend
    plateau: str | None


class IterationLine(Result):
    """One iteration of an optimize loop."""

    iteration: int
    parent: str
    child: str | None
    outcome: str
    focus: str | None
    title: str | None
    files: int
    """Files the edit changed."""
    screen: str | None
    """``pass`` or ``killed``; None: no screen."""
    val_child: float | None
    val_best: float | None
    delta: float | None
    se: float | None
    power: dict[str, Any] | None
    """The gate's sensitivity; None: not gated."""
    reason: str | None
    metric_calls: int
    proposer_tokens: int
    proposer_cost_usd: float | None
    wall_s: float
    overhead_s: float


class MeanLine(Result):
    """A mean and its standard error."""

    mean: float | None
    stderr: float | None


class LoopSpend(Result):
    """The run's and the proposers' spend."""

    run: Spent
    optimizer: ProposerSpend


class PlannedPower(Result):
    """The smallest gain the gate can detect."""

    n_tasks: int
    """Scoreable val tasks."""
    trials: int
    mde: float | None
    """Minimum detectable effect."""
    min_delta: float
    """gate.min_delta."""
    text: str
    """The figure in a sentence."""


class IntRange(Result):
    """A planned count, low and high."""

    low: int
    high: int


class UsdRange(Result):
    """Planned dollars (None: no price)."""

    low: float | None
    high: float | None


class PerRollout(Result):
    """One rollout's spend and its source."""

    source: str
    """``stored rollouts``, ``check probe`` or ``none``."""
    tokens: IntRange
    usd: UsdRange


class ConfirmTrials(Result):
    """A confirmation's trial ranges."""

    existing: tuple[int, int]
    new: tuple[int, int]
