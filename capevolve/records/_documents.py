"""The run's documents: run.json, candidate.json, evals, gate, final, seal, state, diagnoses."""

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
    """run.json: everything frozen when the run was created."""

    run_id: str
    """The run's name (the run dir's basename at creation)."""
    created_at: str
    """UTC creation time, ISO 8601."""
    project_dir: str
    """Absolute path of the project the run belongs to."""
    config: ProjectConfig
    """The project's capevolve.yaml as frozen at creation (the deciding settings)."""
    versions: dict[str, str]
    """Versions of Python, capevolve and the libraries that shape its numbers."""
    seed: int
    """The run seed (rollout seeds derive from it)."""
    host: str
    """Host that created the run."""
    n_tasks: int = Field(ge=1)
    """Number of tasks the adapter returned at creation."""
    fingerprint: dict[str, str] = Field(default_factory=dict)
    """sha256 of every file the scores depend on: the adapter, the user modules it imports,
    the adapter's package, scorer / gold data (key: path relative to the project, or
    absolute outside it). Re-checked before and after every evaluation."""
    splits_checksum: str
    """Checksum of splits.json, verified on every open."""
    models: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """The resolved model settings of each declared role (``models:``), prices included,
    frozen at creation: every evaluation uses these."""
    models_fingerprint: str | None = None
    """sha256 of the compared settings of the agent and judge models (None: none declared)."""
    models_check: dict[str, Any] = Field(default_factory=dict)
    """The model usage of the check's probe rollout at creation (a meter snapshot)."""


class CandidateRecord(Record):
    """candidates/<id>/candidate.json: one immutable snapshot."""

    id: str
    """The candidate id."""
    hash: str
    """sha256 over every file's relative path and bytes."""
    source: str
    """The directory it was copied from."""
    created_at: str
    """UTC snapshot time."""
    files: dict[str, str]
    """sha256 of each file, by posix relative path."""
    role: Literal["seed"] | None = None
    """``seed`` for the run's baseline capability."""
    note: str | None = None
    """Free text recorded with the snapshot."""


# -- evaluations ----------------------------------------------------------------------------

class TaskSubset(Record):
    """The tasks a subset evaluation was asked to run (sorted, unique ids)."""

    count: int = Field(ge=1)
    """How many task ids."""
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """sha256 of the sorted ids joined by newlines (part of the eval id)."""
    ids: tuple[str, ...]
    """The ids, sorted."""


class TaskMeansFile(Record):
    """The per-task columns of an evaluation, stored beside its record (a Parquet file in
    evals/ with columns ``task_id``, ``mean``, ``n``: sorted task ids, the mean reward over
    their valid trials, how many valid trials) so that the record stays the same size
    whatever the number of tasks."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.=+-]+\.means\.parquet$")
    """The file's name in evals/ (``<eval_id>.means.parquet``)."""
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """sha256 of the file's bytes: a file that differs (edited, swapped, truncated) is
    refused."""
    size: int = Field(ge=0)
    """The file's size in bytes."""
    n_tasks: int = Field(ge=0)
    """Rows of the file (tasks with at least one valid trial)."""


