"""gepa.optimize through capevolve: the engine evaluates, the run stores, the seal finalizes."""

from __future__ import annotations

import re

import pytest
from fixtures.chat_server import ChatServer, completion
from fixtures.projects import make_project

import capevolve
from capevolve.errors import CandidateError, ConfigError, RunDirError, TestSealError

gepa = pytest.importorskip("gepa", reason="gepa is not installed (pip install '.[gepa]')")
from gepa.utils import MaxCandidateProposalsStopper  # noqa: E402

from capevolve.integrations.gepa import ChatReflectionLM, GEPAAdapter  # noqa: E402


class Qualities:
    """A deterministic reflection model: each answer proposes the next quality in a fenced
    block, as gepa's default instruction prompt asks."""

    def __init__(self, values):
        self.values = list(values)

    def __call__(self, body):
        prompt = body["messages"][-1]["content"]
        assert "```" in prompt  # gepa's prompt shows the current text in a fence
        value = self.values.pop(0) if self.values else 0.9
        return completion(f"Here is the improved instruction:\n```\n{value}\n```",
                          prompt_tokens=300, completion_tokens=20)


@pytest.fixture
def flex_run(tmp_path):
    project = make_project(tmp_path / "proj", 32, quality=0.2, trials=2)
    return capevolve.create_run(project, tmp_path / "run")


@pytest.mark.slow
def test_gepa_optimize_runs_through_the_engine_and_the_seal(flex_run):
    """A few gepa iterations with a scripted reflection LM: every evaluation gepa asked for
    is a stored capevolve evaluation (rows in Parquet, counted by DuckDB), the rollouts
    reported as run are the stored rows (a repeated candidate is never paid twice), the
    best candidate is adopted through the frozen gate and the test split is sealed once."""
    adapter = GEPAAdapter(flex_run, engine="local")
    assert adapter.seed_candidate() == {"quality.txt": "0.2"}
    with ChatServer(default=Qualities([0.95, 0.9, 0.85])) as server:
        lm = ChatReflectionLM(f"base_url={server.base_url},model=reflect,max_tokens=64,"
                              "usd_per_1m_input=1,usd_per_1m_output=1")
        result = gepa.optimize(
            seed_candidate=adapter.seed_candidate(), trainset=adapter.trainset(),
            valset=adapter.valset(), adapter=adapter, reflection_lm=lm,
            reflection_minibatch_size=3, stop_callbacks=[
                MaxCandidateProposalsStopper(3)],
            seed=0, display_progress_bar=False, raise_on_exception=True)
    assert lm.calls >= 1 and lm.total_tokens_in == 300 * lm.calls
    assert lm.cost_usd == pytest.approx(320 * lm.calls / 1e6)
    assert server.requests and all(r["body"]["max_tokens"] == 64 for r in server.requests)
    assert float(result.best_candidate["quality.txt"]) > 0.5

    # every evaluation gepa asked for is a complete capevolve evaluation with stored rows
    eval_ids = sorted({e["eval_id"] for e in adapter.evaluations})
    columns, rows = capevolve.query(
        flex_run, "SELECT eval_id, count(*) FROM rollouts GROUP BY 1 ORDER BY 1")
    stored = dict(rows)
    for record in adapter.evaluations:
        assert record["status"] == "complete"
        assert stored[record["eval_id"]] == record["n_rows"]
    assert set(eval_ids) <= set(stored)
    splits = {e["split"] for e in adapter.evaluations}
    assert splits == {"train", "val"}
    # the rollouts the adapter reported as run are exactly the stored rows: nothing paid twice
    assert sum(e["rollouts_run"] for e in adapter.evaluations) == sum(stored.values())

    adopted = adapter.adopt(result.best_candidate)
    assert adopted["decision"] == "accept", adopted["gate"]
    assert capevolve.open_run(flex_run.root).best_id == adopted["candidate_id"]
    final = capevolve.finalize(flex_run, engine="local", spend_test_ids=True)
    assert final.best_id == adopted["candidate_id"]
    assert (flex_run.root / "seal.json").is_file()
    with pytest.raises(TestSealError):
        capevolve.finalize(flex_run, engine="local", spend_test_ids=True)


