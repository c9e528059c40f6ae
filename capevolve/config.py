"""capevolve.yaml as pydantic models: unknown keys are errors naming their path; numbers are
strict (no booleans, quoted numbers, NaN or infinities)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import Field, Strict, ValidationError, model_validator

from capevolve.config_models import Int, ModelsConfig, Num, Section, one_line
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
"""A larger capevolve.yaml is refused unparsed."""
MAX_TRIALS = 1000
"""The most trials per task an evaluation may run."""

Bool = Annotated[bool, Strict()]
"""true or false only."""

DATASET_ADAPTER = "capevolve.datasets.adapter:DatasetAdapter"
"""The adapter of a dataset project."""


SCORE_DATA_PATTERNS = ("*scorer*", "*gold*", "*answers*", "*answer_key*")
"""Files the scores depend on: protected from candidates, fingerprinted."""


class SplitsConfig(Section):
    """How tasks are divided into train, val and test."""

    train: Num = Field(0.5, ge=0, le=1)
    """Fraction of tasks in train, the split editors see."""
    val: Num = Field(0.25, gt=0, le=1)
    """Fraction of tasks in val, where gates decide."""
    test: Num = Field(0.25, gt=0, le=1)
    """Fraction of tasks in test, scored once by finalize."""
    seed: Int = 0
    """Seed of the task-id hash assigning splits."""
    ids_file: str | None = None
    """JSON file of explicit train/val/test ids, relative to the project."""

    @model_validator(mode="after")
    def _fractions_sum_to_one(self) -> SplitsConfig:
        total = self.train + self.val + self.test
        if self.ids_file is None and abs(total - 1.0) > 1e-6:
            raise ValueError(f"train + val + test must sum to 1, got {total:g}")
        return self


class GateConfig(Section):
    """When a candidate is accepted over the best, on full val."""

    mode: GateMode = GateMode.PAIRED
    """paired (tasks scored on both sides) or welch (unpaired)."""
    alpha: Num = Field(0.05, gt=0, lt=0.5)
    """Bound on the probability of accepting a no-better candidate."""
    alpha_spending: AlphaSpending = AlphaSpending.CONFIRM
    """per_gate bounds each gate; run and confirm (fresh-trial recheck) bound the loop."""
    k_se: Num | None = Field(None, ge=0)
    """Fixed threshold: accept if delta > k_se x SE; None: derived from alpha."""
    min_delta: Num = Field(0.02, ge=0)
    """Smallest improvement worth accepting."""
    min_coverage: Num = Field(0.6, ge=0, le=1)
    """Least fraction of val tasks scored on both sides for a decision."""
    max_missing: Num = Field(0.05, ge=0, le=1)
    """Largest fraction of the best's scored tasks or trials the candidate may lack."""
    no_regression: Bool = True
    """Veto a candidate that regresses a val task, even if the mean rises."""
    regression_drop: Num = Field(0.5, gt=0, le=1)
    """A task regresses when its mean drops more than this and twice the SE."""
    pass_threshold: Num = Field(1.0, gt=0, le=1)
    """Reward at which a trial counts as passed in pass^k."""
    policy: GatePolicy = GatePolicy.STRICT
    """strict: accept only a gain beyond noise; keep-best: keep any audited gain, as tentative."""
    first_look: Bool = True
    """optimize, strict: a child whose first trial does not lead the best stops, ungated."""


class GoalConfig(Section):
    """What the decision policies optimise, and which way."""

    metric: str = Field("reward", pattern=r"^(reward|parts\.[A-Za-z0-9_.-]+)$")
    """``reward`` or ``parts.<evaluator name>``."""
    direction: GoalDirection = GoalDirection.MAXIMIZE
    """maximize or minimize the metric."""


class BudgetConfig(Section):
    """Spending caps; 0 means no cap."""

    max_iterations: Int = Field(20, ge=0)
    """Accept/reject decisions."""
    max_metric_calls: Int = Field(0, ge=0)
    """Rollouts executed across the run."""
    max_usd: Num = Field(0, ge=0)
    """Recorded dollars spent across the run."""
    stall: Int = Field(0, ge=0)
    """Stop after this many consecutive rejections."""


class EngineConfig(Section):
    """Where and how rollouts run."""

    kind: EngineKind = EngineKind.RAY
    """ray (a local Ray started on demand) or local (subprocesses, no Ray)."""
    address: str | None = None
    """Ray cluster address; None: RAY_ADDRESS or a local Ray."""
    reuse_local_ray: bool = True
    """Without an address, share one local Ray across commands."""
    workers: Int | Literal["auto"] = "auto"
    """Worker processes; auto: one per Ray CPU, or one (local)."""
    concurrency: Int = Field(64, ge=1)
    """Rollouts in flight across the whole engine."""
    timeout_s: Num = Field(600, gt=0)
    """Per-rollout wall-clock limit in seconds; past it, a timeout error."""
    retries: Int = Field(2, ge=0, le=20)
    """Extra attempts for transient errors, with backoff."""
    isolation: Literal["sandbox", "process", "none"] = "sandbox"
    """sandbox (bubblewrap), process (also a child per call) or none."""
    network: Literal["none", "host"] | None = None
    """The sandbox's network; unset: host if an agent model is pinned, else none."""
    sandbox_reads: list[str] = Field(default_factory=list)
    """Globs of data files run_target reads; the sandbox hides the rest."""
    max_in_flight: Int | None = Field(None, ge=1)
    """Ray only: cluster-wide cap on rollouts running at once."""
    rate_limit_per_s: Num | None = Field(None, gt=0)
    """Ray only: cluster-wide cap on rollouts started per second."""
    num_cpus: Num | None = Field(None, ge=0)
    """CPUs per worker actor; None: min(1, cluster CPUs / workers)."""
    resources: dict[str, Num] = Field(default_factory=dict)
    """Custom Ray resources per worker actor, e.g. ``{api_slot: 1}``."""

    @model_validator(mode="after")
    def _workers_positive(self) -> EngineConfig:
        if isinstance(self.workers, int) and self.workers < 1:
            raise ValueError("workers must be >= 1 or 'auto'")
        return self