class EvalRecord(Record):
    """evals/<eval_id>.json: one evaluation (running, complete or incomplete)."""

    eval_id: str
    """``<split>__<candidate>__k<trials>``."""
    candidate_id: str
    """The candidate evaluated."""
    split: Split
    """The split evaluated."""
    n_trials: int = Field(ge=1)
    """Trials per task."""
    candidate_hash: str
    """Content hash of the candidate's snapshot."""
    status: EvalStatus
    """running, complete, or incomplete (resumable)."""
    started_at: str
    """UTC time the latest attempt started."""
    finished_at: str | None = None
    """UTC time the latest attempt finished (None while running)."""
    mean: float | None = None
    """Mean over tasks of the per-task mean reward (None when nothing is scored)."""
    stderr: float | None = None
    """SE of the mean: sd(task means) / sqrt(n)."""
    stderr_clustered: float | None = None
    """Cluster-robust (CR1) SE of the mean when tasks carry a cluster key."""
    clusters: dict[str, str] = Field(default_factory=dict)
    """Cluster key of each task that carries one (``Task.metadata['cluster']``)."""
    n_tasks: int | None = Field(None, ge=0)
    """Tasks in the split."""
    n_scored: int | None = Field(None, ge=0)
    """Tasks with at least one valid trial."""
    n_errors: int | None = Field(None, ge=0)
    """Errored trials (missing data, never a score)."""
    n_rows: int | None = Field(None, ge=0)
    """Stored rows of this evaluation."""
    coverage: float | None = Field(None, ge=0, le=1)
    """n_scored / n_tasks."""
    pass_k: dict[str, float] = Field(default_factory=dict)
    """pass^k for k = 1 .. the smallest trial count."""
    pass_threshold: float | None = Field(None, gt=0, le=1)
    """The reward at which pass^k counts a trial as passed (``gate.pass_threshold``)."""
    task_means: dict[str, float] = Field(default_factory=dict)
    """Per-task mean reward over valid trials, inline: only in records written before
    ``task_means_file`` existed (still read as they are). Read the means of any record
    with :func:`capevolve._store.evals_means.task_means_of`."""
    task_means_file: TaskMeansFile | None = None
    """Where the per-task means of a finished evaluation are (a file beside the record,
    checked against this digest on every read); None for a running one or an old record."""
    stdev: float | None = Field(None, ge=0)
    """Sample standard deviation of the per-task means (None below two scored tasks)."""
    run_means: dict[str, float] = Field(default_factory=dict)
    """Mean reward of each trial index (``"0"``, ``"1"``, ...) over the tasks it scored."""
    scored: int | None = Field(None, ge=0)
    """Scoreable tasks with at least one valid trial (the denominator of ``mean``)."""
    excluded: int | None = Field(None, ge=0)
    """Tasks of the split that cannot be scored (no ground truth for their evaluators, or
    the adapter's ``scoreable(task)`` said no): never run, never in numerator or
    denominator, never a 0."""
    excluded_reasons: dict[str, int] = Field(default_factory=dict)
    """Why tasks were excluded: reason -> count (sums to ``excluded``)."""
    excluded_tasks: dict[str, str] = Field(default_factory=dict)
    """Each excluded task id -> its reason (sorted by id)."""
    incomplete_reason: str | None = None
    """Why the evaluation is not a measurement (None when complete)."""
    containment: list[str] = Field(default_factory=list)
    """What candidate code could do in it: empty when it ran in the sandbox and never saw
    the answers; else each warning in words (not contained, saw the targets)."""
    sandbox_network: str | None = None
    """The network its sandbox had (none or host); None without a sandbox."""
    units_run: int | None = Field(None, ge=0)
    """Units the latest attempt ran."""
    resumed: bool | None = None
    """Whether the latest attempt resumed an earlier one."""
    worker_restarts: int | None = Field(None, ge=0)
    """Worker restarts during the latest attempt."""
    refused: str | None = None
    """Why the evaluation's rows can never count (a project file changed while it ran);
    a refused evaluation is never resumed."""
    purpose: EvalPurpose = EvalPurpose.GATE
    """What the evaluation is for (a record without one is a full evaluation, ``gate``)."""
    task_subset: TaskSubset | None = None
    """The task subset it ran (None: the whole split)."""
    first_trial: int = Field(0, ge=0)
    """Its first trial index: it ran trials ``first_trial .. first_trial + n_trials - 1``."""
    target: str | None = None
    """The census bucket or val diagnose cluster the change targets (``evaluate
    --target``); a gate that names no target audits against it."""


# -- gates and final ------------------------------------------------------------------------

