"""Malformed candidates become rollout errors naming file and line; tool gaps are visible."""

from __future__ import annotations

import pytest

from capevolve_adapters.retail.capability import CapabilityError, parse_policy


def _run(adapter, tasks, candidate, task_id="retail_000"):
    return adapter.run_target(candidate, tasks[task_id], trial=0, seed=1)


@pytest.mark.parametrize(("source", "expected"), [
    ("READ_TOOLS = ()\nWRITE_TOOLS = ()\ndef broken(:\n", "tools/tools.py:3: SyntaxError"),
    ("import math\n\nx = 1 / 0\n", "tools/tools.py:3: ZeroDivisionError while loading"),
    ("READ_TOOLS = ('get_user',)\nWRITE_TOOLS = ()\n",
     "tools/tools.py:1: READ_TOOLS names 'get_user', which is not a function"),
    ("def get_user(db, user_id):\n    return {}\n", "tools/tools.py:1: READ_TOOLS must be"),
])
def test_malformed_tools_is_a_rollout_error(retail_adapter, retail_tasks, writable_seed,
                                            source, expected):
    """A broken tools.py gives Rollout(error='tools/tools.py:LINE: ...'), never a raise."""
    (writable_seed / "tools" / "tools.py").write_text(source, encoding="utf-8")
    rollout = _run(retail_adapter, retail_tasks, writable_seed)
    assert rollout.error is not None and rollout.error.startswith(expected), rollout.error
    assert rollout.output is None


@pytest.mark.parametrize(("text", "expected"), [
    ("# Policy\n\n- Be nice.\n\n```\ncode\n", "policy/policy.md:5: code fence is never closed"),
    ("# Policy\n- Be nice.\n-\n", "policy/policy.md:3: empty bullet"),
    ("# Policy\nJust prose, no rules.\n", "policy/policy.md:1: no rules found"),
])
def test_malformed_policy_is_a_rollout_error(retail_adapter, retail_tasks, writable_seed,
                                             text, expected):
    """A broken policy.md gives Rollout(error='policy/policy.md:LINE: ...')."""
    (writable_seed / "policy" / "policy.md").write_text(text, encoding="utf-8")
    rollout = _run(retail_adapter, retail_tasks, writable_seed)
    assert rollout.error is not None and rollout.error.startswith(expected), rollout.error


def test_non_utf8_and_missing_files_name_the_file(retail_adapter, retail_tasks, writable_seed):
    """Undecodable bytes report their line; a missing file is reported by name."""
    (writable_seed / "policy" / "policy.md").write_bytes(b"- ok\n- caf\xe9\n")
    assert _run(retail_adapter, retail_tasks, writable_seed).error.startswith(
        "policy/policy.md:2: not UTF-8")
    (writable_seed / "policy" / "policy.md").unlink()
    assert _run(retail_adapter, retail_tasks, writable_seed).error.startswith(
        "policy/policy.md:1: file is missing")


def test_policy_rules_and_emphasis_are_parsed():
    """Bullets become rules with their line; MUST/ALWAYS/NEVER or bold mark emphasis;
    bullets inside a closed code fence are ignored."""
    rules = parse_policy("# P\n- plain rule\n* You MUST do it\n```\n- not a rule\n```\n"
                         "1. a **bold** one\n")
    assert [(r.line, r.emphasised) for r in rules] == [(2, False), (3, True), (7, True)]
    with pytest.raises(CapabilityError):
        parse_policy("")


def test_a_missing_tool_is_an_error_the_agent_sees(retail_adapter, retail_tasks, run_trials,
                                                   writable_seed):
    """Removing calculate from READ_TOOLS makes the agent's call an unknown-tool error; it
    recovers with its own arithmetic and still answers the info tasks."""
    path = writable_seed / "tools" / "tools.py"
    path.write_text(path.read_text().replace('"get_product", "calculate")', '"get_product")'))
    info = sorted(t for t, task in retail_tasks.items() if task.metadata["kind"] == "info")
    results = run_trials(writable_seed, info[:3], trials=1)
    for [(rollout, score)] in results.values():
        errors = [m for m in rollout.trace["messages"] if m["role"] == "tool" and not m["ok"]]
        assert errors and "unknown tool 'calculate'" in errors[0]["content"]
        assert score.reward == 1.0
