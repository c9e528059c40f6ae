"""The verbs on a project directory: scaffold one, and check that one is runnable (with what
its probe rollout's meter says about the agent's endpoint)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from capevolve._loop.loop_status import stop_parse
from capevolve._policy.power_plan import planned_power
from capevolve._policy.protect import protected_collisions, protected_patterns
from capevolve._project.loader import NOT_DETERMINISTIC, check_project_warnings, load_tasks
from capevolve._project.scaffold import init_project
from capevolve._project.scoreable import exclusions
from capevolve._store.candidates import iter_files
from capevolve._store.splits import make_splits
from capevolve.adapter import Task
from capevolve.config import ProjectConfig
from capevolve.errors import CapevolveError
from capevolve.kinds import EvaluatorKind
from capevolve.models import Meter


def init(directory: Path | str, kind: str = "adapter") -> dict[str, Any]:
    """Write a starter project (``kind`` adapter or dataset) into ``directory``, never over an
    existing one; returns ``project`` and the written ``files``."""
    files = init_project(directory, kind)
    return {"project": str(Path(directory).resolve()), "files": files}


def check(project_dir: Path | str) -> dict[str, Any]:
    """A project's problems and warnings, in words, with its task count and planned power."""
    probe = Meter()
    loaded, problems, found = check_project_warnings(project_dir, probe)
    metrics = _metrics(loaded.config) if loaded else None
    judges = ", ".join(metrics["judge"]) if metrics else ""
    trials = loaded.config.num_trials if loaded else 0
    warnings = [f"judge evaluator(s) {judges}: {w}" + (
        f"; an LLM judge is a noisy measurement: use num_trials >= 5 (now {trials})"
        if w.startswith(NOT_DETERMINISTIC) else "") for w in found]
    if loaded is not None:
        warnings += _protected_seed_files(loaded.capability_dir, loaded.config)
        warnings += model_warnings(loaded.config, probe.snapshot())
    n_tasks, power = None, None
    if loaded is not None and not problems:
        adapter = loaded.adapter()
        tasks = load_tasks(adapter)
        n_tasks, power = len(tasks), _power(loaded.root, loaded.config, adapter, tasks)
    return {"ok": not problems, "project": str(Path(project_dir).resolve()),
            "n_tasks": n_tasks, "problems": problems, "warnings": warnings,
            "metrics": metrics,
            "stop": stop_parse(loaded.config.stop_condition) if loaded else None,
            "power": power}


def _power(root: Path, config: ProjectConfig, adapter: Any,
           tasks: list[Task]) -> dict[str, Any] | None:
    """What the gate could detect on the val split ``run`` would freeze (None: unsplittable)."""
    try:
        val = make_splits([t.id for t in tasks], config.splits, root).val
        excluded = exclusions(adapter, [t for t in tasks if t.id in set(val)])
    except CapevolveError:
        return None
    return planned_power(config.gate, config.budget.max_iterations, len(val) - len(excluded),
                         config.num_trials)


def _protected_seed_files(capability_dir: Path, config: ProjectConfig) -> list[str]:
    """A warning per seed file a protected pattern covers (no edit to it could be evaluated)."""
    try:
        rels = [rel.as_posix() for rel in iter_files(capability_dir)]
    except CapevolveError:
        return []  # an unreadable seed is the snapshot's error, said by run
    return [f"{config.capability_path}/{rel}: matches the protected pattern {pattern!r}, so "
            "no edit to it can ever be evaluated; rename the file (or drop the pattern from "
            "protected_paths)" for rel, pattern in
            protected_collisions(rels, protected_patterns(config.protected_paths))]


def _metrics(config: ProjectConfig) -> dict[str, list[str]] | None:
    if config.dataset is None:
        return None
    kinds = [e.kind for e in config.evaluators]
    return {"deterministic": sorted({str(k) for k in kinds if k.deterministic}),
            "judge": [e.name for e in config.evaluators if e.kind == EvaluatorKind.JUDGE]}


def model_warnings(config: ProjectConfig, probe: dict[str, Any]) -> list[str]:
    """Warnings on the agent endpoint: tool calls ignored, more rollouts in flight than its
    slots, or an estimated queueing wait past ``deadline_s``."""
    agent = config.models.agent
    if agent is None:
        return []
    out: list[str] = []
    offers, calls, text = (int(probe.get(k) or 0)
                           for k in ("tool_offers", "tool_answers", "call_text"))
    if offers and not calls:
        looks = f" ({text} had text that looks like a call)" if text else ""
        out.append(f"models.agent: the probe rollout offered tools on {offers} call(s) and no "
                   f"tool call came back{looks}: the server may ignore `tools` (llama.cpp "
                   "needs --jinja and a tool-capable chat template; vLLM needs "
                   "--enable-auto-tool-choice and a --tool-call-parser)")
    answered = int(probe.get("attempts") or 0) - int(probe.get("unknown_attempts") or 0) \
        - int(probe.get("rejected_attempts") or 0)
    seconds = float(probe.get("answered_s") or 0.0)
    if answered <= 0 or seconds <= 0:
        return out
    per_call = seconds / answered
    cap = config.engine.max_in_flight
    in_flight = min(config.engine.concurrency, cap) if cap else config.engine.concurrency
    slots = agent.concurrency
    if slots is not None and in_flight > slots:
        out.append(f"models.agent: the engine runs up to {in_flight} rollouts at once but the "
                   f"endpoint declares {slots} slot(s) (models.agent.concurrency): calls will "
                   "queue; lower engine.concurrency (or engine.max_in_flight) to the slots")
    wait = per_call * math.ceil(in_flight / (slots or 1))
    if wait > agent.deadline_s:
        served = f"{slots} slot(s)" if slots else "one call at a time (no slots declared)"
        out.append(f"models.agent: at the probe's {per_call:.1f}s per call, {in_flight} "
                   f"rollouts in flight on {served} wait about {wait:.0f}s for a call, past "
                   f"deadline_s {agent.deadline_s:g}: calls will time out and be paid again")
    return out
