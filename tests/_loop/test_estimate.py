"""The cost of a configured run, known before it is spent; optimize refuses a run whose
lower bound already passes budget.max_usd (a scripted endpoint on a real socket)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cli.cli_support import invoke, one_json
from fixtures.chat_server import ChatServer, completion

import capevolve

pytestmark = pytest.mark.slow
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "model_adapter.py"


def _project(root: Path, url: str, max_usd: float) -> Path:
    root.mkdir()
    shutil.copy(FIXTURE, root / "adapter.py")
    (root / "seed").mkdir()
    (root / "seed" / "prompt.txt").write_text("say yes")
    (root / "capevolve.yaml").write_text(
        "name: m\nadapter: adapter.py:ModelAdapter\ncapability_path: seed\nnum_trials: 1\n"
        "splits: {train: 0.5, val: 0.25, test: 0.25, seed: 0}\n"
        f"budget: {{max_iterations: 5, max_usd: {max_usd}}}\n"
        "engine: {kind: local, concurrency: 2, timeout_s: 30, retries: 0}\n"
        f"models:\n  agent: {{base_url: '{url}', model: m, max_tokens: 16,"
        " price: {input: 1.0, output: 2.0}}\n")
    return root


def test_the_estimate_is_the_planned_rollouts_times_the_stored_ones(tmp_path):
    """After the baseline: low = one iteration's val evaluation + finalize (best and seed
    on test), high = every iteration's + finalize; one rollout costs what it cost."""
    reply = completion("yes", prompt_tokens=40, completion_tokens=2)
    with ChatServer(default=reply) as server:
        run = tmp_path / "run"
        capevolve.start_run(_project(tmp_path / "p", server.base_url, 5.0), run,
                            engine="local")
    found = capevolve.estimate(run).to_dict()
    val, test = 3, 3  # 12 tasks: a quarter each
    assert found["rollouts"] == {"low": val + 2 * test, "high": 5 * val + 2 * test}
    assert found["per_rollout"]["source"] == "stored rollouts"
    assert found["per_rollout"]["tokens"] == {"low": 42, "high": 42}
    one = (40 * 1.0 + 2 * 2.0) / 1e6
    assert found["usd"]["low"] == pytest.approx(9 * one)
    assert found["usd"]["high"] == pytest.approx(21 * one)
    assert one_json(invoke("estimate", "--run-dir", run, "--iterations", "2", "--json")
                    )["rollouts"] == {"low": 9, "high": 12}


def test_optimize_refuses_when_the_lower_bound_passes_max_usd(tmp_path):
    """A cap the estimate's lower bound passes: optimize prints the estimate and refuses
    before any proposal or rollout."""
    reply = completion("yes", prompt_tokens=40, completion_tokens=2)
    with ChatServer(default=reply) as server:
        run = tmp_path / "run"
        capevolve.start_run(_project(tmp_path / "p", server.base_url, 0.0002), run,
                            engine="local")
        before = len(server.requests)
        result = invoke("optimize", "--run-dir", run, "--algorithm", "hill-climb",
                        "--proposer", f"scripted:{tmp_path}", "--engine", "local")
        after = len(server.requests)
    assert result.exit_code == 2 and after == before
    assert "estimate: 3 .. 15 rollouts" in result.stderr  # no finalize asked
    assert "optimize refused: the estimate's lower bound" in result.stderr
    assert "passes budget.max_usd $0.0002" in result.stderr
