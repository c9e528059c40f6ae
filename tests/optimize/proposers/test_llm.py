"""The llm proposer against a scripted chat-completions server on a real socket."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest
from fixtures.chat_server import ChatServer, Drop, Raw, Reply, Sleep, completion

from capevolve.config_models import ModelConfig, PriceConfig
from capevolve.errors import ConfigError
from capevolve.models import ModelSettings, resolve
from capevolve.optimize.proposers.base import ProposalContext, ProposerConfig
from capevolve.optimize.proposers.llm import build
from capevolve.optimize.proposers.registry import build_proposer
from capevolve.records._optimize import DiffStat, IterationRecord, Outcome

POLICY = "# Policy\n\nAnswer politely.\n"
TOOLS = "def cancel_order(order_id):\n    return order_id\n"
SECRET = "GOLD-7731"


def _diagnosis(split: str = "train") -> dict:
    entries = [{"task_id": f"t{i}", "trial": 0, "Inputs": f"cancel order #{i}",
                "Generated Outputs": "Done!", "Feedback": f"no cancel_order call for {i}",
                "cluster": "missing cancel_order call", "reward": 0.0} for i in range(5)]
    entries.append({"task_id": "t9", "trial": 0, "Inputs": "other", "Generated Outputs": "x",
                    "Feedback": "other problem", "cluster": "other", "reward": 0.0})
    return {"split": split, "tag": "seed",
            "clusters": [{"signature": "missing cancel_order call", "tools": ["cancel_order"],
                          "tasks": ["t0", "t1", "t2", "t3", "t4"], "size": 5},
                         {"signature": "other", "tools": [], "tasks": ["t9"], "size": 1}],
            "reflective_dataset": entries}


def _ctx(tmp_path: Path, *, iteration: int = 1, diagnosis: dict | None = None,
         ledger: tuple = (), focus: str | None = None, extra: dict | None = None
         ) -> ProposalContext:
    parent, work = tmp_path / "parent", tmp_path / "work"
    files = {"policy.md": POLICY, "tools.py": TOOLS, **(extra or {})}
    for root in (parent, work):
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
    return ProposalContext(
        run_dir=tmp_path / "run", run_id="r", iteration=iteration, parent_id="seed",
        parent_dir=parent, workdir=work, editable=("system-prompt",), protected=(),
        files=tuple(sorted(files)), diagnosis=_diagnosis() if diagnosis is None else diagnosis,
        ledger=ledger, instructions="General edits only.", focus=focus, seed=7)


def _proposer(server: ChatServer, extra: str = "", retries: int = 2, **env: str):
    options = (f"base_url={server.base_url},model=m1,temperature=0.2,max_tokens=300,"
               f"retries={retries},backoff_s=0.01,timeout_s=2,usd_per_1m_input=1,"
               f"usd_per_1m_output=2{extra}")
    return build(options, ProposerConfig(project_dir=Path("."), env=env))


def _answer(text: str) -> dict:
    return completion(f"Here it is.\n<improved_file>\n{text}</improved_file>\n",
                      prompt_tokens=400, completion_tokens=100)


def test_strict_answer_rewrites_the_file_the_cluster_points_at(tmp_path):
    """The cluster names cancel_order, so tools.py is rewritten; the request carries the
    bounds, the file and the cluster's examples; spend is the reported usage and its cost."""
    new_tools = TOOLS + "# confirm before cancelling\n"
    with ChatServer([_answer(new_tools)]) as server:
        proposal = _proposer(server, OPENAI_API_KEY="sk-1").propose(_ctx(tmp_path))
    assert proposal.changed and proposal.blocker is None and proposal.focus == "tools.py"
    assert (tmp_path / "work" / "tools.py").read_text() == new_tools
    assert (tmp_path / "work" / "policy.md").read_text() == POLICY
    assert proposal.spend.tokens == 500
    assert proposal.spend.cost_usd == pytest.approx((400 * 1 + 100 * 2) / 1e6)
    body = server.requests[-1]["body"]
    assert body["max_tokens"] == 300 and body["model"] == "m1" and body["temperature"] == 0.2
    assert server.requests[-1]["headers"]["Authorization"] == "Bearer sk-1"
    prompt = body["messages"][1]["content"]
    assert TOOLS in prompt and "no cancel_order call" in prompt
    assert "other problem" not in prompt  # examples come from the targeted cluster
    assert prompt.count("### Example") == 3


