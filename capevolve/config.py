"""capevolve.yaml as pydantic v2 models.

Every model forbids unknown keys, so a typo is an error that names the key's path (``gate.k_sE:
extra inputs are not permitted``) instead of a silently ignored setting. Numbers are strict: a
boolean, a quoted number or a float where an integer is meant (``num_trials: true``) is refused,
and so are NaN and infinities.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationError, model_validator

from capevolve.config_models import ModelsConfig
from capevolve.errors import ConfigError
from capevolve.kinds import (
    AlphaSpending,
    EngineKind,
    EvaluatorKind,
    GateMode,
    GatePolicy,
    GoalDirection,
)

CONFIG_FILENAME = "capevolve.yaml"
MAX_CONFIG_BYTES = 1 << 20
"""A capevolve.yaml larger than this (1 MiB) is refused before it is parsed."""
MAX_TRIALS = 1000
"""The most trials per task any evaluation may run (``num_trials`` and ``--n-trials``)."""

Int = Annotated[int, Strict()]
"""An integer setting: booleans, floats and quoted numbers are refused."""
Num = Annotated[float, Strict()]
"""A number setting: an integer or a float; booleans and quoted numbers are refused."""
Bool = Annotated[bool, Strict()]
"""A yes/no setting: true or false only (not 1, not "yes")."""

DATASET_ADAPTER = "capevolve.datasets.adapter:DatasetAdapter"
"""The adapter of a dataset project (``dataset:`` + ``target:`` instead of ``adapter:``)."""


SCORE_DATA_PATTERNS = ("*scorer*", "*gold*", "*answers*", "*answer_key*")
"""Files the scores depend on (scorers, gold and answer data): a candidate may not touch
them (``capevolve._policy.protect``) and the project's copies are fingerprinted
(``capevolve._project.fingerprint``)."""


class _Section(BaseModel):
    """A config section: unknown keys and non-finite numbers (.nan, .inf) are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)  # as Record's


class SplitsConfig(_Section):
    """How tasks are divided into train / val / test (fractions, or a fixed id file)."""

    train: Num = Field(0.5, ge=0, le=1)
    """Fraction of tasks in train (the split editors may look at)."""
    val: Num = Field(0.25, gt=0, le=1)
    """Fraction of tasks in val (where gates are decided)."""
    test: Num = Field(0.25, gt=0, le=1)
    """Fraction of tasks in the held-out test split (scored once, by finalize)."""
    seed: Int = 0
    """Seed of the task-id hash that assigns tasks to splits."""
    ids_file: str | None = None
    """A JSON file (relative to the project) with explicit id lists under train/val/test."""

    @model_validator(mode="after")
    def _fractions_sum_to_one(self) -> SplitsConfig:
        total = self.train + self.val + self.test
        if self.ids_file is None and abs(total - 1.0) > 1e-6:
            raise ValueError(f"train + val + test must sum to 1, got {total:g}")
        return self


