"""The OpenAI-compatible agent against a real llama.cpp server (Gemma 3 270M base model).

The model is a base model whose text is nonsense and which never emits a tool call (its
GGUF has no chat template with tool markup): these tests check the protocol and the bounds,
not quality.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from fixtures.real_model import llama_url  # noqa: F401 - the fixture

from capevolve.config_models import ModelConfig, ModelsConfig, RolloutLimits
from capevolve.models import Meter, resolve, scope
from capevolve_adapters.openai_agent.adapter import OpenAIRetailAdapter

pytestmark = [pytest.mark.llm, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]


def _run(url: str, candidate, task, rollout_tokens: int | None = None):
    settings = resolve(ModelConfig(base_url=url, model="gemma", max_tokens=24, retries=1,
                                   backoff_s=0.5, deadline_s=90), "agent",
                       ModelsConfig(rollout=RolloutLimits(max_turns=3,
                                                          max_tokens=rollout_tokens)))
    adapter, meter = OpenAIRetailAdapter(rollout_wall_s=90), Meter()
    with scope(settings, meter):
        return adapter, meter, adapter.run_target(candidate, task, trial=0, seed=11)


@pytest.fixture(scope="module")
def cancel_task(retail_tasks):
    return next(t for t in retail_tasks.values() if t.metadata["kind"] == "cancel")


def test_a_real_conversation_finishes_within_its_bounds_and_is_scored(
        llama_url, cancel_task, seed_candidate):  # noqa: F811
    """With max_tokens 24 and at most 3 turns the conversation ends well inside its wall
    bound (the customer ends it, or the turn bound does, as an error naming it); the
    endpoint's usage is counted on the meter, with no price known."""
    t0 = time.monotonic()
    adapter, meter, rollout = _run(llama_url, seed_candidate, cancel_task)
    took = time.monotonic() - t0
    assert rollout.error is None or rollout.trace["bound"] == "turns", rollout.error
    assert meter.tokens > 0 and meter.cost_usd is None and meter.counts["unknown_attempts"] == 0
    assert 1 <= meter.counts["attempts"] <= 3 and took < 90
    if rollout.error is None:
        assert 0.0 <= adapter.score(cancel_task, rollout).reward <= 1.0


def test_a_real_rollout_over_its_token_budget_is_an_error_not_a_score(
        llama_url, cancel_task, seed_candidate):  # noqa: F811
    """The policy prompt alone is hundreds of tokens: a 100-token budget is reached on the
    first call and the rollout is an error naming the bound, with the tokens it spent."""
    _, meter, rollout = _run(llama_url, seed_candidate, cancel_task, rollout_tokens=100)
    assert rollout.error.startswith("bound reached:") and "of 100" in rollout.error
    assert rollout.trace["bound"] == "tokens" and meter.tokens >= 100
    assert not rollout.transient


def test_capevolve_run_against_the_real_model_finishes(
        llama_url, tmp_path, monkeypatch, retail_tasks):  # noqa: F811
    """`capevolve run` (check, splits, baseline on val) of 3 retail tasks x 1 trial with the
    real model completes: every rollout is bounded, so the evaluation finishes and each of
    its stored rows is either a reward or a recorded error, with the model's tokens."""
    import json
    import shutil

    import capevolve

    repo = REPO
    ids = sorted(retail_tasks)
    (tmp_path / "splits.json").write_text(json.dumps(
        {"val": ids[:3], "train": ids[3:60], "test": ids[60:]}))
    shutil.copy(repo / "benchmarks/retail/openai/adapter.py", tmp_path / "adapter.py")
    shutil.copytree(repo / "benchmarks/retail/seed_capability", tmp_path / "seed")
    (tmp_path / "capevolve.yaml").write_text(
        "name: retail-real\nadapter: adapter.py:OpenAIRetailAdapter\ncapability_path: seed\n"
        "splits: {ids_file: splits.json}\nnum_trials: 1\n"
        "engine: {kind: local, concurrency: 1, timeout_s: 300, retries: 0}\n"
        f"models: {{agent: {{base_url: '{llama_url}', model: gemma, max_tokens: 48}},\n"
        "         rollout: {max_turns: 4}}\n")
    t0 = time.monotonic()
    out = capevolve.start_run(tmp_path, tmp_path / "run", engine="local")
    assert time.monotonic() - t0 < 300
    baseline = out.baseline.to_dict()
    assert baseline["status"] == "complete" and baseline["n_tasks"] == 3
    _, rows = capevolve.query(tmp_path / "run", "SELECT reward, error, tokens, model, "
                              "model_settings, unknown_attempts FROM rollouts")
    assert len(rows) == 3
    for reward, error, tokens, model, settings, unknown in rows:
        assert (reward is None) != (error is None) and tokens > 0
        assert model and json.loads(settings)["max_tokens"] == 48 and unknown == 0
