"""The llm proposer against a real llama.cpp server (Gemma 3 270M base: nonsense text)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from fixtures.real_model import llama_url  # noqa: F401 - the fixture

from capevolve.optimize.proposers.base import ProposalContext, ProposerConfig
from capevolve.optimize.proposers.registry import build_proposer

pytestmark = [pytest.mark.llm, pytest.mark.slow]

POLICY = "# Policy\n\nConfirm before cancelling an order. Answer politely.\n"


def _ctx(tmp_path: Path) -> ProposalContext:
    parent, work = tmp_path / "parent", tmp_path / "work"
    for root in (parent, work):
        root.mkdir(parents=True)
        (root / "policy.md").write_text(POLICY)
    diagnosis = {"split": "train", "clusters": [], "reflective_dataset": [
        {"task_id": "t1", "Inputs": "Cancel order #12", "Generated Outputs": "Done.",
         "Feedback": "no cancel_order call was made", "cluster": "x"}]}
    return ProposalContext(
        run_dir=tmp_path, run_id="r", iteration=1, parent_id="seed", parent_dir=parent,
        workdir=work, editable=(), protected=(), files=("policy.md",), diagnosis=diagnosis,
        ledger=(), instructions="General edits only.", seed=3)


def test_a_real_model_answer_is_parsed_strictly_and_its_tokens_are_spend(
        llama_url, tmp_path):  # noqa: F811
    """Through the registry, probe included, asked in the prompt only: the base model's
    answer is not one strict <improved_file> block, so the proposal is a no_change with
    the raw answer stored and the file untouched (never a child to score); the reported
    tokens are optimizer spend and max_tokens bounds the call."""
    proposer = build_proposer(f"llm:base_url={llama_url},model=gemma,temperature=0,"
                              "max_tokens=48,timeout_s=120,retries=1,structured=false",
                              ProposerConfig(project_dir=tmp_path))
    t0 = time.monotonic()
    proposal = proposer.propose(_ctx(tmp_path))
    took = time.monotonic() - t0
    assert not proposal.changed, proposal.detail
    assert proposal.blocker.startswith("unparseable answer")
    assert isinstance(proposal.detail["raw_answer"], str)
    assert proposal.detail["finish_reason"] in ("length", "stop")
    assert (tmp_path / "work" / "policy.md").read_text() == POLICY
    assert proposal.spend.tokens > 0 and proposal.spend.cost_usd is None
    assert took < 120


def test_the_answer_schema_makes_the_real_model_answer_parse(llama_url, tmp_path):  # noqa: F811
    """With the answer's JSON schema (the default), llama.cpp constrains the answer: the
    270M base model's text arrives as {"improved_file": ...} and is written into the
    working copy as the child (whatever its quality: the gate decides that)."""
    proposer = build_proposer(f"llm:base_url={llama_url},model=gemma,temperature=0,"
                              "max_tokens=200,timeout_s=300,retries=1",
                              ProposerConfig(project_dir=tmp_path))
    proposal = proposer.propose(_ctx(tmp_path))
    assert proposal.detail["finish_reason"] == "stop", proposal.detail
    assert proposal.changed and proposal.blocker is None
    assert (tmp_path / "work" / "policy.md").read_text() != POLICY


def test_the_loop_with_a_real_model_records_garbage_as_no_change(
        llama_url, tmp_path):  # noqa: F811
    """`capevolve optimize` with the llm proposer on the real server: the base model's
    nonsense never becomes a child, so no iteration is evaluated on val or gated, and each
    ledger row keeps the raw answer and the tokens the endpoint reported."""
    from fixtures.loops import ledger, loop_run, raw_units

    import capevolve

    run = loop_run(tmp_path)
    result = capevolve.optimize_run(
        run.root, engine="local", algorithm="hill-climb", iterations=2,
        proposer=f"llm:base_url={llama_url},model=gemma,temperature=0,max_tokens=48,"
                 "timeout_s=120,retries=1,structured=false").to_dict()
    assert [r["outcome"] for r in result["iterations"]] == ["no_change", "no_change"]
    assert result["best_id"] == "seed"
    for row in ledger(run.root):
        assert row["child_id"] is None and row["gate"] is None
        assert isinstance(row["detail"]["raw_answer"], str) and row["spend"]["tokens"] > 0
    assert {e for e, _, _ in raw_units(run.root) if e.startswith("val__")} == {"val__seed__k2"}