def test_focus_and_round_robin_choose_the_file(tmp_path):
    """A focus on a cluster no file mentions falls back to round-robin by iteration."""
    with ChatServer([_answer("# Policy v2\n"), _answer("# Policy v3\n")]) as server:
        proposer = _proposer(server, ",select=round_robin")
        first = proposer.propose(_ctx(tmp_path / "a", iteration=1))
        second = proposer.propose(_ctx(tmp_path / "b", iteration=2))
    assert first.focus == "policy.md" and second.focus == "tools.py"


def test_protected_files_are_never_offered(tmp_path):
    """A scorer file (protected by default) is never shown to the model or chosen, even
    when it names the cluster's tool."""
    extra = {"scorer_notes.py": "cancel_order cancel_order cancel_order " + SECRET}
    with ChatServer([_answer(TOOLS + "# v2\n")]) as server:
        proposal = _proposer(server).propose(_ctx(tmp_path, extra=extra))
    assert proposal.focus == "tools.py"
    assert SECRET not in str(server.requests[-1]["body"])


def test_a_test_split_diagnosis_is_never_shown(tmp_path):
    """A diagnosis of the test split gives no examples: its feedback never reaches the
    endpoint."""
    diagnosis = _diagnosis("test")
    diagnosis["reflective_dataset"][0]["Feedback"] = SECRET
    with ChatServer([_answer(TOOLS + "# v2\n")]) as server:
        proposal = _proposer(server).propose(_ctx(tmp_path, diagnosis=diagnosis))
    assert proposal.detail["examples"] == 0
    assert SECRET not in str(server.requests[-1]["body"])


@pytest.mark.slow
@pytest.mark.parametrize("content", [
    "I think the policy is fine.",                                     # no block
    "<improved_file>\nA\n</improved_file><improved_file>\nB\n</improved_file>",  # two
    "<improved_file>\n   \n</improved_file>",                          # empty
    "</improved_file>\ntext\n<improved_file>",                         # inverted
    "Write it between a line <improved_file> and a line </improved_file>.",  # echo
    None,                                                              # no content
])
def test_garbage_answers_are_no_change_with_the_raw_answer(tmp_path, content):
    """Anything but one non-empty block is a no_change; the workdir is untouched."""
    with ChatServer([completion(content)]) as server:
        proposal = _proposer(server).propose(_ctx(tmp_path))
    assert not proposal.changed and proposal.blocker.startswith("unparseable answer")
    assert proposal.detail["raw_answer"] == (content or "")
    assert (tmp_path / "work" / "tools.py").read_text() == TOOLS
    assert proposal.spend.tokens == 60  # the scripted usage is still optimizer spend


def test_the_block_may_sit_inside_a_longer_answer(tmp_path):
    """Prose around the block is fine; the tags' own lines are what count."""
    answer = completion(f"Sure.\n  <improved_file>\n{TOOLS}# v2\n</improved_file>  \nBye.")
    with ChatServer([answer]) as server:
        proposal = _proposer(server).propose(_ctx(tmp_path))
    assert proposal.changed
    assert (tmp_path / "work" / "tools.py").read_text() == TOOLS + "# v2\n"


@pytest.mark.slow
@pytest.mark.parametrize("content", ["<improved_file>\nhalf a fi",
                                     "<improved_file>\nA\n</improved_file>\n<improved_fi"])
def test_an_answer_cut_at_max_tokens_is_never_applied(tmp_path, content):
    """finish_reason=length is a no_change naming the cut, even when a closed block made it
    into the cut answer."""
    with ChatServer([completion(content, finish_reason="length",
                                completion_tokens=300)]) as server:
        proposal = _proposer(server).propose(_ctx(tmp_path))
    assert not proposal.changed and "max_tokens=300" in proposal.blocker
    assert (tmp_path / "work" / "tools.py").read_text() == TOOLS


def test_the_prompt_never_shows_the_answer_tags_around_the_file(tmp_path):
    """The current file is shown between <current_file> tags: a model that echoes the
    prompt back produces no answer block."""
    with ChatServer([_answer(TOOLS + "# v2\n")]) as server:
        _proposer(server).propose(_ctx(tmp_path))
    prompt = server.requests[-1]["body"]["messages"][1]["content"]
    assert f"<current_file>\n{TOOLS}\n</current_file>" in prompt
    assert "<improved_file>\n" not in prompt


def test_an_unchanged_answer_is_no_change(tmp_path):
    """Repeating the file is not an edit."""
    with ChatServer([_answer(TOOLS)]) as server:
        proposal = _proposer(server).propose(_ctx(tmp_path))
    assert not proposal.changed and "unchanged" in proposal.blocker


