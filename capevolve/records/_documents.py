"""Run documents: run.json, candidates, evaluations, gates, final, seal, state, diagnoses."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from capevolve.config import ProjectConfig
from capevolve.kinds import (
    Decision,
    EvalPurpose,
    EvalStatus,
    GateMode,
    SealStatus,
    Split,
    TestVerdict,
)
from capevolve.records._base import JsonScalar, Record

# -- run.json and candidates ----------------------------------------------------------------

class RunManifest(Record):
    """run.json: everything frozen at creation."""

    run_id: str
    """The run dir's basename at creation."""
    created_at: str
    """UTC creation time, ISO 8601."""
    project_dir: str
    """Absolute path of the project."""
    config: ProjectConfig
    """The project's capevolve.yaml, frozen at creation."""
    versions: dict[str, str]
    """Versions of Python and the libraries."""
    seed: int
    """The run seed."""
    host: str
    """Host that created the run."""
    n_tasks: int = Field(ge=1)
    """Tasks the adapter returned at creation."""
    fingerprint: dict[str, str] = Field(default_factory=dict)
    """sha256 of each file the scores depend on, by path."""
    splits_checksum: str
    """Checksum of splits.json."""
    models: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Each declared role's resolved model settings."""
    models_fingerprint: str | None = None
    """sha256 of the agent and judge settings, if declared."""
    models_check: dict[str, Any] = Field(default_factory=dict)
    """Model usage of the check's probe rollout."""


class CandidateRecord(Record):
    """candidates/<id>/candidate.json: one immutable snapshot."""

    id: str
    """The candidate id."""
    hash: str
    """sha256 over the files' relative paths and bytes."""
    source: str
    """The directory it was copied from."""
    created_at: str
    """UTC snapshot time."""
    files: dict[str, str]
    """sha256 of each file, by relative path."""
    role: Literal["seed"] | None = None
    """``seed`` for the run's baseline."""
    note: str | None = None
    """Free text."""


# -- evaluations ----------------------------------------------------------------------------

class TaskSubset(Record):
    """The tasks a subset evaluation ran."""

    count: int = Field(ge=1)
    """How many task ids."""
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """sha256 of the sorted ids, newline-joined."""
    ids: tuple[str, ...]
    """The ids, sorted."""


class TaskMeansFile(Record):
    """The Parquet file of an evaluation's per-task means, beside its record."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.=+-]+\.means\.parquet$")
    """The file's name in evals/."""
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """sha256 of the bytes; a file that differs is refused."""
    size: int = Field(ge=0)
    """Size in bytes."""
    n_tasks: int = Field(ge=0)
    """Rows: tasks with a valid trial."""


class EvalRecord(Record):
    """evals/<eval_id>.json: one evaluation."""

    eval_id: str
    """``<split>__<candidate>__k<trials>``."""
    candidate_id: str
    """The candidate evaluated."""
    split: Split
    """The split evaluated."""
    n_trials: int = Field(ge=1)
    """Trials per task."""
    candidate_hash: str
    """The candidate's content hash."""
    status: EvalStatus
    """running, complete or incomplete."""
    started_at: str
    """UTC start of the latest attempt."""
    finished_at: str | None = None
    """UTC end of the latest attempt."""
    mean: float | None = None
    """Mean of the per-task mean rewards."""
    stderr: float | None = None
    """SE of the mean: sd(task means) / sqrt(n)."""
    stderr_clustered: float | None = None
    """Cluster-robust (CR1) SE, if tasks have clusters."""
    clusters: dict[str, str] = Field(default_factory=dict)
    """Cluster key by task."""
    n_tasks: int | None = Field(None, ge=0)
    """Tasks in the split."""
    n_scored: int | None = Field(None, ge=0)
    """Tasks with a valid trial."""
    n_errors: int | None = Field(None, ge=0)
    """Errored trials."""
    n_rows: int | None = Field(None, ge=0)
    """Stored rows."""
    coverage: float | None = Field(None, ge=0, le=1)
    """n_scored / n_tasks."""
    pass_k: dict[str, float] = Field(default_factory=dict)
    """pass^k by k."""
    pass_threshold: float | None = Field(None, gt=0, le=1)
    """Reward at which a trial passes."""
    task_means: dict[str, float] = Field(default_factory=dict)
    """Per-task means inline, in old records only; read any with ``task_means_of``."""
    task_means_file: TaskMeansFile | None = None
    """The per-task means file, once finished."""
    stdev: float | None = Field(None, ge=0)
    """Sample SD of the per-task means."""
    run_means: dict[str, float] = Field(default_factory=dict)
    """Mean reward of each trial index."""
    scored: int | None = Field(None, ge=0)
    """Scored scoreable tasks: the mean's denominator."""
    excluded: int | None = Field(None, ge=0)
    """Unscoreable tasks: never run, in no denominator."""
    excluded_reasons: dict[str, int] = Field(default_factory=dict)
    """Reason -> count of excluded tasks."""
    excluded_tasks: dict[str, str] = Field(default_factory=dict)
    """Excluded task id -> its reason."""
    incomplete_reason: str | None = None
    """Why it is not a measurement."""
    containment: list[str] = Field(default_factory=list)
    """Containment warnings; empty: sandboxed, answers unseen."""
    sandbox_network: str | None = None
    """The sandbox's network, if any."""
    units_run: int | None = Field(None, ge=0)
    """Units the latest attempt ran."""
    resumed: bool | None = None
    """Whether the latest attempt resumed one."""
    worker_restarts: int | None = Field(None, ge=0)
    """Worker restarts in the latest attempt."""
    refused: str | None = None
    """Why its rows can never count; never resumed."""
    purpose: EvalPurpose = EvalPurpose.GATE
    """What it is for."""
    task_subset: TaskSubset | None = None
    """Its tasks; None: the whole split."""
    first_trial: int = Field(0, ge=0)
    """Index of its first trial."""
    target: str | None = None
    """The bucket or cluster targeted; its gates' default."""


