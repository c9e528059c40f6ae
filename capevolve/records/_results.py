"""The typed results of the verbs that return something other than a stored document.

Each is a frozen pydantic model with the field names of the JSON the CLI prints with
``--json``; :meth:`Result.to_dict` is that JSON form. A verb that returns a stored document
returns its record instead (evaluate an EvalRecord, gate a GateRecord, finalize a
FinalRecord, diagnose a DiagnosisRecord).
"""

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
    """The project directory (absolute)."""
    files: list[str]
    """The files written, relative to it."""


class ProjectCheck(Result):
    """``check_project``: is the project runnable, and every problem in words."""

    ok: bool
    project: str
    n_tasks: int | None
    """The task count (None unless ok)."""
    problems: list[str]
    warnings: list[str]
    metrics: dict[str, list[str]] | None
    """A dataset project's metric kinds: ``deterministic`` kinds and ``judge`` names."""
    stop: StopParse | None
    """How the stop condition parsed (None when the config did not load)."""
    power: PlannedPower | None = None
    """The smallest gain the gate can detect given the scoreable val tasks and trials;
    None unless ok."""


class EvalLine(Result):
    """The summary fields of an evaluation (status's rows, the handoff's baseline)."""

    eval_id: str
    candidate_id: str | None = None
    split: Split | None = None
    status: str | None = None
    """An EvalStatus, or ``interrupted`` for a running record whose process is gone."""
    mean: float | None = None
    stderr: float | None = None
    n_tasks: int | None = None
    n_scored: int | None = None
    n_errors: int | None = None
    n_trials: int | None = None
    coverage: float | None = None
    excluded: int | None = None
    """Tasks of the split that cannot be scored (never run, in no denominator)."""
    excluded_reasons: dict[str, int] | None = None
    """Why they were excluded: reason -> count."""
    incomplete_reason: str | None = None
    """Why an incomplete evaluation is not a measurement."""


class Checkout(Result):
    """``checkout``: a candidate's files copied as ordinary writable files."""

    candidate_id: str
    path: str
    """The copy (absolute)."""
    files: list[str]
    """The files copied, relative to it, sorted."""


class Handoff(Result):
    """``start_run``: the new run, its baseline and the commands to run next."""

    run_dir: str
    best_id: str
    baseline: EvalLine
    next: list[str]
    power: PlannedPower | None = None
    """The smallest gain the gate can detect on this run's val split (as check says it)."""


class GateNumbers(Result):
    """``gate_numbers``: the raw gate of means and SEs computed elsewhere."""

    decision: Decision
    reasons: list[str]
    mode: GateMode
    coverage: float | None = None
    delta: float | None = None
    se: float | None = None
    t: float | None = None
    df: float | None = None
    p_value: float | None = None
    """Two-sided p-value of t (beside the decision's)."""
    p_one_sided: float | None = None
    """The one-sided p-value the decision used."""
    k_se: float | None = None
    alpha: float | None = None
    exact: bool = False
    n_compared: int = 0
    n_clusters: int | None = None
    imputed: list[str] = []
    regressions: list[str] = []
    confidence: Confidence | None = None
    power: dict[str, Any] | None = None


class Accepted(Result):
    """``accept``: the candidate is the best (``repeated``: it already was, by this accept)."""

    decision: Literal[Decision.ACCEPT]
    candidate_id: str
    previous_best: str | None
    best_id: str | None
    delta: float | None
    note: str | None
    repeated: bool
    decided_at: str
    result: int | None = None
    """The number of its ``results/<n>.json`` (a new accept only)."""
    confidence: str | None = None
    tentative: bool | None = None
    policy: str | None = None


class Rejected(Result):
    """``reject``: the candidate is rejected against the best (``repeated``: already was)."""

    decision: Literal[Decision.REJECT]
    candidate_id: str
    best_id: str | None
    note: str | None
    repeated: bool
    decided_at: str
    result: int | None = None
    """The number of its ``results/<n>.json`` (a new reject only)."""


class NoChange(Result):
    """``no_change``: an iteration whose change could not be scored."""

    decision: Literal["no_change"]
    best_id: str
    candidate_id: str | None
    result: int
    """The number of its ``results/<n>.json``."""
    reasoning: str


class Confirmation(Result):
    """``confirm``: the pooled, higher-power numbers of a move (``confirmations/<n>.json``)."""

    candidate_id: str
    reference_id: str
    best_id: str
    extra_trials: int
    metric: str
    trials: ConfirmTrials
    evals: dict[str, tuple[str, str]]
    """Per side (candidate id): the existing and the new evaluation."""
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
    """``probe``: how many targeted failing datapoints a candidate flipped (informational)."""

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
    """``estimate``: what the configured run will spend, as a range, before it spends it."""

    rollouts: IntRange
    """low (the baseline, one iteration, finalize) and high (every iteration)."""
    per_rollout: PerRollout
    tokens: IntRange
    """Planned tokens."""
    usd: UsdRange
    """Planned dollars."""
    max_usd: float | None
    """budget.max_usd (None: no cap)."""
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
    """Model calls by role (agent, judge, check, proposer): tokens, cost_usd and whether
    the cost is partial (some calls unpriced or of unknown tokens)."""
    unsettled_units: int
    stall: int
    stop_condition: str | None
    candidates: list[str]
    evaluations: list[EvalLine]
    finalized: bool
    final: FinalLine | None
    gates: GateLedger
    """The gates run and the false accepts they risked."""
    stop: StopParse | None
    optimize: LoopLine | None
    containment: list[str] = Field(default_factory=list)
    """What candidate code could do in this run: empty when every evaluation ran in the
    sandbox and never saw the answers; else each warning ("candidate code was not
    contained")."""


class Verification(Result):
    """``verify``: every way the run differs from what capevolve wrote (``ok`` when none)."""

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
    """``quarantine``: what was set aside, and what could not be repaired this way."""

    run_dir: str
    moved: dict[str, str]
    """Each file set aside -> where it went ("" for a part that was missing)."""
    reset_events: bool = False
    problems: list[str]
    left: list[str]
    ok: bool
    remaining: list[str] = []


class ClusterReport(Result):
    """``doctor``: the Ray cluster's driver and nodes, and every mismatch (``ok``: none)."""

    address: str | None
    driver: dict[str, Any]
    nodes: list[dict[str, Any]]
    problems: list[str]
    ok: bool


class OptimizeSummary(Result):
    """``optimize``: the loop's iterations, why it stopped, its spend and the final."""

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
    """Why ``finalize`` left test unscored (the best is still the seed), else None."""