@pytest.mark.slow
@pytest.mark.parametrize("step, message", [
    (Raw(b"<html>oops</html>"), "not JSON"),
    (Raw(b'{"choices": [ {"mess'), "not JSON"),
    (Raw(b'["a list"]'), "not an object"),
    (Reply(400, {"error": "bad request"}), "HTTP 400"),
])
def test_malformed_bodies_and_client_errors_are_no_change_after_one_attempt(
        tmp_path, step, message):
    """A body that is not a JSON object, or a 4xx, is not retried: one no_change."""
    with ChatServer([step]) as server:
        proposal = _proposer(server).propose(_ctx(tmp_path))
    assert not proposal.changed and message in proposal.blocker
    assert len([r for r in server.requests if r["method"] == "POST"]) == 1


@pytest.mark.slow
def test_429_and_5xx_are_retried_with_backoff(tmp_path):
    """429 (Retry-After 0), 503 and a dropped connection are each retried; the fourth
    attempt succeeds."""
    script = [Reply(429, {"error": "slow"}, {"Retry-After": "0"}), Reply(503, {}), Drop(),
              _answer(TOOLS + "# v2\n")]
    with ChatServer(script) as server:
        proposer = _proposer(server, retries=3)
        proposal = proposer.propose(_ctx(tmp_path))
    assert proposal.changed and proposal.detail["http_attempts"] == 4


def test_persistent_5xx_stops_at_the_retry_bound(tmp_path):
    """retries=2 means three attempts, then a no_change naming the last failure."""
    with ChatServer(default=Reply(500, {"error": "boom"})) as server:
        proposal = _proposer(server).propose(_ctx(tmp_path))
    posts = [r for r in server.requests if r["method"] == "POST"]
    assert len(posts) == 3 and not proposal.changed
    assert "after 3 attempts" in proposal.blocker and "500" in proposal.blocker


def test_a_slow_endpoint_times_out_within_the_bounds(tmp_path):
    """An endpoint slower than timeout_s (the call's bound, retries included) is a
    no_change naming it, within that bound; the attempt's tokens are counted as unknown."""
    slow = Sleep(3.0, _answer(TOOLS + "# late\n"))
    with ChatServer(default=slow) as server:
        proposer = build(f"base_url={server.base_url},model=m,timeout_s=0.3,retries=5,"
                         "backoff_s=0.01", ProposerConfig(project_dir=Path("."), timeout_s=1.0))
        t0 = time.monotonic()
        proposal = proposer.propose(_ctx(tmp_path))
        took = time.monotonic() - t0
    assert not proposal.changed and "no answer within" in proposal.blocker
    assert "(unreachable)" in proposal.blocker and took < 2.0, took
    assert proposal.detail["usage"]["unknown_attempts"] == 1
    assert (tmp_path / "work" / "tools.py").read_text() == TOOLS


def test_rejected_attempts_are_shown_to_the_model(tmp_path):
    """An earlier rejected edit of the chosen file appears in the prompt with its reason."""
    record = IterationRecord(iteration=1, algorithm="hill-climb", proposer="llm:m1",
                             parent_id="seed", outcome=Outcome.REJECT,
                             diff=DiffStat(modified=("tools.py",)),
                             reasons=("delta +0.01 within noise",),
                             started_at="2026-12-01T00:00:00Z",
                             finished_at="2026-12-01T00:00:01Z")
    with ChatServer([_answer(TOOLS + "# v3\n")]) as server:
        _proposer(server).propose(_ctx(tmp_path, iteration=2, ledger=(record,)))
    prompt = server.requests[-1]["body"]["messages"][1]["content"]
    assert "iteration 1: reject (delta +0.01 within noise)" in prompt


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_unreachable_endpoint_is_refused_at_build(tmp_path):
    """Nothing listens: the registry raises one ConfigError line naming the endpoint."""
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    with pytest.raises(ConfigError) as info:
        build_proposer(f"llm:base_url={url},model=m", ProposerConfig(project_dir=tmp_path))
    assert url in str(info.value) and "unreachable" in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.slow
def test_a_refused_api_key_is_refused_at_build(tmp_path):
    """A 401 on the probe is a ConfigError; any other answer means the endpoint is there."""
    with ChatServer(models=Reply(401, {"error": "invalid key"})) as server:
        with pytest.raises(ConfigError, match="refused the API key"):
            build(f"base_url={server.base_url},model=m", ProposerConfig(project_dir=tmp_path))
    with ChatServer(models=Reply(404, {"error": "no such route"})) as server:
        proposer = build(f"base_url={server.base_url},model=m",
                         ProposerConfig(project_dir=tmp_path))
    assert server.requests[0]["method"] == "GET" and proposer.name == "llm:m"