class GateConfig(_Section):
    """When a candidate is accepted over the current best (on the full val split)."""

    mode: GateMode = GateMode.PAIRED
    """paired (over tasks scored on both sides) or welch (unpaired)."""
    alpha: Num = Field(0.05, gt=0, lt=0.5)
    """False-accept probability: a candidate no better than the best is accepted with
    probability at most alpha per gate (``per_gate``) or per run (``run``); the gate is a
    one-sided t-test at the t-quantile for its degrees of freedom."""
    alpha_spending: AlphaSpending = AlphaSpending.CONFIRM
    """confirm (the default): a strict gate is a screen at a = sqrt(alpha /
    budget.max_iterations), and a candidate that passes is confirmed on fresh trials of
    both sides, the fresh data alone deciding at a, so a loop of max_iterations decisions
    promotes a no-better candidate with probability at most alpha. run: each gate tests at
    alpha / budget.max_iterations (the loop at most alpha too). per_gate: each gate tests
    at alpha (the loop is not bounded). confirm and run need a max_iterations cap and no
    fixed k_se."""
    k_se: Num | None = Field(None, ge=0)
    """A fixed threshold instead of alpha: accept only if delta > k_se x SE. None (the
    default) derives it from alpha and the df; a fixed k_se gives up alpha's bound (the
    gate still records the false-accept probability it implies)."""
    min_delta: Num = Field(0.02, ge=0)
    """Smallest improvement worth accepting; smaller moves are negligible."""
    min_coverage: Num = Field(0.6, ge=0, le=1)
    """Below this fraction of val tasks scored on both sides the gate is indecisive."""
    max_missing: Num = Field(0.05, ge=0, le=1)
    """The largest fraction of the best's scored val tasks the candidate may leave unscored
    (paired mode; each counts as a 0 for it), and of the best's scored trials it may error
    on (on tasks both scored, both modes); more makes the gate indecisive."""
    no_regression: Bool = True
    """Veto a candidate that regresses a val task (see regression_drop), even when the
    mean rises."""
    regression_drop: Num = Field(0.5, gt=0, le=1)
    """A val task regresses when its mean drops by more than this and by more than twice
    the SE of the per-task difference from its trials (errored on every trial: 0)."""
    pass_threshold: Num = Field(1.0, gt=0, le=1)
    """A trial passes (pass^k in every evaluation record) when its reward is at least this,
    up to the shared tolerance; the record states the threshold it used."""
    policy: GatePolicy = GatePolicy.STRICT
    """strict: accept only a gain shown beyond noise. keep-best: keep a move of the point
    estimate in the goal's direction that passes the mechanism audit, labelled with its
    confidence and tentative until confirmed."""
    first_look: Bool = True
    """optimize, strict policy: a child's val evaluation runs its first trial first, and a
    child whose mean there does not lead the best's is stopped, never gated (a futility
    stop: it only rejects, so alpha's bound holds; it saves the rollouts of most losing
    children). A stopped child has no gate or reject event."""


class GoalConfig(_Section):
    """What the decision policies optimise: the reward or one score part, and its direction."""

    metric: str = Field("reward", pattern=r"^(reward|parts\.[A-Za-z0-9_.-]+)$")
    """``reward`` or ``parts.<evaluator name>``."""
    direction: GoalDirection = GoalDirection.MAXIMIZE
    """maximize or minimize the metric (minimize compares the negated metric)."""


class BudgetConfig(_Section):
    """Spending caps; 0 means no cap."""

    max_iterations: Int = Field(20, ge=0)
    """Accept/reject decisions (editing iterations)."""
    max_metric_calls: Int = Field(0, ge=0)
    """Rollouts executed (metric calls) across the run."""
    max_usd: Num = Field(0, ge=0)
    """Recorded money spent across the run."""
    stall: Int = Field(0, ge=0)
    """Stop after this many consecutive rejections."""


class EngineConfig(_Section):
    """Where and how rollouts run."""

    kind: EngineKind = EngineKind.RAY
    """ray (default; local Ray started on demand) or local (worker subprocesses on this
    machine, scored in the driver; no Ray needed)."""
    address: str | None = None
    """Ray cluster address; None starts or joins a local Ray (RAY_ADDRESS also works)."""
    reuse_local_ray: bool = True
    """Without an address: join capevolve's own local Ray shared by later commands (started
    on first use, stopped by ``capevolve down`` or after CAPEVOLVE_RAY_IDLE_S idle
    seconds, default 900); false (or env CAPEVOLVE_RAY_REUSE=0): each command starts and
    stops a local Ray of its own."""
    workers: Int | Literal["auto"] = "auto"
    """Number of worker processes that run ``run_target`` (Ray rollout actors, or local
    subprocesses); auto = one per CPU Ray reports (ray), one (local)."""
    concurrency: Int = Field(64, ge=1)
    """Rollouts in flight across the whole engine (all workers together)."""
    timeout_s: Num = Field(600, gt=0)
    """Per-rollout wall-clock limit; past it the unit is an error of kind timeout."""
    retries: Int = Field(2, ge=0, le=20)
    """Extra attempts for transient errors (with exponential backoff and jitter)."""
    isolation: Literal["sandbox", "process", "none"] = "sandbox"
    """sandbox: every worker that runs run_target starts in an OS sandbox (bubblewrap):
    read-only system, Python environment and capevolve; the run dir, keys, gold and
    scorer files invisible; nothing it starts outlives it. process: the sandbox, and
    each run_target call in a child process of its own, so a native crash becomes an
    error row of kind crash (slower; for native code). none: no sandbox; candidate code
    is not contained, and status, reports and final.json say so. Where the sandbox
    cannot be built, a command refuses and names this setting."""
    network: Literal["none", "host"] | None = None
    """The sandbox's network: none (a loopback of its own) or host (an agent that calls a
    model endpoint needs it). Unset: host when the project pins an agent model, else none.
    The network an evaluation had is in its record (``sandbox_network``)."""
    sandbox_reads: list[str] = Field(default_factory=list)
    """Globs (relative to the project dir) of data files run_target reads: the sandbox
    hides every other non-Python file of the project and of the adapter's package."""
    max_in_flight: Int | None = Field(None, ge=1)
    """Cluster-wide cap on rollouts executing at once, held by one small limiter actor
    that every worker asks before each rollout (set it to the provider's concurrency
    limit: adding nodes never exceeds it). None: only ``concurrency`` applies, split into
    per-worker slots. Ray engine only."""
    rate_limit_per_s: Num | None = Field(None, gt=0)
    """Cluster-wide cap on rollouts started per second, held by the same limiter actor
    (a retry of a rollout reuses its start). None: no rate limit. Ray engine only."""
    num_cpus: Num | None = Field(None, ge=0)
    """CPUs each worker actor requests. None: min(1, cluster CPUs / workers). With
    ``workers: auto`` the pool holds as many actors as the cluster's resources fit."""
    resources: dict[str, Num] = Field(default_factory=dict)
    """Custom Ray resources each worker actor requests (e.g. ``{api_slot: 1}``): actors
    are placed only on nodes that offer them (``ray start --resources``)."""

    @model_validator(mode="after")
    def _workers_positive(self) -> EngineConfig:
        if isinstance(self.workers, int) and self.workers < 1:
            raise ValueError("workers must be >= 1 or 'auto'")
        return self


