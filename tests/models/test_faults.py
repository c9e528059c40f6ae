"""Faults of a real provider, injected by a proxy on a real socket in front of a scripted
server: what is stored, what is counted and what the user is told."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli.cli_support import invoke, one_json
from fixtures.chat_server import ChatServer, completion
from fixtures.fault_proxy import FaultProxy

import capevolve

pytestmark = pytest.mark.slow
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "model_adapter.py"


def _yes(body):
    return completion("yes", prompt_tokens=30 + len(json.dumps(body)) % 17, completion_tokens=3)


def _project(root: Path, url: str, retries: int = 3, engine_retries: int = 0) -> Path:
    root.mkdir()
    shutil.copy(FIXTURE, root / "adapter.py")
    (root / "seed").mkdir()
    (root / "seed" / "prompt.txt").write_text("say yes")
    (root / "capevolve.yaml").write_text(
        "name: m\nadapter: adapter.py:ModelAdapter\ncapability_path: seed\nnum_trials: 1\n"
        f"engine: {{kind: local, concurrency: 2, timeout_s: 30, retries: {engine_retries}}}\n"
        f"models:\n  agent: {{base_url: '{url}', model: m, max_tokens: 16, retries: {retries},"
        " backoff_s: 0.01, price: {input: 1.0, output: 2.0}}\n  breaker: {failures: 3}\n")
    return root


def _candidate(root: Path) -> Path:
    root.mkdir()
    (root / "prompt.txt").write_text("say yes now")
    return root


def test_tokens_served_equal_tokens_recorded_across_retries(tmp_path):
    """With 429s and 500s injected, every token the server served is recorded: the rows
    (retries included) plus the check's probe; each 500 is an attempt of unknown tokens,
    each 429 a rejected one; nothing is retried at the unit level."""
    faults = ["429", None, "500", None, "500", "429", None, None, "500", None] * 3
    with ChatServer(default=_yes) as server, \
            FaultProxy(server.base_url, faults) as proxy:
        run = tmp_path / "run"
        capevolve.start_run(_project(tmp_path / "p", proxy.base_url), run, engine="local")
        capevolve.evaluate(run, _candidate(tmp_path / "c"), "val", engine="local")
        served = proxy.served_tokens
        injected = [r["fault"] for r in proxy.requests]
    _, rows = capevolve.query(run, "SELECT sum(tokens), sum(unknown_attempts), sum(attempts), "
                                   "count(*), count(error) FROM rollouts")
    tokens, unknown, attempts, n, errors = rows[0]
    check = json.loads((run / "run.json").read_text())["models_check"]
    assert errors == 0 and attempts == n
    assert tokens + check["prompt_tokens"] + check["completion_tokens"] == served
    assert unknown + check["unknown_attempts"] == injected.count("500")
    status = capevolve.status(run).to_dict()
    agent = status["model_spend"]["agent"]
    assert agent["tokens"] == tokens and agent["partial"]  # unknown attempts: a lower bound
    assert status["model_spend"]["check"]["tokens"] > 0


def test_an_exhausted_quota_stops_the_evaluation_and_exits_1(tmp_path):
    """429 on every call: the breaker stops dispatching after a bounded number of calls;
    the evaluation is incomplete with the reason; `capevolve evaluate` exits 1 naming it."""
    with ChatServer(default=_yes) as server, FaultProxy(server.base_url) as proxy:
        run = tmp_path / "run"
        capevolve.start_run(_project(tmp_path / "p", proxy.base_url, retries=2,
                                     engine_retries=1), run, engine="local")
        before = len(proxy.requests)
        proxy.default = "429"
        result = invoke("evaluate", "--run-dir", run, "--candidate", _candidate(tmp_path / "c"),
                        "--split", "val", "--engine", "local", "--json")
        calls = len(proxy.requests) - before
    record = one_json(result, exit_code=1)
    assert record["status"] == "incomplete"
    assert "circuit breaker: 3 rollouts in a row failed with model failure quota" \
        in result.stderr
    per_rollout = (1 + 2) * (1 + 1)  # client attempts x engine attempts
    assert calls <= (3 + 2) * per_rollout  # the breaker's 3, plus the 2 slots in flight
    _, rows = capevolve.query(run, "SELECT DISTINCT model_failure FROM rollouts "
                                   "WHERE error IS NOT NULL")
    assert rows == [("quota",)]


def test_a_context_length_400_is_a_recorded_outcome(tmp_path):
    """The provider's context-length 400 is a row with that failure, not retried."""
    with ChatServer(default=_yes) as server, FaultProxy(server.base_url) as proxy:
        run = tmp_path / "run"
        capevolve.start_run(_project(tmp_path / "p", proxy.base_url), run, engine="local")
        proxy.default = "context_400"
        before = len(proxy.requests)
        record = capevolve.evaluate(run, _candidate(tmp_path / "c"), "val",
                                    engine="local").to_dict()
        calls = len(proxy.requests) - before
    assert calls == record["n_tasks"]  # one call per rollout: never retried
    _, rows = capevolve.query(run, f"SELECT DISTINCT model_failure, error FROM rollouts "
                                   f"WHERE eval_id = '{record['eval_id']}'")
    assert {r[0] for r in rows} == {"context_length"}
    assert "exceeds the available context size" in rows[0][1]
