"""The optimize loop with the llm proposer, against a scripted chat server on a real socket:
a strict answer is a child that goes through the full-val gate, garbage is a no_change that
pays for no rollout, the proposer's tokens are optimizer spend, and no test data reaches the
endpoint."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.chat_server import ChatServer, Sleep, completion
from fixtures.loops import events, ledger, loop_project, loop_run, raw_units
from fixtures.projects import clean_env

import capevolve
from capevolve._loop.run import create_run

CLI = [str(Path(sys.executable).parent / "capevolve")]


def _answer(text: str) -> dict:
    return completion(f"<improved_file>\n{text}\n</improved_file>", prompt_tokens=200,
                      completion_tokens=20)


def _spec(server: ChatServer) -> str:
    return (f"llm:base_url={server.base_url},model=m,max_tokens=64,retries=0,"
            "usd_per_1m_input=1,usd_per_1m_output=1")


@pytest.mark.slow
def test_llm_proposals_go_through_the_gate_and_garbage_is_never_evaluated(tmp_path):
    """Iteration 1's strict answer is a child gated on full val and accepted; iteration 2's
    garbage and iteration 3's cut answer are no_change iterations with the raw answer in
    the ledger and no child evaluated; every request's prompt is free of test task inputs."""
    run = loop_run(tmp_path, quality=0.2)
    cut = completion("<improved_file>\n0.9", finish_reason="length", completion_tokens=64)
    with ChatServer([_answer("0.95"), completion("Sure! Quality is great."), cut]) as server:
        result = capevolve.optimize_run(run.root, engine="local", algorithm="hill-climb",
                                    proposer=_spec(server), iterations=3).to_dict()
    rows = result["iterations"]
    assert [r["outcome"] for r in rows] == ["accept", "no_change", "no_change"]
    assert result["best_id"] == rows[0]["child"]
    stored = ledger(run.root)
    assert stored[1]["detail"]["raw_answer"] == "Sure! Quality is great."
    assert stored[1]["reasons"][0].startswith("unparseable answer")
    assert "max_tokens=64" in stored[2]["reasons"][0]
    assert [r["spend"]["tokens"] for r in stored] == [220, 60, 114]
    assert stored[0]["spend"]["cost_usd"] == pytest.approx(220 / 1e6)
    # a no_change evaluates no child: iteration 2 paid only for its new parent's train
    # diagnosis, iteration 3 (same parent) for nothing
    assert stored[2]["metric_calls"] == 0
    val_evals = {e for e, _, _ in raw_units(run.root) if e.startswith("val__")}
    child = rows[0]["child"]  # its gate and the confirmation's fresh trials of both sides
    assert val_evals == {"val__seed__k2", f"val__{child}__k2", f"val__{child}__k4__confirm_t2",
                         "val__seed__k4__confirm_t2"}
    # what the model saw: train diagnosis only, never a test task's input
    sent = json.dumps([r["body"] for r in server.requests])
    assert "do " in sent  # train inputs are shown
    for task_id in run.splits.test:
        assert f"do {task_id}" not in sent


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_cli_unreachable_endpoint_is_one_line_exit_2_before_any_rollout(tmp_path):
    """Nothing listens at the endpoint: exit 2, one `error:` line naming it, no traceback,
    and not one rollout stored (bad options: tests/optimize/proposers/test_llm.py)."""
    spec, fragment = "llm:base_url=http://127.0.0.1:{port}/v1,model=m", "unreachable"
    run = loop_run(tmp_path)
    env = {k: v for k, v in clean_env().items() if not k.startswith("CAPEVOLVE_LLM_")}
    done = subprocess.run([*CLI, "optimize", "--run-dir", str(run.root), "--algorithm",
                           "hill-climb", "--proposer",
                           spec.format(port=_closed_port()), "--engine", "local"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and fragment in lines[0]
    assert "Traceback" not in done.stderr
    assert raw_units(run.root) == []
    assert not list(Path(run.root, "evals").glob("*.json"))


@pytest.mark.slow
def test_models_proposer_drives_llm_and_every_attempt_is_optimizer_spend(tmp_path):
    """`--proposer llm` alone takes the run's pinned models.proposer (its model names the
    proposer in the ledger); a proposal whose one attempt timed out is still optimizer
    spend (cost unrecorded), so status shows the proposer's cost as partial."""
    with ChatServer([Sleep(2.0, _answer("0.95")), completion("no block here")]) as server:
        extra = ('stop_condition: "12 iterations"\nmodels:\n  proposer: {base_url: "'
                 f'{server.base_url}", model: pinned-m, max_tokens: 64, retries: 0, '
                 'deadline_s: 0.5, price: {input: 1, output: 1}}\n')
        run = create_run(loop_project(tmp_path / "proj", extra=extra), tmp_path / "run")
        capevolve.optimize_run(run.root, engine="local", algorithm="hill-climb",
                               proposer="llm", iterations=2)
    stored = ledger(run.root)
    assert [r["proposer"] for r in stored] == ["llm:pinned-m", "llm:pinned-m"]
    assert "unavailable after 1 attempts within 0.5s" in stored[0]["reasons"][0]
    assert stored[0]["detail"]["usage"]["unknown_attempts"] == 1
    assert stored[1]["spend"]["tokens"] == 60
    spend = [e for e in events(run.root, "spend") if e.get("role") == "optimizer"]
    assert [(e["tokens"], e["cost_unrecorded"]) for e in spend] == [(0, 1), (60, 0)]
    proposer = capevolve.status(run.root).to_dict()["model_spend"]["proposer"]
    assert proposer["tokens"] == 60 and proposer["partial"] is True
    posts = [r["body"] for r in server.requests if r["method"] == "POST"]
    assert [(b["model"], b["max_tokens"]) for b in posts] == [("pinned-m", 64)] * 2