@pytest.mark.parametrize("options, fragment", [
    ("model=m", "no base_url"),
    ("base_url=http://x/v1", "no model"),
    ("base_url=http://x/v1,model=m,temprature=1", "unknown option 'temprature'"),
    ("base_url=http://x/v1,model=m,temperature=hot", "temperature"),
    ("base_url=http://x/v1,model=m,max_tokens=0", "max_tokens"),
    ("base_url=http://x/v1,model=m,select=random", "select"),
    ("base_url=http://x/v1,model=m,model=n", "given twice"),
    ("base_url=http://x/v1,model", "not key=value"),
])
def test_bad_options_are_one_config_error_line(tmp_path, options, fragment):
    """Each bad option names itself in one line (checked before any probe)."""
    with pytest.raises(ConfigError) as info:
        build(options + ",probe=false", ProposerConfig(project_dir=tmp_path))
    assert fragment in str(info.value) and "\n" not in str(info.value)


def _pinned(url: str = "http://127.0.0.1:9/v1", **over: object) -> ModelSettings:
    fields: dict = {"base_url": url, "model": "pinned-m", "api_key_env": "MY_KEY",
                    "temperature": 0.3, "max_tokens": 700, "context_tokens": 4096,
                    "price": PriceConfig(input=2, output=4), **over}
    config = ModelConfig(**fields)
    return resolve(config, "proposer")


def test_models_proposer_is_the_default_and_the_spec_overrides_it(tmp_path, monkeypatch):
    """With models.proposer pinned, `llm` alone uses it (endpoint, sampling, bounds,
    price); a spec option overrides one setting; no setting comes from the environment
    (CAPEVOLVE_LLM_* is ignored), only the key from the variable api_key_env names."""
    monkeypatch.setenv("CAPEVOLVE_LLM_MODEL", "env-m")
    monkeypatch.setenv("CAPEVOLVE_LLM_TEMPERATURE", "1.5")
    env = {"MY_KEY": "k"}
    proposer = build("probe=false", ProposerConfig(project_dir=tmp_path, env=env,
                                                   model=_pinned()))
    s = proposer.settings
    assert (s.model, s.base_url, s.temperature, s.max_tokens, s.context_tokens) == \
        ("pinned-m", "http://127.0.0.1:9/v1", 0.3, 700, 4096)
    assert (s.usd_per_1m_input, s.usd_per_1m_output) == (2, 4)
    assert proposer.api_key == "k" and proposer.name == "llm:pinned-m"
    assert proposer.model.context_tokens == 4096 and proposer.model.role == "proposer"
    over = build("probe=false,temperature=0.9", ProposerConfig(project_dir=tmp_path,
                                                               model=_pinned()))
    assert over.settings.temperature == 0.9 and over.settings.model == "pinned-m"
    with pytest.raises(ConfigError, match="declare models.proposer"):
        build("probe=false", ProposerConfig(project_dir=tmp_path))


@pytest.mark.slow
@pytest.mark.parametrize("style", ["vllm", "llama.cpp"])
def test_a_prompt_that_cannot_fit_the_context_is_never_sent(tmp_path, style):
    """The endpoint's tokenizer measures the prompt before sending: prompt + max_tokens
    over context_tokens is a no_change naming the three numbers and the context (not
    max_tokens), with no chat request and nothing spent; one that fits is sent."""
    def tokens(messages: list) -> int:
        return len(json.dumps(messages)) // 4

    with ChatServer([_answer(TOOLS + "# v2\n")], tokenizer=tokens, style=style) as server:
        pinned = _pinned(server.base_url, context_tokens=600)
        proposer = build("probe=false", ProposerConfig(project_dir=tmp_path, model=pinned))
        refused = proposer.propose(_ctx(tmp_path / "a"))
        assert server.requests == [] and server.tokenized
        wide = build("probe=false,context_tokens=100000",
                     ProposerConfig(project_dir=tmp_path, model=pinned))
        sent = wide.propose(_ctx(tmp_path / "b"))
    assert not refused.changed and "does not fit the model's context" in refused.blocker
    assert "max_tokens is 700" in refused.blocker and "context_tokens 600" in refused.blocker
    assert "tokens (measured by the endpoint)" in refused.blocker
    assert refused.spend.tokens == 0 and refused.detail["http_attempts"] == 0
    assert sent.changed and len(server.requests) == 1