def test_evaluate_answers_a_minibatch_from_its_stored_split(flex_run):
    """A train minibatch is scored from the stored train evaluation (made once): scores are
    task means over scored trials, and the second call runs no rollout."""
    adapter = GEPAAdapter(flex_run, engine="local")
    batch = adapter.trainset()[:3]
    first = adapter.evaluate(batch, {"quality.txt": "0.5"}, capture_traces=True)
    again = adapter.evaluate(batch, {"quality.txt": "0.5"}, capture_traces=True)
    assert first.num_metric_calls == len(adapter.trainset()) * 2
    assert again.num_metric_calls == 0 and again.scores == first.scores
    eval_id = first.outputs[0]["eval_id"]
    assert re.fullmatch(r"[A-Za-z0-9_.\-]+", eval_id)
    _, rows = capevolve.query(flex_run, "SELECT task_id, avg(reward) FROM rollouts WHERE "
                              f"eval_id = '{eval_id}' GROUP BY 1")
    means = dict(rows)
    assert first.scores == [pytest.approx(means[t]) for t in batch]
    # a candidate that fails everything: one reflective record per failing trial of the
    # batch, from capevolve's diagnosis, for the component asked for
    failing = adapter.evaluate(batch, {"quality.txt": "0.0"}, capture_traces=True)
    assert failing.scores == [0.0, 0.0, 0.0]
    dataset = adapter.make_reflective_dataset({"quality.txt": "0.0"}, failing,
                                              ["quality.txt"])
    records = dataset["quality.txt"]
    assert len(records) == 3 * 2 and all(r["reward"] == 0.0 for r in records)
    assert {r["Inputs"] for r in records} == {f"do {t}" for t in batch}


def test_test_ids_and_unknown_components_are_refused(flex_run):
    """A batch of test ids never reaches the engine; a component that is not a file of the
    base candidate is a ConfigError, and so is an unknown base a CandidateError."""
    with pytest.raises(CandidateError, match="no such candidate"):
        GEPAAdapter(flex_run, base="cand_999", engine="local")
    adapter = GEPAAdapter(flex_run, engine="local")
    with pytest.raises(RunDirError, match="test belongs to finalize"):
        adapter.evaluate(list(flex_run.splits.test[:2]), adapter.seed_candidate())
    with pytest.raises(ConfigError, match="unknown components"):
        adapter.evaluate(adapter.trainset()[:2], {"../scorer.py": "x"})
    _, rows = capevolve.query(flex_run, "SELECT count(*) FROM rollouts")
    assert rows == [(0,)]


def test_protected_files_are_never_components(tmp_path):
    """A scorer file in the seed is not offered to gepa, and asking for it is refused."""
    project = make_project(tmp_path / "proj", 16, quality=0.2, trials=1)
    (project / "seed" / "scorer_notes.md").write_text("how we grade\n")
    run = capevolve.create_run(project, tmp_path / "run")
    adapter = GEPAAdapter(run, engine="local")
    assert set(adapter.seed_candidate()) == {"quality.txt"}
    with pytest.raises(ConfigError, match="protected paths are never components"):
        GEPAAdapter(run, engine="local", components=["scorer_notes.md"])


@pytest.mark.slow
def test_the_runs_budget_caps_what_gepa_spends(tmp_path):
    """gepa's own metric-call budget is not the run's: with budget.max_metric_calls 40 the
    run stops the evaluation that would pass the cap (an error through gepa, never a
    score), and the rows stored never exceed it."""
    from capevolve.errors import CapevolveError

    project = make_project(tmp_path / "proj", 32, quality=0.2, trials=2,
                           extra="budget: {max_metric_calls: 40}\n")
    run = capevolve.create_run(project, tmp_path / "run")
    adapter = GEPAAdapter(run, engine="local")
    with ChatServer(default=Qualities([0.6, 0.7, 0.8, 0.9])) as server:
        lm = ChatReflectionLM(f"base_url={server.base_url},model=reflect")
        with pytest.raises(CapevolveError, match="max_metric_calls 40"):
            gepa.optimize(seed_candidate=adapter.seed_candidate(), trainset=adapter.trainset(),
                          valset=adapter.valset(), adapter=adapter, reflection_lm=lm,
                          max_metric_calls=10_000, seed=0, raise_on_exception=True)
    _, rows = capevolve.query(run, "SELECT count(*) FROM rollouts")
    assert rows[0][0] <= 40
    assert capevolve.open_run(run.root).spent.metric_calls <= 40
