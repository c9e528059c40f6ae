"""A judge evaluator with no endpoint of its own uses the project's models.judge, its
calls are the run's spend, and budget.max_usd caps them (a scripted judge on a socket)."""

import re
import shutil
import socket
from pathlib import Path

import pytest
from fixtures.chat_server import ChatServer, Reply, completion

from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import create_run
from capevolve._store.rollouts.query import RolloutStore
from capevolve.errors import BudgetError, ConfigError

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "benchmarks" / "dataset_qa"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _project(tmp_path: Path, models: str, budget: str = "{max_iterations: 10}") -> Path:
    root = tmp_path / "qa"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".capevolve", "__pycache__"))
    config = root / "capevolve.yaml"
    text = re.sub(r"\n    base_url: .*\n    model: .*\n    timeout_s: .*", "", config.read_text())
    text = text.replace("budget: {max_iterations: 10}", f"budget: {budget}")
    config.write_text(text + models)
    return root


def _verdict(body: dict) -> dict:
    return completion('{"score": 1, "justification": "same city"}', prompt_tokens=500,
                      completion_tokens=100)


@pytest.mark.slow
def test_models_judge_is_the_default_and_its_spend_is_capped_by_max_usd(tmp_path):
    """The evaluator names no model: models.judge answers (its model, bound and schema
    sent). Each row's judge tokens and cost are the run's spend, so max_usd stops the
    evaluation before it passes the cap, and the next evaluation is refused."""
    port = _port()
    models = (f'models:\n  judge: {{base_url: "http://127.0.0.1:{port}/v1", model: '
              'pinned-judge, max_tokens: 128, price: {input: 100, output: 100}}\n')
    with ChatServer(default=_verdict, port=port) as server:
        project = _project(tmp_path, models, "{max_iterations: 10, max_usd: 0.5}")
        run = create_run(project, tmp_path / "run")
        record = evaluate(run, project / "improved_capability", "train")
        posts = [r["body"] for r in server.requests if r["method"] == "POST"]
        assert posts and {(b["model"], b["max_tokens"]) for b in posts} == {("pinned-judge", 128)}
        assert all(b["response_format"]["json_schema"]["name"] == "verdict" for b in posts)
        _, rows = RolloutStore(run.layout).query(
            "SELECT count(*), sum(judge_tokens), sum(judge_cost_usd), "
            "coalesce(sum(tokens), 0) FROM rollouts")
        n, judge_tokens, judge_cost, agent_tokens = rows[0]
        check = run.manifest.models_check  # the check's probe scored one rollout twice
        assert check["attempts"] == 2 and check["prompt_tokens"] == 1000
        assert judge_tokens + 1200 == 600 * len(posts)  # every served token is recorded
        assert judge_cost == pytest.approx(0.06 * (len(posts) - 2))
        spent = run.spent
        assert spent.tokens == agent_tokens + judge_tokens
        assert spent.cost_usd == pytest.approx(judge_cost)
        assert record["status"] == "incomplete" and "max_usd" in record["incomplete_reason"]
        assert n < record["n_tasks"] * record["n_trials"]  # stopped short of the split
        with pytest.raises(BudgetError, match=r"cost \$"):
            evaluate(run, project / "improved_capability", "val")


def test_a_judge_needs_a_model_and_an_unpriced_own_judge_is_refused_under_max_usd(tmp_path):
    """No evaluator model and no models.judge is one config line; an evaluator's own
    judge model of unknown price under max_usd is refused at run, naming the model."""
    with pytest.raises(ConfigError, match="declare models.judge"):
        create_run(_project(tmp_path / "a", ""), tmp_path / "a" / "run")
    project = tmp_path / "b" / "qa"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".capevolve",
                                                                    "__pycache__"))
    config = project / "capevolve.yaml"
    config.write_text(config.read_text().replace("budget: {max_iterations: 10}",
                                                 "budget: {max_iterations: 10, max_usd: 5}"))
    with pytest.raises(ConfigError, match="'scripted-judge' \\(evaluator 'judge'\\) has no "
                                          "known price"):
        create_run(project, tmp_path / "b" / "run")


@pytest.mark.slow
def test_an_endpoint_that_refuses_the_schema_gets_the_prompt_only_form(tmp_path):
    """A 400 naming response_format is resent at once without it (not a retry, one
    rejected attempt) and never sent that endpoint again."""
    from capevolve.config import EvaluatorConfig
    from capevolve.datasets.judge import Judge

    refusal = Reply(400, {"error": {"message": "response_format json_schema is not "
                                               "supported"}})
    with ChatServer([refusal, _verdict({}), _verdict({})]) as server:
        ev = EvaluatorConfig(name="j", kind="judge", rubric="same city", model="m",
                             base_url=server.base_url)
        judge = Judge(ev)
        assert judge.score("q", "Oslo", "Oslo") == (1.0, "same city")
        assert judge.score("q", "Oslo", "Oslo") == (1.0, "same city")
    sent = [("response_format" in r["body"]) for r in server.requests]
    assert sent == [True, False, False]