class GateRecord(Record):
    """A gate's verdict and every number behind it (the body of a ``gate`` event)."""

    candidate_id: str
    """The candidate gated."""
    best_id: str | None
    """The best it was gated against."""
    decision: Decision
    """accept, reject or indecisive."""
    delta: float | None = None
    """Candidate minus best (paired over common tasks, or Welch)."""
    se: float | None = None
    """SE of delta."""
    t: float | None = None
    """delta / se."""
    df: float | None = None
    """Degrees of freedom of t."""
    p_value: float | None = None
    """Two-sided p-value of t (beside the decision's, never deciding)."""
    p_one_sided: float | None = None
    """P(T_df >= t), the one-sided p-value of the gate's one-sided decision."""
    k_se: float | None = None
    """The critical value c of ``t > c`` used (the t-quantile at alpha, or a fixed k_se)."""
    alpha: float | None = Field(None, ge=0, le=1)
    """The false-accept probability that c implies at the gate's df (0 for an exact move)."""
    exact: bool = False
    """No trial noise on either side and every paired difference equal."""
    n_clusters: int | None = Field(None, ge=0)
    """Clusters behind a cluster-robust (CR1) SE; None for the plain paired SE."""
    imputed: list[str] = Field(default_factory=list)
    """Val tasks the best scored and the candidate did not (a 0 for the candidate)."""
    n_trials: int | None = Field(None, ge=1)
    """The trial count of both evaluations compared."""
    overrides: dict[str, JsonScalar] = Field(default_factory=dict)
    """Settings that differed from the run's frozen gate (exploratory when non-empty)."""
    coverage: float | None = None
    """Val tasks scored on both sides / val tasks."""
    regressions: list[str] = Field(default_factory=list)
    """Val tasks the candidate broke (no-regression veto)."""
    reasons: list[str] = Field(default_factory=list)
    """Why, in words."""
    mode: GateMode | None = None
    """paired or welch."""
    n_compared: int = Field(0, ge=0)
    """Tasks compared."""
    confidence: str | None = None
    """significant, within_noise or negligible."""
    power: dict[str, JsonScalar] | None = None
    """The design's sensitivity (minimum detectable effect, trials needed)."""
    candidate_eval: str | None = None
    """The candidate's evaluation the gate read."""
    best_eval: str | None = None
    """The best's evaluation the gate read."""
    candidate_mean: float | None = None
    """The candidate's val mean."""
    best_mean: float | None = None
    """The best's val mean."""
    exploratory: bool = False
    """True when settings other than the frozen project's decided (never a basis for
    accept)."""
    policy: str = "strict"
    """The decision policy that produced ``decision`` (``gate.policy``)."""
    tentative: bool = False
    """keep-best: kept although not shown significant (until ``capevolve confirm``)."""
    audit: dict[str, Any] | None = None
    """The mechanism audit (``capevolve._policy.audit``): flips, denominator, target."""
    target: str | None = None
    """The ``--target`` (cluster or census bucket) the change was meant to fix."""
    confirmation: dict[str, Any] | None = None
    """``alpha_spending: confirm``: the fresh-trial confirmation that decided (its trial
    range, evaluations and numbers); None when the screen did not pass or none applies."""


class EvalSummary(Record):
    """The summary of one test evaluation inside final.json."""

    eval_id: str
    """The test evaluation."""
    candidate_id: str
    """The candidate it scored."""
    mean: float | None = None
    """Mean over test tasks (None when nothing is scored)."""
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
    """pass^k for k = 1 .. the smallest trial count."""
    status: EvalStatus
    """complete or incomplete."""


class TestReuse(Record):
    """How often a project's test ids were scored by earlier runs (final.json, report)."""

    __test__ = False  # not a pytest test class

    earlier_finalizes: int = Field(ge=0)
    """Earlier finalizes (other runs) on exactly these test ids."""
    earlier_runs: list[str] = Field(default_factory=list)
    """Their run ids, oldest first."""
    overlapping_finalizes: int = Field(0, ge=0)
    """Earlier finalizes on a different test set that shares some of these ids."""
    message: str
    """In words: "test reused: N earlier finalizes on these ids" (or "test fresh ...")."""


class FinalRecord(Record):
    """final.json: the one held-out test result of a run."""

    best_id: str
    """The candidate finalized (the best at finalize)."""
    baseline_id: str
    """The baseline it is compared with (the seed)."""
    test: EvalSummary
    """The best's test evaluation."""
    test_baseline: EvalSummary
    """The baseline's test evaluation."""
    delta: float | None = None
    """Paired test delta of best over baseline."""
    se: float | None = None
    """SE of the delta."""
    t: float | None = None
    """delta / se."""
    p_value: float | None = None
    """Two-sided p-value."""
    ci95: list[float] | None = None
    """t-based 95% confidence interval of the delta."""
    n_compared: int = Field(0, ge=0)
    """Test tasks scored on both sides."""
    df: float | None = None
    """Degrees of freedom of t: n - 1, or G - 1 with the cluster-robust SE."""
    n_clusters: int | None = None
    """Clusters of the CR1 cluster-robust SE (None: the plain paired SE)."""
    verdict: TestVerdict = TestVerdict.NOT_MEASURED
    """What the test says about the val gain (rule: capevolve._policy.verdict)."""
    verdict_text: str = ""
    """The verdict in words."""
    missing: list[str] = Field(default_factory=list)
    """What keeps the test evaluation from being a measurement (empty when measured)."""
    val_delta: float | None = None
    """Paired val delta of best over the seed (the gain the test is asked to confirm)."""
    test_ids_sha256: str = ""
    """sha256 of the sorted test task ids (the key of the project's finalize ledger)."""
    test_reuse: TestReuse | None = None
    """Earlier finalizes of the same project on these test ids."""
    containment: list[str] = Field(default_factory=list)
    """What candidate code could do in this run's evaluations (empty: contained by the
    sandbox, never saw the answers); e.g. "candidate code was not contained"."""