class LeakScanConfig(_Section):
    """What a candidate may not carry, checked before any rollout: task ids, gold values
    of val and test tasks, long spans of their inputs."""

    min_chars: Int = Field(4, ge=1)
    """Gold values and task ids with fewer letters and digits than this are too common to
    count (short numbers)."""
    ignore: list[str] = Field(default_factory=list)
    """Values too common to count whatever their length (yes, none, true)."""
    gold_values: Bool = True
    """false: gold values do not count (a project whose capability is a knowledge base that
    holds the answers, such as a facts table); task ids and input spans still do."""
    max_tasks_per_value: Int = Field(1, ge=1)
    """A gold value found in the targets of more tasks than this is a label (a class, a
    tool name), not an answer: it does not count."""
    input_span_chars: Int = Field(64, ge=0)
    """A verbatim span of this many characters of a val or test input is a leak (case and
    whitespace aside); 0: spans are not checked."""


class DatasetConfig(_Section):
    """A JSONL file of datapoints: one JSON object a line (``dataset:``)."""

    path: str = Field(min_length=1)
    """The JSONL file, relative to the project dir."""
    id: str | None = None
    """The field holding each datapoint's unique id; None assigns ids from content
    (``d_`` + sha256 of the canonical JSON line, first 12 hex digits), recorded in the
    task's metadata (``id_source``)."""
    input: str = Field("input", min_length=1)
    """The field passed to the target as its input."""
    expected: str | None = "expected"
    """The field holding the expected output (ground truth); None: no ground truth."""


