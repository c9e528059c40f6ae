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

from capevolve_adapters.openai_agent.adapter import AgentSettings, OpenAIRetailAdapter
from capevolve_adapters.openai_agent.client import ClientConfig
from capevolve_adapters.openai_agent.loop import ModelConfig

pytestmark = [pytest.mark.llm, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]


def _adapter(url: str, **model) -> OpenAIRetailAdapter:
    return OpenAIRetailAdapter(AgentSettings(
        client=ClientConfig(base_url=url, timeout_s=60, retries=1, backoff_s=0.5,
                            deadline_s=90),
        model=ModelConfig(model="gemma", **{"max_tokens": 24, "max_turns": 3,
                                            "rollout_wall_s": 90, **model})))


@pytest.fixture(scope="module")
def cancel_task(retail_tasks):
    return next(t for t in retail_tasks.values() if t.metadata["kind"] == "cancel")


def test_a_real_conversation_finishes_within_its_bounds_and_is_scored(
        llama_url, cancel_task, seed_candidate):  # noqa: F811
    """With max_tokens 24 and 3 turns the conversation ends well inside its wall bound;
    the endpoint's usage is the rollout's tokens; no tool call is handled (the scorer sees
    a conversation that did not act), and the score is a score in [0, 1)."""
    adapter = _adapter(llama_url)
    t0 = time.monotonic()
    rollout = adapter.run_target(seed_candidate, cancel_task, trial=0, seed=11)
    took = time.monotonic() - t0
    assert rollout.error is None, rollout.error
    assert rollout.tokens and rollout.tokens > 0 and rollout.cost_usd is None
    assert 1 <= rollout.trace["turns"] <= 3 and took < 90
    assert rollout.tool_calls == []
    score = adapter.score(cancel_task, rollout)
    assert 0.0 <= score.reward < 1.0


def test_a_real_rollout_over_its_token_budget_is_an_error_not_a_score(
        llama_url, cancel_task, seed_candidate):  # noqa: F811
    """The policy prompt alone is hundreds of tokens: a 100-token budget is reached on the
    first call and the rollout is an error naming the bound, with the tokens it spent."""
    rollout = _adapter(llama_url, rollout_tokens=100).run_target(
        seed_candidate, cancel_task, trial=0, seed=11)
    assert rollout.error.startswith("bound reached: rollout token budget 100")
    assert rollout.trace["bound"] == "tokens" and rollout.tokens >= 100
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
        "engine: {kind: local, concurrency: 1, timeout_s: 300, retries: 0}\n")
    for key, value in {"BASE_URL": llama_url, "MODEL": "gemma", "MAX_TOKENS": "48",
                       "MAX_TURNS": "4", "ROLLOUT_WALL_S": "100"}.items():
        monkeypatch.setenv(f"CAPEVOLVE_OPENAI_{key}", value)
    t0 = time.monotonic()
    out = capevolve.start_run(tmp_path, tmp_path / "run", engine="local")
    assert time.monotonic() - t0 < 300
    baseline = out.baseline.to_dict()
    assert baseline["status"] == "complete" and baseline["n_tasks"] == 3
    _, rows = capevolve.query(tmp_path / "run", "SELECT reward, error, tokens FROM rollouts")
    assert len(rows) == 3
    for reward, error, tokens in rows:
        assert (reward is None) != (error is None) and tokens > 0