class FinalizeEntry(Record):
    """One line of ``<project>/.capevolve/finalizes.jsonl``: a run took the test split."""

    test_ids_sha256: str
    """sha256 of the sorted test task ids."""
    test_ids: list[str]
    """The test task ids, sorted."""
    run_id: str
    """The run that finalized."""
    run_dir: str
    """Where that run lives."""
    best_id: str
    """The candidate it finalized."""
    started_at: str
    """UTC time the test seal was taken."""
    run_created_at: str | None = None
    """When that run was created (run.json): with ``run_id`` it tells one run from a later
    run made under the same name and directory."""

    def same_run(self, other: FinalizeEntry) -> bool:
        """Both entries come from one run (a retried finalize), not from two runs that
        happen to share a name or a directory."""
        return (self.run_id, self.run_dir, self.run_created_at) == \
            (other.run_id, other.run_dir, other.run_created_at)


class SealRecord(Record):
    """seal.json: who took the test split, and whether its scores are final."""

    status: SealStatus
    """started (scoring may be under way) or complete (final)."""
    pid: int
    """The finalize process (for messages; liveness is the seal's flock)."""
    host: str
    """Its host."""
    started_at: str
    """UTC time the seal was taken."""
    best_id: str | None = None
    """The candidate being finalized."""
    baseline_id: str | None = None
    """Its baseline."""
    retry_of: str | None = None
    """The aborted seal this one replaced (a finalize that died before any test row)."""
    finished_at: str | None = None
    """UTC time the seal was completed."""


class StateRecord(Record):
    """state.json: a cache derived from events.jsonl by writing commands (never truth)."""

    best_id: str | None
    """The current best when it was written."""
    n_events: int = Field(ge=0)
    """Events in the log when it was written."""
    spent: dict[str, JsonScalar]
    """Spend.to_dict() when it was written."""
    budget: dict[str, JsonScalar] | None = None
    """The frozen budget caps."""


class DiagnosisRecord(Record):
    """diagnoses/<split>__<tag>.json: the envelope of a diagnosis (content as data)."""

    split: Split
    """The split diagnosed (train or val)."""
    tag: str
    """The candidate diagnosed."""
    eval_id: str | None = None
    """The evaluation whose rows were read."""
    mode: str
    """The clustering mode."""
    reflective_dataset: list[dict[str, Any]]
    """One entry per failing trial (input, output, feedback, trajectory pointer)."""
    clusters: list[dict[str, Any]]
    """Failure clusters with their signature, members and any recorded judgement."""
    kept_good: list[str]
    """Tasks that pass on every trial."""
    flaky: list[str]
    """Tasks that pass on some trials."""
    always_failing: list[str]
    """Tasks that fail on every scored trial."""
    consistently_partial: list[str] = Field(default_factory=list)
    """Tasks with the same partial reward on every scored trial (not flaky)."""
    history: dict[str, Any] | None = None
    """The run's tried-and-rejected fixes the clusters were checked against."""
    unscored: list[str]
    """Tasks with no valid trial (missing data)."""
    failing_total: int = Field(ge=0)
    """Failing trials."""
    failing_tasks: int = Field(ge=0)
    """Tasks with at least one failing trial."""
    errored_trials: int = Field(ge=0)
    """Errored trials (missing data, never failures)."""
    sanity: Any = None
    """Sanity checks of the clustering."""
    gold_check: dict[str, Any]
    """Whether gold answers could be checked for, and how many entries quote them."""