class EvaluatorConfig(_Section):
    """One metric of a dataset project; its score is stored as a score part."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    """The score part's name (unique)."""
    kind: EvaluatorKind
    """exact, normalized_exact, token_f1, set_overlap, regex, numeric, json_field, python,
    judge."""
    weight: float = Field(1.0, gt=0)
    """Weight in the reward (the weighted mean of the evaluators' scores)."""
    pattern: str | None = None
    """regex: the pattern the output must match (None: the expected value is the pattern)."""
    tolerance: float = Field(0.0, ge=0)
    """numeric: the largest |output - expected| that still scores 1."""
    field: str | None = None
    """json_field: the dotted path of the field compared (output parsed as JSON)."""
    function: str | None = None
    """python: ``file.py:function`` or ``module:function`` called as
    ``(input, output, expected)`` and returning a score in [0, 1], or None when the
    datapoint cannot be scored by it."""
    rubric: str | None = None
    """judge: what a score of 1 and of 0 mean; the only instructions the judge gets
    about scoring (never the optimization goal)."""
    base_url: str | None = None
    """judge: an OpenAI-compatible endpoint (``http://host:port/v1``); with model, instead
    of ``models.judge`` (None: ``models.judge`` is the judge)."""
    model: str | None = None
    """judge: the model id, pinned (recorded in run.json with the config)."""
    api_key_env: str | None = None
    """judge: the environment variable holding the API key (None: no key sent)."""
    timeout_s: float = Field(60.0, gt=0)
    """judge with its own base_url: per-call deadline, retries included."""
    max_tokens: int = Field(256, ge=16)
    """judge with its own base_url: the answer's token bound."""
    needs_expected: bool = True
    """Whether a datapoint without an expected value is unscoreable for this evaluator
    (judge: set False for a rubric that needs no reference answer)."""

    @model_validator(mode="after")
    def _kind_settings(self) -> EvaluatorConfig:
        if self.kind == EvaluatorKind.PYTHON and not self.function:
            raise ValueError(f"evaluator {self.name!r}: kind python needs function")
        if self.kind == EvaluatorKind.JSON_FIELD and not self.field:
            raise ValueError(f"evaluator {self.name!r}: kind json_field needs field")
        if self.kind == EvaluatorKind.JUDGE:
            if not self.rubric:
                raise ValueError(f"evaluator {self.name!r}: kind judge needs rubric")
            if bool(self.base_url) != bool(self.model):
                raise ValueError(f"evaluator {self.name!r}: give both base_url and model, or "
                                 "neither to use models.judge")
        if self.kind == EvaluatorKind.REGEX and self.pattern:
            import re
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise ValueError(f"evaluator {self.name!r}: pattern: {exc}") from None
        return self


class ProjectConfig(_Section):
    """The whole capevolve.yaml of a project."""

    name: str = Field(min_length=1)
    """Project name, shown in reports."""
    adapter: str = Field(min_length=1)
    """``file.py:Class`` or ``package.module:Class``, relative to the project dir."""
    capability_path: str = Field(min_length=1)
    """The seed capability directory, relative to the project dir."""
    capabilities: list[str] = Field(default_factory=list)
    """What an optimizer may edit (informational)."""
    splits: SplitsConfig = SplitsConfig()
    """Split fractions and seed."""
    num_trials: Int = Field(3, ge=1, le=MAX_TRIALS)
    """Trials per task in every evaluation."""
    gate: GateConfig = GateConfig()
    """When a candidate is accepted: the decision policy and its statistics."""
    goal: GoalConfig = GoalConfig()
    """What the decision policy optimises."""
    budget: BudgetConfig = BudgetConfig()
    """Spending caps."""
    stop_condition: str = ""
    """Free text, recorded and shown by status."""
    engine: EngineConfig = EngineConfig()
    """Execution engine."""
    seed: Int = 0
    """Run seed: rollout seeds derive from (seed, task_id, trial)."""
    leak_scan: LeakScanConfig = LeakScanConfig()
    """What a candidate may not carry (refused before any rollout)."""
    protected_paths: list[str] = Field(default_factory=list)
    """Glob patterns (relative to a candidate) an edit must not touch (added to defaults
    covering gold / answer files, scorers and splits)."""
    domain_notes: str = ""
    """Notes about the domain for people and describer agents (census export); a judge
    gets them in their own trusted block."""
    dataset: DatasetConfig | None = None
    """A dataset project: datapoints from a JSONL file (with ``target`` and
    ``evaluators``) instead of an adapter."""
    target: str | None = None
    """Dataset projects: the code under test, ``file.py:function`` or ``module:function``,
    called as ``(input, candidate_dir) -> output`` (sync or async)."""
    evaluators: list[EvaluatorConfig] = Field(default_factory=list)
    """Dataset projects: the metrics; the reward is their weighted mean."""
    models: ModelsConfig = ModelsConfig()
    """The models the project calls, by role, pinned in the run (``models:``)."""

    @model_validator(mode="before")
    @classmethod
    def _dataset_adapter(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("dataset") is not None:
            if data.get("adapter") not in (None, DATASET_ADAPTER):
                raise ValueError("adapter and dataset are exclusive: a dataset project "
                                 "declares dataset + target + evaluators instead of an adapter")
            data = {**data, "adapter": DATASET_ADAPTER}
        return data

    @model_validator(mode="after")
    def _dataset_complete(self) -> ProjectConfig:
        if self.dataset is None:
            if self.target is not None or self.evaluators:
                raise ValueError("target and evaluators belong to a dataset project "
                                 "(declare dataset:)")
            return self
        if not self.target:
            raise ValueError("dataset: a dataset project needs target (module:function)")
        if not self.evaluators:
            raise ValueError("dataset: a dataset project needs at least one evaluator")
        names = [e.name for e in self.evaluators]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"evaluators: duplicate names {', '.join(duplicates)}")
        for ev in self.evaluators:
            if ev.kind == EvaluatorKind.JUDGE and not ev.model and self.models.judge is None:
                raise ValueError(f"evaluator {ev.name!r}: kind judge needs a model: declare "
                                 "models.judge (or give the evaluator base_url and model)")
        return self

    @model_validator(mode="after")
    def _run_alpha_needs_a_budget(self) -> ProjectConfig:
        spending = self.gate.alpha_spending
        if spending in (AlphaSpending.RUN, AlphaSpending.CONFIRM):
            other = " (or set gate.alpha_spending: per_gate)" \
                if spending == AlphaSpending.CONFIRM else ""
            if self.budget.max_iterations < 1:
                raise ValueError(f"gate.alpha_spending {spending} spends alpha over "
                                 f"budget.max_iterations, which must be >= 1{other}")
            if self.gate.k_se is not None:
                raise ValueError(f"gate.alpha_spending {spending} derives the threshold from "
                                 f"alpha; remove gate.k_se{other}")
        return self


