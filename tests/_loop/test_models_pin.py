"""Model settings pinned in the run and recorded on every row; the gate compares only
evaluations made with the same model (a scripted endpoint on a real socket)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fixtures.chat_server import ChatServer, completion

import capevolve
from capevolve.errors import ConfigError, GateError

pytestmark = pytest.mark.slow
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "model_adapter.py"


class _Endpoint:
    """Answers yes, reporting ``served`` as the model (changeable mid-test)."""

    def __init__(self) -> None:
        self.served = "served-m"

    def __call__(self, body):
        reply = completion("yes", prompt_tokens=40, completion_tokens=2)
        return {**reply, "model": self.served}


def _project(root: Path, url: str, extra: str = "") -> Path:
    root.mkdir()
    shutil.copy(FIXTURE, root / "adapter.py")
    (root / "seed").mkdir()
    (root / "seed" / "prompt.txt").write_text("say yes")
    (root / "capevolve.yaml").write_text(
        "name: m\nadapter: adapter.py:ModelAdapter\ncapability_path: seed\nnum_trials: 1\n"
        "engine: {kind: local, concurrency: 4, timeout_s: 20, retries: 0}\n"
        f"models:\n  agent: {{base_url: '{url}', model: m, temperature: 0.2, max_tokens: 16,"
        " retries: 0, price: {input: 1.0, output: 2.0}}\n" + extra)
    return root


def _candidate(root: Path, model_yaml: str | None = None) -> Path:
    root.mkdir()
    (root / "prompt.txt").write_text("say yes please")
    if model_yaml is not None:
        (root / "model.yaml").write_text(model_yaml)
    return root


def test_rows_record_the_model_settings_and_every_token(tmp_path):
    """Each row holds the model the endpoint reported, the pinned settings, the meter's
    usage, and tokens and cost equal to what the server reported; run.json pins them."""
    endpoint = _Endpoint()
    with ChatServer(default=endpoint) as server:
        project = _project(tmp_path / "p", server.base_url)
        out = capevolve.start_run(project, tmp_path / "run", engine="local").to_dict()
        posts = [r for r in server.requests if r["method"] == "POST"]
    assert out["baseline"]["status"] == "complete"
    _, rows = capevolve.query(tmp_path / "run", "SELECT model, model_settings, usage, tokens, "
                              "cost_usd, unknown_attempts FROM rollouts")
    assert len(rows) == len(posts) - 1 == out["baseline"]["n_tasks"]  # + check's probe
    for model, settings, usage, tokens, cost, unknown in rows:
        assert model == "served-m" and unknown == 0 and tokens == 42
        assert cost == pytest.approx((40 * 1.0 + 2 * 2.0) / 1e6)
        pinned = json.loads(settings)
        assert (pinned["model"], pinned["temperature"], pinned["max_tokens"]) == ("m", 0.2, 16)
        assert json.loads(usage)["attempts"] == 1
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert manifest["models"]["agent"]["price"] == {"input": 1.0, "output": 2.0}
    assert manifest["models_fingerprint"]


def test_the_gate_refuses_a_model_the_endpoint_swapped(tmp_path):
    """The endpoint reports another model for the candidate's rollouts: the gate refuses,
    in one line naming both models."""
    endpoint = _Endpoint()
    with ChatServer(default=endpoint) as server:
        run = tmp_path / "run"
        capevolve.start_run(_project(tmp_path / "p", server.base_url), run, engine="local")
        endpoint.served = "cheaper-model"
        record = capevolve.evaluate(run, _candidate(tmp_path / "c"), "val",
                                    engine="local").to_dict()
    with pytest.raises(GateError, match="reported model cheaper-model .* but served-m"):
        capevolve.gate(run, record["candidate_id"])


def test_a_model_setting_the_candidate_chooses_is_its_edit(tmp_path):
    """A candidate's model.yaml sets the temperature: its rows record it, and the gate
    decides, saying the model change is part of the candidate's edit."""
    with ChatServer(default=_Endpoint()) as server:
        run = tmp_path / "run"
        capevolve.start_run(_project(tmp_path / "p", server.base_url), run, engine="local")
        record = capevolve.evaluate(run, _candidate(tmp_path / "c", "temperature: 0.9\n"),
                                    "val", engine="local").to_dict()
        hot = [r["body"]["temperature"] for r in server.requests[-record["n_tasks"]:]]
    assert hot == [0.9] * record["n_tasks"]
    gate = capevolve.gate(run, record["candidate_id"]).to_dict()
    assert any("model.yaml changes the agent model's temperature" in r for r in gate["reasons"])


def test_a_candidate_may_not_move_the_endpoint(tmp_path):
    """model.yaml may not set base_url: one line naming the key, nothing evaluated."""
    with ChatServer(default=_Endpoint()) as server:
        run = tmp_path / "run"
        capevolve.start_run(_project(tmp_path / "p", server.base_url), run, engine="local")
        with pytest.raises(ConfigError, match="model.yaml: base_url may not be set"):
            capevolve.evaluate(run, _candidate(tmp_path / "c", "base_url: http://x/v1\n"),
                               "val", engine="local")


def test_max_usd_with_an_unknown_price_is_refused_at_run(tmp_path):
    """budget.max_usd with a model the price table does not know and no price in config
    is refused at run, naming the model; no run dir is made."""
    project = _project(tmp_path / "p", "http://127.0.0.1:9/v1", "budget: {max_usd: 5}\n")
    text = (project / "capevolve.yaml").read_text().replace(
        ", price: {input: 1.0, output: 2.0}", "")
    (project / "capevolve.yaml").write_text(text)
    with pytest.raises(ConfigError, match="model 'm' \\(models.agent\\) has no known price"):
        capevolve.create_run(project, tmp_path / "run")
    assert not (tmp_path / "run" / "run.json").exists()


class _Picky(_Endpoint):
    """Says yes only to a prompt that says please; reports ``served``, or ``swapped`` for
    the polite prompts when set."""

    def __init__(self) -> None:
        super().__init__()
        self.swapped: str | None = None

    def __call__(self, body):
        polite = "please" in body["messages"][-1]["content"]
        reply = completion("yes" if polite else "no", prompt_tokens=40, completion_tokens=2)
        return {**reply, "model": self.swapped if polite and self.swapped else self.served}


def test_confirm_and_finalize_compare_the_model_as_the_gate_does(tmp_path):
    """After an accept, the endpoint swaps its model: confirm refuses to pool the new
    trials with the old ones, naming both models; finalize's test comparison of two
    evaluations that report different models is not measured, and says why."""
    endpoint = _Picky()
    with ChatServer(default=endpoint) as server:
        run = tmp_path / "run"
        capevolve.start_run(_project(tmp_path / "p", server.base_url), run, engine="local")
        record = capevolve.evaluate(run, _candidate(tmp_path / "c"), "val",
                                    engine="local").to_dict()
        gate = capevolve.gate(run, record["candidate_id"], engine="local").to_dict()
        assert gate["decision"] == "accept", gate["reasons"]
        capevolve.accept(run, record["candidate_id"])
        endpoint.served = "other-m"
        with pytest.raises(GateError, match="confirm refused: the endpoint reported model "
                                            "other-m .* but served-m"):
            capevolve.confirm(run, record["candidate_id"], trials=1, engine="local")
        endpoint.served, endpoint.swapped = "served-m", "swapped-m"
        final = capevolve.finalize(run, engine="local").to_dict()
    assert final["verdict"] == "not_measured" and final["delta"] is None
    assert any("not comparable: the endpoint reported model swapped-m" in m
               for m in final["missing"]), final["missing"]