class LeakScanConfig(Section):
    """What a candidate may not carry, checked before any rollout."""

    min_chars: Int = Field(4, ge=1)
    """Values and ids with fewer letters and digits than this do not count."""
    ignore: list[str] = Field(default_factory=list)
    """Values that never count, whatever their length."""
    gold_values: Bool = True
    """false: gold values do not count (a knowledge-base capability)."""
    max_tasks_per_value: Int = Field(1, ge=1)
    """A gold value of more tasks than this is a label, not a leak."""
    input_span_chars: Int = Field(64, ge=0)
    """Length of a verbatim val/test input span that leaks; 0: unchecked."""


class DatasetConfig(Section):
    """A JSONL file of datapoints."""

    path: str = Field(min_length=1)
    """The JSONL file, relative to the project."""
    id: str | None = None
    """Field of each datapoint's unique id; None: a content hash."""
    input: str = Field("input", min_length=1)
    """Field passed to the target."""
    expected: str | None = "expected"
    """Field of the expected output; None: no ground truth."""


class EvaluatorConfig(Section):
    """One metric of a dataset project (a score part)."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    """The score part's unique name."""
    kind: EvaluatorKind
    """The metric computed."""
    weight: float = Field(1.0, gt=0)
    """Weight in the reward, the evaluators' weighted mean."""
    pattern: str | None = None
    """regex: the pattern; None: the expected value is the pattern."""
    tolerance: float = Field(0.0, ge=0)
    """numeric: the largest |output - expected| scoring 1."""
    field: str | None = None
    """json_field: dotted path of the compared field."""
    function: str | None = None
    """python: ``file.py:function`` or ``module:function`` scoring [0, 1] or None."""
    rubric: str | None = None
    """judge: what scores 1 and 0 mean (its only scoring instructions)."""
    base_url: str | None = None
    """judge: an OpenAI-compatible endpoint; None: ``models.judge``."""
    model: str | None = None
    """judge: the pinned model id."""
    api_key_env: str | None = None
    """judge: environment variable of the API key; None: no key."""
    timeout_s: float = Field(60.0, gt=0)
    """judge with base_url: per-call deadline in seconds, retries included."""
    max_tokens: int = Field(256, ge=16)
    """judge with base_url: the answer's token bound."""
    needs_expected: bool = True
    """Whether a datapoint with no expected value is unscoreable."""

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


class ProjectConfig(Section):
    """The whole capevolve.yaml of a project."""

    name: str = Field(min_length=1)
    """Project name, shown in reports."""
    adapter: str = Field(min_length=1)
    """``file.py:Class`` or ``package.module:Class``, relative to the project."""
    capability_path: str = Field(min_length=1)
    """The seed capability directory, relative to the project."""
    capabilities: list[str] = Field(default_factory=list)
    """What an optimizer may edit (informational)."""
    splits: SplitsConfig = SplitsConfig()
    """Split fractions and seed."""
    num_trials: Int = Field(3, ge=1, le=MAX_TRIALS)
    """Trials per task in every evaluation."""
    gate: GateConfig = GateConfig()
    """The decision policy and its statistics."""
    goal: GoalConfig = GoalConfig()
    """What the decision policy optimises."""
    budget: BudgetConfig = BudgetConfig()
    """Spending caps."""
    stop_condition: str = ""
    """Free text, recorded and shown by status."""
    engine: EngineConfig = EngineConfig()
    """Execution engine."""
    seed: Int = 0
    """Run seed; rollout seeds derive from (seed, task_id, trial)."""
    leak_scan: LeakScanConfig = LeakScanConfig()
    """What a candidate may not carry."""
    protected_paths: list[str] = Field(default_factory=list)
    """Globs an edit must not touch, on top of the defaults."""
    domain_notes: str = ""
    """Domain notes for people, describer agents and judges."""
    dataset: DatasetConfig | None = None
    """A dataset project's datapoints, instead of an adapter."""
    target: str | None = None
    """Dataset projects: the code under test, ``(input, candidate_dir) -> output``."""
    evaluators: list[EvaluatorConfig] = Field(default_factory=list)
    """Dataset projects: the metrics; the reward is their weighted mean."""
    models: ModelsConfig = ModelsConfig()
    """The models the project calls, by role."""

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


def parse_config(data: object, source: str) -> ProjectConfig:
    """Validate parsed YAML; ConfigError naming ``source`` and the first five bad key paths."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping at the top level")
    try:
        return ProjectConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: {one_line(exc)}") from None
    except RecursionError:
        raise ConfigError(f"{source}: nested too deeply") from None


class _UniqueKeyLoader(yaml.SafeLoader):
    """The safe YAML loader, refusing a repeated key."""

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
    """The YAML document at ``path``; ConfigError naming the file if unreadable."""
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
    """The resolved seed capability dir; ConfigError if it is not a directory, or is
    or holds the project dir."""
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