# -- gates and final ------------------------------------------------------------------------

class GateRecord(Record):
    """A gate's verdict and its numbers (a ``gate`` event's body)."""

    candidate_id: str
    """The candidate gated."""
    best_id: str | None
    """The best it was gated against."""
    decision: Decision
    """accept, reject or indecisive."""
    delta: float | None = None
    """Candidate minus best."""
    se: float | None = None
    """SE of delta."""
    t: float | None = None
    """delta / se."""
    df: float | None = None
    """Degrees of freedom of t."""
    p_value: float | None = None
    """Two-sided p-value (not deciding)."""
    p_one_sided: float | None = None
    """The deciding one-sided p-value."""
    k_se: float | None = None
    """The critical value c of ``t > c``."""
    alpha: float | None = Field(None, ge=0, le=1)
    """The false-accept probability c implies."""
    exact: bool = False
    """No noise and equal paired differences."""
    n_clusters: int | None = Field(None, ge=0)
    """Clusters of a CR1 SE, if used."""
    imputed: list[str] = Field(default_factory=list)
    """Val tasks only the best scored (0 for the candidate)."""
    n_trials: int | None = Field(None, ge=1)
    """Trial count of both evaluations."""
    overrides: dict[str, JsonScalar] = Field(default_factory=dict)
    """Settings differing from the frozen gate."""
    coverage: float | None = None
    """Fraction of val tasks scored on both sides."""
    regressions: list[str] = Field(default_factory=list)
    """Val tasks the candidate broke."""
    reasons: list[str] = Field(default_factory=list)
    """Why, in words."""
    mode: GateMode | None = None
    """paired or welch."""
    n_compared: int = Field(0, ge=0)
    """Tasks compared."""
    confidence: str | None = None
    """significant, within_noise or negligible."""
    power: dict[str, JsonScalar] | None = None
    """The design's sensitivity."""
    candidate_eval: str | None = None
    """The candidate's evaluation read."""
    best_eval: str | None = None
    """The best's evaluation read."""
    candidate_mean: float | None = None
    """The candidate's val mean."""
    best_mean: float | None = None
    """The best's val mean."""
    exploratory: bool = False
    """Other than the frozen settings decided: never accepted."""
    policy: str = "strict"
    """The ``gate.policy`` that decided."""
    tentative: bool = False
    """keep-best: kept without significance."""
    audit: dict[str, Any] | None = None
    """The mechanism audit: flips, denominator, target."""
    target: str | None = None
    """The cluster or bucket the change targets."""
    confirmation: dict[str, Any] | None = None
    """The deciding fresh-trial confirmation."""


class EvalSummary(Record):
    """One test evaluation in final.json."""

    eval_id: str
    """The test evaluation."""
    candidate_id: str
    """The candidate scored."""
    mean: float | None = None
    """Mean over test tasks."""
    stderr: float | None = None
    """SE of the mean."""
    n_tasks: int | None = None
    """Test tasks."""
    n_scored: int | None = None
    """Test tasks scored."""
    n_errors: int | None = None
    """Errored trials."""
    n_trials: int | None = None
    """Trials per task."""
    coverage: float | None = None
    """n_scored / n_tasks."""
    pass_k: dict[str, float] = Field(default_factory=dict)
    """pass^k by k."""
    status: EvalStatus
    """complete or incomplete."""


