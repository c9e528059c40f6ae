"""The verbs' results that are no stored document, named as in ``--json``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from capevolve.config import BudgetConfig
from capevolve.kinds import Confidence, Decision, EvalPurpose, EvalStatus, GateMode, Split
from capevolve.records._base import Result
from capevolve.records._documents import FinalRecord
from capevolve.records._result_parts import (
    BudgetLeft,
    CandidateStanding,
    ConfirmTrials,
    FinalLine,
    GateLedger,
    IntRange,
    IterationLine,
    LoopLine,
    LoopSpend,
    MeanLine,
    ModelSpend,
    PerRollout,
    PlannedPower,
    RoleSpend,
    RunProblem,
    Spent,
    StopParse,
    UsdRange,
)


class ProjectInit(Result):
    """``init_project``: the scaffolded project."""

    project: str
    """The project directory."""
    files: list[str]
    """Files written, relative to it."""


class ProjectCheck(Result):
    """``check_project``'s answer."""

    ok: bool
    project: str
    n_tasks: int | None
    """The task count; None unless ok."""
    problems: list[str]
    warnings: list[str]
    metrics: dict[str, list[str]] | None
    """A dataset project's metric kinds."""
    stop: StopParse | None
    """The parsed stop condition."""
    power: PlannedPower | None = None
    """The smallest gain the gate can detect."""


class EvalLine(Result):
    """An evaluation's summary fields."""

    eval_id: str
    candidate_id: str | None = None
    split: Split | None = None
    status: str | None = None
    """An EvalStatus, or ``interrupted``."""
    mean: float | None = None
    stderr: float | None = None
    n_tasks: int | None = None
    n_scored: int | None = None
    n_errors: int | None = None
    n_trials: int | None = None
    coverage: float | None = None
    excluded: int | None = None
    """Unscoreable tasks."""
    excluded_reasons: dict[str, int] | None = None
    """Reason -> count."""
    incomplete_reason: str | None = None
    """Why it is not a measurement."""


class Checkout(Result):
    """``checkout``: a candidate's writable copy."""

    candidate_id: str
    path: str
    """The copy."""
    files: list[str]
    """Files copied, relative and sorted."""


class Handoff(Result):
    """``start_run``: the run, its baseline and the next commands."""

    run_dir: str
    best_id: str
    baseline: EvalLine
    next: list[str]
    power: PlannedPower | None = None
    """The smallest gain the gate can detect."""


class GateNumbers(Result):
    """``gate_numbers``' gate."""

    decision: Decision
    reasons: list[str]
    mode: GateMode
    coverage: float | None = None
    delta: float | None = None
    se: float | None = None
    t: float | None = None
    df: float | None = None
    p_value: float | None = None
    """Two-sided p-value of t."""
    p_one_sided: float | None = None
    """The deciding p-value."""
    k_se: float | None = None
    """The critical value c of ``t > c``."""
    alpha: float | None = None
    """P(accept | no better) at c (0 if exact)."""
    exact: bool = False
    n_compared: int = 0
    n_clusters: int | None = None
    imputed: list[str] = []
    regressions: list[str] = []
    confidence: Confidence | None = None
    power: dict[str, Any] | None = None


class Accepted(Result):
    """``accept``: the new best (``repeated``: already)."""

    decision: Literal[Decision.ACCEPT]
    candidate_id: str
    previous_best: str | None
    best_id: str | None
    delta: float | None
    note: str | None
    repeated: bool
    decided_at: str
    result: int | None = None
    """Its ``results/<n>.json`` number."""
    confidence: str | None = None
    tentative: bool | None = None
    policy: str | None = None


class Rejected(Result):
    """``reject``: the rejection (``repeated``: already)."""

    decision: Literal[Decision.REJECT]
    candidate_id: str
    best_id: str | None
    note: str | None
    repeated: bool
    decided_at: str
    result: int | None = None
    """Its ``results/<n>.json`` number."""


class NoChange(Result):
    """``no_change``'s record."""

    decision: Literal["no_change"]
    best_id: str
    candidate_id: str | None
    result: int
    """Its ``results/<n>.json`` number."""
    reasoning: str


