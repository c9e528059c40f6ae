"""The built-in adapter of a dataset project (``dataset:`` + ``target:`` + ``evaluators:``).

A datapoint missing an expected value an evaluator needs is excluded, never scored 0.
"""

from __future__ import annotations

import inspect
import math
from pathlib import Path
from typing import Any

from capevolve._project.loader import import_callable
from capevolve.adapter import Rollout, Score, Task
from capevolve.config import EvaluatorConfig, ProjectConfig, load_config
from capevolve.datasets.corpus import has_ground_truth, load_corpus
from capevolve.datasets.judge import Judge
from capevolve.datasets.metrics import DETERMINISTIC
from capevolve.errors import AdapterError, ConfigError
from capevolve.kinds import EvaluatorKind


class DatasetAdapter:
    """Adapter over a dataset project's config (``dataset:`` and ``target:`` required)."""

    takes_project_root = True

    def __init__(self, root: Path, config: ProjectConfig | None = None) -> None:
        self.root = Path(root)
        self.config = config or load_config(self.root)
        if self.config.dataset is None or not self.config.target:
            raise ConfigError(f"{self.root / 'capevolve.yaml'}: not a dataset project "
                              "(dataset: and target: are required)")
        self.dataset = self.config.dataset
        self._target: Any = None
        self._functions: dict[str, Any] = {}
        self._judges: dict[str, Judge] = {}

    @property
    def judged(self) -> bool:
        """Whether an LLM judge scores (its probe findings are then warnings)."""
        return any(e.kind == EvaluatorKind.JUDGE for e in self.config.evaluators)

    def tasks(self) -> list[Task]:
        """Every datapoint, in file order."""
        return load_corpus(self.root, self.dataset)

    async def run_target(self, candidate: Path, task: Task, *, trial: int,
                         seed: int) -> Rollout:
        """The target's output on the datapoint's input."""
        if self._target is None:
            self._target = import_callable(self.root, str(self.config.target), "target")
        output = self._target(task.input, Path(candidate))
        if inspect.isawaitable(output):
            output = await output
        return Rollout(output=output)

    def _needs_expected(self) -> list[str]:
        return [e.name for e in self.config.evaluators if e.needs_expected]

    def scoreable(self, task: Task) -> bool:
        """False when an evaluator needs an expected value the datapoint lacks."""
        return has_ground_truth(task.target) or not self._needs_expected()

    def exclusion_reason(self, task: Task) -> str:
        """Why :meth:`scoreable` said no."""
        field = self.dataset.expected or "expected"
        return f"no expected value ({field!r}) for evaluator(s) {', '.join(self._needs_expected())}"

    def _part(self, ev: EvaluatorConfig, task: Task, output: Any) -> tuple[float, str]:
        if ev.kind in DETERMINISTIC:
            return DETERMINISTIC[ev.kind](ev, output, task.target)
        if ev.kind == EvaluatorKind.JUDGE:
            if ev.name not in self._judges:
                self._judges[ev.name] = Judge(ev, self.config.domain_notes, self.config.models)
            return self._judges[ev.name].score(task.input, output, task.target)
        if ev.name not in self._functions:
            self._functions[ev.name] = import_callable(self.root, str(ev.function),
                                                       f"evaluators.{ev.name}.function")
        value = self._functions[ev.name](task.input, output, task.target)
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or not 0 <= value <= 1:
            raise AdapterError(f"evaluator {ev.name!r} returned {value!r}, expected a "
                               "number in [0, 1]")
        return float(value), f"{ev.function} returned {value:g}"

    def score(self, task: Task, rollout: Rollout) -> Score:
        """Every evaluator as a part, the reward their weighted mean; AdapterError for a python
        evaluator's value outside [0, 1]."""
        parts: dict[str, float] = {}
        notes: list[str] = []
        total = weight = 0.0
        for ev in self.config.evaluators:
            value, why = self._part(ev, task, rollout.output)
            parts[ev.name] = value
            notes.append(f"{ev.name} {value:.2f}: {why}")
            total += ev.weight * value
            weight += ev.weight
        return Score(reward=min(1.0, max(0.0, total / weight)), feedback="; ".join(notes),
                     parts=parts)