class TestReuse(Record):
    """Earlier runs' scoring of these test ids."""

    __test__ = False  # not a pytest test class

    earlier_finalizes: int = Field(ge=0)
    """Earlier finalizes on exactly these ids."""
    earlier_runs: list[str] = Field(default_factory=list)
    """Their run ids, oldest first."""
    overlapping_finalizes: int = Field(0, ge=0)
    """Earlier finalizes sharing some ids."""
    message: str
    """The reuse in words."""


class FinalRecord(Record):
    """final.json: a run's held-out test result."""

    best_id: str
    """The candidate finalized."""
    baseline_id: str
    """The baseline (the seed)."""
    test: EvalSummary
    """The best's test evaluation."""
    test_baseline: EvalSummary
    """The baseline's test evaluation."""
    delta: float | None = None
    """Paired test delta, best minus baseline."""
    se: float | None = None
    """SE of the delta."""
    t: float | None = None
    """delta / se."""
    p_value: float | None = None
    """Two-sided p-value."""
    ci95: list[float] | None = None
    """95% t interval of the delta."""
    n_compared: int = Field(0, ge=0)
    """Test tasks scored on both sides."""
    df: float | None = None
    """Degrees of freedom of t."""
    n_clusters: int | None = None
    """Clusters of a CR1 SE, if used."""
    verdict: TestVerdict = TestVerdict.NOT_MEASURED
    """What the test says about the val gain."""
    verdict_text: str = ""
    """The verdict in words."""
    missing: list[str] = Field(default_factory=list)
    """Why the test is not a measurement."""
    val_delta: float | None = None
    """Paired val delta of best over seed."""
    test_ids_sha256: str = ""
    """sha256 of the sorted test ids."""
    test_reuse: TestReuse | None = None
    """Earlier finalizes on these test ids."""
    containment: list[str] = Field(default_factory=list)
    """Containment warnings; empty: sandboxed, answers unseen."""


class FinalizeEntry(Record):
    """A line of ``<project>/.capevolve/finalizes.jsonl``."""

    test_ids_sha256: str
    """sha256 of the sorted test ids."""
    test_ids: list[str]
    """The test ids, sorted."""
    run_id: str
    """The run that finalized."""
    run_dir: str
    """Where that run lives."""
    best_id: str
    """The candidate finalized."""
    started_at: str
    """UTC time the seal was taken."""
    run_created_at: str | None = None
    """The run's creation time, telling same-named runs apart."""

    def same_run(self, other: FinalizeEntry) -> bool:
        """Both entries come from one run."""
        return (self.run_id, self.run_dir, self.run_created_at) == \
            (other.run_id, other.run_dir, other.run_created_at)


class SealRecord(Record):
    """seal.json: who took the test split, and whether it is final."""

    status: SealStatus
    """started or complete."""
    pid: int
    """The finalize process."""
    host: str
    """Its host."""
    started_at: str
    """UTC time the seal was taken."""
    best_id: str | None = None
    """The candidate finalized."""
    baseline_id: str | None = None
    """Its baseline."""
    retry_of: str | None = None
    """The aborted seal this one replaced."""
    finished_at: str | None = None
    """UTC time the seal was completed."""


class StateRecord(Record):
    """state.json: a cache of events.jsonl, never truth."""

    best_id: str | None
    """The best when written."""
    n_events: int = Field(ge=0)
    """Events in the log when written."""
    spent: dict[str, JsonScalar]
    """The spend when written."""
    budget: dict[str, JsonScalar] | None = None
    """The frozen budget caps."""


class DiagnosisRecord(Record):
    """diagnoses/<split>__<tag>.json: a diagnosis."""

    split: Split
    """The split diagnosed."""
    tag: str
    """The candidate diagnosed."""
    eval_id: str | None = None
    """The evaluation read."""
    mode: str
    """The clustering mode."""
    reflective_dataset: list[dict[str, Any]]
    """One entry per failing trial."""
    clusters: list[dict[str, Any]]
    """Failure clusters."""
    kept_good: list[str]
    """Tasks passing every trial."""
    flaky: list[str]
    """Tasks passing some trials."""
    always_failing: list[str]
    """Tasks failing every scored trial."""
    consistently_partial: list[str] = Field(default_factory=list)
    """Tasks with one partial reward throughout."""
    history: dict[str, Any] | None = None
    """Rejected fixes the clusters were checked against."""
    unscored: list[str]
    """Tasks with no valid trial."""
    failing_total: int = Field(ge=0)
    """Failing trials."""
    failing_tasks: int = Field(ge=0)
    """Tasks with a failing trial."""
    errored_trials: int = Field(ge=0)
    """Errored trials."""
    sanity: Any = None
    """Sanity checks of the clustering."""
    gold_check: dict[str, Any]
    """Entries quoting gold answers, if checkable."""
