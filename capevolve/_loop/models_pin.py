"""The model settings a run pins, and the rule that keeps evaluations comparable."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from capevolve._store.rollouts.query import RolloutStore
from capevolve._store.rundir import RunDir
from capevolve.config import ProjectConfig
from capevolve.errors import ConfigError, StoreError
from capevolve.kinds import EvaluatorKind
from capevolve.models.prices import table_price
from capevolve.models.settings import ModelSettings, differences, resolve, with_candidate

ROLES = ("agent", "judge", "proposer")


def pinned(config: ProjectConfig, source: str = "capevolve.yaml") -> dict[str, Any]:
    """run.json's ``models`` and ``models_fingerprint``; ConfigError when ``budget.max_usd`` is
    set and a declared model has no price."""
    models: dict[str, dict[str, Any]] = {}
    for role in ROLES:
        declared = getattr(config.models, role)
        if declared is None:
            continue
        settings = resolve(declared, role, config.models)
        if config.budget.max_usd > 0 and settings.price is None:
            raise ConfigError(f"{source}: budget.max_usd is set but model {settings.model!r} "
                              f"(models.{role}) has no known price; set models.{role}.price")
        models[role] = settings.model_dump(mode="json")
    for ev in config.evaluators:  # a judge evaluator with its own endpoint: no price option
        if config.budget.max_usd > 0 and ev.model and ev.kind == EvaluatorKind.JUDGE \
                and table_price(ev.model, ev.base_url) is None:
            raise ConfigError(f"{source}: budget.max_usd is set but model {ev.model!r} "
                              f"(evaluator {ev.name!r}) has no known price; declare it as "
                              "models.judge with a price and drop the evaluator's base_url "
                              "and model")
    compared = {role: ModelSettings.model_validate(models[role]).compared()
                for role in ("agent", "judge") if role in models}
    digest = hashlib.sha256(json.dumps(compared, sort_keys=True).encode()).hexdigest() \
        if compared else None
    return {"models": models, "models_fingerprint": digest}


def run_settings(run: RunDir, role: str) -> ModelSettings | None:
    """The role's settings as the run pinned them (None: not declared)."""
    data = run.manifest.models.get(role)
    if data is not None:
        return ModelSettings.model_validate(data)
    declared = getattr(run.manifest.config.models, role)
    return None if declared is None else resolve(declared, role, run.manifest.config.models)


def agent_settings(run: RunDir, files: dict[str, bytes]) -> str | None:
    """The agent settings (JSON) for a candidate with ``files``."""
    settings = run_settings(run, "agent")
    return None if settings is None else with_candidate(settings, files).to_json()


def _sides(store: RolloutStore, eval_id: str) -> tuple[set[str], set[str]]:
    try:
        _, found = store.query("SELECT DISTINCT model, model_settings FROM rollouts", eval_id)
    except StoreError:  # parts written before these columns existed: nothing recorded
        return set(), set()
    return ({m for m, _ in found if m}, {s for _, s in found if s})


def comparison_refusal(store: RolloutStore, cand_eval: str, best_eval: str
                       ) -> tuple[str | None, list[str]]:
    """(why the two evaluations may not be compared, the settings the candidate edited)."""
    cand_models, cand_settings = _sides(store, cand_eval)
    best_models, best_settings = _sides(store, best_eval)
    if len(cand_settings) > 1 or len(best_settings) > 1:
        return ("the rows of one evaluation disagree on the model settings", [])
    c = json.loads(next(iter(cand_settings))) if cand_settings else {}
    b = json.loads(next(iter(best_settings))) if best_settings else {}
    changed = differences(c, b)
    edited = set(c.get("edited") or ())
    own = [k for k in changed if k in edited]
    others = [k for k in changed if k not in edited]
    if others:
        return (f"model setting {others[0]} differs between {cand_eval} "
                f"({c.get(others[0])!r}) and {best_eval} ({b.get(others[0])!r})", own)
    if cand_models and best_models and cand_models != best_models and "model" not in own:
        return (f"the endpoint reported model {', '.join(sorted(cand_models))} for "
                f"{cand_eval} but {', '.join(sorted(best_models))} for {best_eval}", own)
    return None, own


def pooled_refusal(store: RolloutStore, candidate_evals: list[str],
                   reference_evals: list[str]) -> str | None:
    """Why evaluations pooled per side may not be used together: each side's must agree, and the
    sides' last ones must pass :func:`comparison_refusal`."""
    for evals in (candidate_evals, reference_evals):
        for other in evals[1:]:
            why, _ = comparison_refusal(store, other, evals[0])
            if why:
                return why
    why, _ = comparison_refusal(store, candidate_evals[-1], reference_evals[-1])
    return why
