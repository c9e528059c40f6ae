"""The nested parts of the verbs' results (:mod:`capevolve.records._results`): what status,
optimize and confirm return inside their top-level fields, typed the same way."""

from __future__ import annotations

from typing import Any

from capevolve.kinds import Confidence, Standing, TestVerdict
from capevolve.records._base import Result


class Spent(Result):
    """What a run has spent so far (summed from its spend events)."""

    iterations: int
    metric_calls: int
    tokens: int
    cost_usd: float | None
    """None: no rollout recorded a cost."""
    cost_unrecorded: int
    """Rollouts whose cost is unknown."""
    wall_s: float


class BudgetLeft(Result):
    """What is left under each cap of ``budget`` (None: no cap)."""

    iterations: int | None
    metric_calls: int | None
    usd: float | None


class RoleSpend(Result):
    """The spend of one role (runner, scorer, optimizer), summed over its spend events."""

    metric_calls: int
    tokens: int
    cost_usd: float
    cost_unrecorded: int
    wall_s: float


class ModelSpend(Result):
    """The model calls of one role (agent, judge, check, proposer)."""

    tokens: int
    cost_usd: float | None
    """None: no call was priced."""
    partial: bool
    """Some calls had no price or unknown tokens: the cost is a lower bound."""
    rollouts: int | None = None
    """agent: the rollouts that called a model."""
    unknown_attempts: int | None = None
    """agent: attempts whose tokens are unknown."""
    rows: int | None = None
    """judge: the scored rows a judge graded."""


class RunProblem(Result):
    """One thing in a run that is not as capevolve wrote it."""

    kind: str
    """events, head, part_unrecorded, part_changed, part_missing, document or candidate."""
    path: str
    """The file, relative to the run dir (absolute when outside it)."""
    what: str
    """What is wrong, in one line."""


class ProposerSpend(Result):
    """What the proposers spent over the loop's iterations (from its ledger)."""

    tokens: int
    cost_usd: float | None
    """None: no proposal reported a cost."""
    cost_unrecorded: int
    """Proposals that reported no cost."""
    wall_s: float


class CandidateStanding(Result):
    """How far to trust one accepted candidate."""

    standing: Standing | None
    """None for a strict accept (no label to confirm)."""
    confidence: Confidence | None
    """The label its accepting gate gave."""
    policy: str | None
    """The accepting gate's ``gate.policy``."""
    confirmations: int
    """Stored confirmations of it that check out."""


class GateLedger(Result):
    """How many gates a run recorded and the false accepts they risked."""

    gates: int
    decision_gates: int
    """Non-exploratory gates (the only ones accept considers)."""
    exploratory_gates: int
    distinct_pairs: int
    """Distinct evaluation pairs among the decisive decision gates."""
    expected_false_accepts: float
    """Upper bound of the expected number of false accepts so far (keep-best: each tentative
    keep 1, each significant one its gate's risk)."""
    alpha: float
    alpha_spending: str
    per_gate_alpha: float | None
    """What each gate spends (None with a fixed k_se)."""
    planned_bound: float | None
    """Bound on P(any false accept) over the budgeted iterations (None: no cap / k_se)."""
    guarantee: str
    """What the loop guarantees at these settings, in one sentence."""
    keep_best: bool = False
    """The run's policy is keep-best: the ledger counts its keeps as they happen."""
    tentative_keeps: int = 0
    """keep-best: distinct pairs kept without being shown beyond noise (each counted 1)."""


class FinalLine(Result):
    """The verdict of ``final.json``; while a finalize is unfinished, its progress."""

    verdict: TestVerdict
    verdict_text: str
    delta: float | None
    ci95: list[float] | None
    missing: list[str]
    test_reuse: str | None
    """How often the test split was scored before, in words."""
    interrupted: bool = False
    """True: no final.json yet, a finalize is interrupted or running."""


class StopPredicate(Result):
    """One clause of the stop condition, parsed."""

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
    """The run's optimize loop at a glance."""

    algorithm: str | None
    proposer: str | None
    iterations: int
    outcomes: dict[str, int]
    """Outcome -> iterations that ended with it."""
    in_flight: list[int]
    """Iterations started and not yet in the ledger."""
    stopped: str | None
    optimizer_spend: ProposerSpend
    plateau: str | None


class IterationLine(Result):
    """One iteration of an optimize loop (as ``on_iteration`` receives it)."""

    iteration: int
    parent: str
    child: str | None
    outcome: str
    focus: str | None
    title: str | None
    files: int
    """Files the edit added, modified or removed."""
    screen: str | None
    """The train-minibatch screen's outcome, ``pass`` or ``killed`` (None: no screen)."""
    val_child: float | None
    val_best: float | None
    delta: float | None
    se: float | None
    power: dict[str, Any] | None
    """The gate's sensitivity (its record's ``power``); None when the child was not gated."""
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
    """An optimize loop's spend: the run's total and the proposers' own."""

    run: Spent
    optimizer: ProposerSpend


class PlannedPower(Result):
    """The smallest gain the gate can detect, planned from the val size and trials."""

    n_tasks: int
    """Scoreable val tasks."""
    trials: int
    mde: float | None
    """The minimum detectable effect (None below two scoreable tasks: no paired test)."""
    min_delta: float
    """gate.min_delta."""
    text: str
    """The figure in one plain sentence."""


class IntRange(Result):
    """A planned count, low and high."""

    low: int
    high: int


class UsdRange(Result):
    """Planned dollars, low and high (None: no price known)."""

    low: float | None
    high: float | None


class PerRollout(Result):
    """What one rollout spends, and where the figure comes from."""

    source: str
    """``stored rollouts``, ``check probe`` or ``none``."""
    tokens: IntRange
    usd: UsdRange


class ConfirmTrials(Result):
    """The trials of a confirmation: first and last of each draw."""

    existing: tuple[int, int]
    new: tuple[int, int]