def test_a_context_length_400_and_a_cut_short_of_max_tokens_name_the_context(tmp_path):
    """The provider's context-length 400 is final (one attempt) and named as the context;
    an answer stopped at `length` with fewer completion tokens than max_tokens was cut by
    the context window, and the ledger says so instead of blaming max_tokens."""
    too_long = Reply(400, {"error": {"message": "This model's maximum context length is "
                                                "4096 tokens", "code": "context_length"}})
    short = completion("<improved_file>\nhalf", prompt_tokens=3990, completion_tokens=106,
                       finish_reason="length")
    full = completion("<improved_file>\nhalf", prompt_tokens=100, completion_tokens=300,
                      finish_reason="length")
    with ChatServer([too_long, short, full]) as server:
        proposer = _proposer(server)
        first = proposer.propose(_ctx(tmp_path / "a"))
        second = proposer.propose(_ctx(tmp_path / "b"))
        third = proposer.propose(_ctx(tmp_path / "c"))
    assert "does not fit the model's context" in first.blocker
    assert first.detail["http_attempts"] == 1
    assert "cut by the model's context window, not max_tokens" in second.blocker
    assert "prompt 3990 + answer 106" in second.blocker and second.spend.tokens == 4096
    assert "cut at max_tokens=300" in third.blocker


def test_a_symlinked_component_is_never_read(tmp_path):
    """Candidate files are untrusted: a component that is a symlink (here to gold data
    outside the candidate) is not offered; round-robin would have chosen it first."""
    gold = tmp_path / "gold.json"
    gold.write_text(SECRET)
    ctx = _ctx(tmp_path)
    (ctx.parent_dir / "notes.md").symlink_to(gold)
    ctx = ProposalContext(**{**ctx.__dict__, "files": (*ctx.files, "notes.md")})
    with ChatServer([_answer(POLICY + "More care.\n")]) as server:
        proposal = _proposer(server, ",select=round_robin").propose(ctx)
    assert proposal.changed and proposal.focus == "policy.md"
    assert SECRET not in str(server.requests[-1]["body"])


def test_a_symlink_in_the_working_copy_is_not_written_through(tmp_path):
    """A working-copy file that became a symlink to a file outside is not written."""
    ctx = _ctx(tmp_path)
    outside = tmp_path / "outside.py"
    outside.write_text("untouched\n")
    (ctx.workdir / "tools.py").unlink()
    (ctx.workdir / "tools.py").symlink_to(outside)
    with ChatServer([_answer(TOOLS + "# v2\n")]) as server:
        proposal = _proposer(server).propose(ctx)
    assert not proposal.changed and "symlink" in proposal.blocker
    assert outside.read_text() == "untouched\n"


def test_concurrent_proposals_keep_their_own_counts(tmp_path):
    """With --parallel, one proposer serves several proposals at once: each has its own
    attempts, answer and spend."""
    from concurrent.futures import ThreadPoolExecutor

    script = [Sleep(0.3, Reply(503, {})), Sleep(0.1, _answer(TOOLS + "# b\n")),
              _answer(TOOLS + "# a\n")]
    with ChatServer(script) as server:
        proposer = _proposer(server)
        with ThreadPoolExecutor(2) as pool:
            results = list(pool.map(proposer.propose,
                                    [_ctx(tmp_path / "a"), _ctx(tmp_path / "b")]))
    assert all(r.changed for r in results)
    assert sorted(r.detail["http_attempts"] for r in results) == [1, 2]


@pytest.mark.slow
def test_the_answer_schema_is_requested_and_a_json_answer_is_applied(tmp_path):
    """The request carries the answer's JSON schema; an answer in it is applied like a
    block. An endpoint that refuses the schema gets the prompt-only form at once (one
    rejected attempt, not a retry), and `structured=false` never sends it."""
    new_tools = TOOLS + "# json\n"
    refusal = Reply(400, {"error": "response_format is not supported by this server"})
    with ChatServer([completion(json.dumps({"improved_file": new_tools})), refusal,
                     _answer(new_tools), _answer(new_tools)]) as server:
        structured = _proposer(server).propose(_ctx(tmp_path / "a"))
        refused = _proposer(server).propose(_ctx(tmp_path / "b"))
        plain = build(f"base_url={server.base_url},model=other,structured=false,probe=false",
                      ProposerConfig(project_dir=Path("."))).propose(_ctx(tmp_path / "c"))
    assert structured.changed and (tmp_path / "a" / "work" / "tools.py").read_text() == new_tools
    assert refused.changed and refused.detail["http_attempts"] == 2
    assert plain.changed
    formats = [r["body"].get("response_format", {}).get("json_schema", {}).get("name")
               for r in server.requests if r["method"] == "POST"]
    assert formats == ["improved_file", "improved_file", None, None]