def _error_path(error: Mapping[str, Any]) -> str:
    return ".".join(str(part) for part in error["loc"]) or "<root>"


def format_validation_error(source: str, exc: ValidationError, limit: int = 5) -> str:
    """One line naming the file and the offending key paths (the first ``limit``)."""
    errors = exc.errors()
    problems = "; ".join(f"{_error_path(e)}: {e['msg']}" for e in errors[:limit])
    more = f" (+{len(errors) - limit} more)" if len(errors) > limit else ""
    return f"{source}: {problems}{more}"


def parse_config(data: object, source: str) -> ProjectConfig:
    """Validate already-parsed YAML; raises ConfigError naming ``source`` and key paths."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping at the top level")
    try:
        return ProjectConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(source, exc)) from None
    except RecursionError:
        raise ConfigError(f"{source}: nested too deeply") from None


class _UniqueKeyLoader(yaml.SafeLoader):
    """The safe YAML loader, refusing a mapping that repeats a key (the last one would
    silently win)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:  # an unhashable key: the base loader reports it
                break
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} appears twice", key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


def _read_yaml(path: Path) -> object:
    """The YAML document at ``path``; ConfigError naming the file for anything unreadable."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_CONFIG_BYTES} bytes; not a config")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply to be a config") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None)
        raise ConfigError(f"{path}: malformed YAML{where}"
                          + (f": {problem}" if problem else "")) from None


def check_capability_dir(project_root: Path, config: ProjectConfig) -> Path:
    """The seed capability directory, resolved (symlinks followed); ConfigError naming
    ``capability_path`` when it is not a directory, or is or contains the project dir
    (a seed holding the project would hold its scorer, config and run dirs)."""
    root = Path(project_root).resolve()
    where = f"{root / CONFIG_FILENAME}: capability_path: {config.capability_path!r}"
    try:
        path = (root / config.capability_path).resolve()
    except (OSError, RuntimeError) as exc:
        raise ConfigError(f"{where}: cannot be resolved ({exc})") from None
    if not path.is_dir():
        raise ConfigError(f"{where} is not a directory")
    if path == root or path in root.parents:
        raise ConfigError(f"{where} is {path}, which holds the project itself; point it "
                          "at the capability directory inside the project")
    return path


def load_config(project_dir: Path) -> ProjectConfig:
    """Read and validate ``<project_dir>/capevolve.yaml``."""
    path = Path(project_dir) / CONFIG_FILENAME
    if not path.is_file():
        raise ConfigError(f"{path}: no {CONFIG_FILENAME} here (is this a capevolve project?)")
    return parse_config(_read_yaml(path), str(path))