class Confirmation(Result):
    """``confirm``: a move's pooled numbers."""

    candidate_id: str
    reference_id: str
    best_id: str
    extra_trials: int
    metric: str
    trials: ConfirmTrials
    evals: dict[str, tuple[str, str]]
    """Per side: existing and new evaluation."""
    pooled_trial_means: dict[str, list[float]]
    n_candidate: int
    n_best: int
    delta: float
    se_diff: float
    t: float | None
    df: float | None
    pooled_stdev: float
    raw_band_cleared: bool
    """|delta| clears max(pooled stdev, min_delta)."""
    confidence: Confidence
    toward_goal: bool
    label_before: str | None
    tentative: bool
    confirmed_at: str
    path: str


class ProbeResult(Result):
    """``probe``: the targeted failures flipped."""

    candidate_id: str
    best_id: str
    split: Split
    targeted_by: str
    eval_id: str
    reference_eval: str
    purpose: EvalPurpose
    status: EvalStatus
    n_trials: int
    targets: list[str]
    targeted_failing: list[str]
    flipped: list[str]
    still_failing: list[str]
    regressed: list[str]
    unscored: list[str]
    excluded: list[str]
    n_compared: int
    candidate_mean: float | None
    best_mean: float | None
    suggestion: str | None
    reasoning: str
    units_run: int | None
    gateable: Literal[False]


class Estimate(Result):
    """``estimate``: planned spend, as ranges."""

    rollouts: IntRange
    """low: baseline, one iteration, finalize; high: every iteration."""
    per_rollout: PerRollout
    tokens: IntRange
    """Planned tokens."""
    usd: UsdRange
    """Planned dollars."""
    max_usd: float | None
    """budget.max_usd; None: no cap."""
    spent_usd: float
    """Recorded dollars so far."""


class RunStatus(Result):
    """``status``: the run at a glance."""

    run_dir: str
    run_id: str
    project: str
    best_id: str
    best_val: EvalLine | None
    best_standing: CandidateStanding | None
    standings: dict[str, CandidateStanding]
    """Accepted candidate id -> its standing."""
    spent: Spent
    budget: BudgetConfig
    budget_left: BudgetLeft
    budget_exhausted: list[str]
    spent_by_role: dict[str, RoleSpend]
    model_spend: dict[str, ModelSpend] = {}
    """Model calls by role."""
    unsettled_units: int
    stall: int
    stop_condition: str | None
    candidates: list[str]
    evaluations: list[EvalLine]
    finalized: bool
    final: FinalLine | None
    gates: GateLedger
    """The gate ledger."""
    stop: StopParse | None
    optimize: LoopLine | None
    containment: list[str] = Field(default_factory=list)
    """Containment warnings; empty: sandboxed, answers unseen."""


class Verification(Result):
    """``verify``: how the run differs from what capevolve wrote."""

    run_dir: str
    ok: bool
    problems: list[RunProblem]
    notes: list[str]
    events: int
    parts: int
    hashed: int
    lines: list[str]
    """The problems, one line each."""


class Quarantine(Result):
    """``quarantine``: what was set aside and what is left."""

    run_dir: str
    moved: dict[str, str]
    """Each file set aside -> its new place."""
    reset_events: bool = False
    problems: list[str]
    left: list[str]
    ok: bool
    remaining: list[str] = []


class ClusterReport(Result):
    """``doctor``: the Ray cluster and its mismatches."""

    address: str | None
    driver: dict[str, Any]
    nodes: list[dict[str, Any]]
    problems: list[str]
    ok: bool


class OptimizeSummary(Result):
    """``optimize``: iterations, stop, spend and final."""

    run_dir: str
    algorithm: str
    proposer: str | None
    iterations: list[IterationLine]
    stop_reason: str
    plateau: str | None
    best_id: str
    best_val: MeanLine | None
    seed_val: MeanLine | None
    stop_condition: StopParse | None
    spend: LoopSpend
    final: FinalRecord | None
    not_finalized: str | None = None
    """Why finalize left test unscored."""
