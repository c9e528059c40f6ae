"""Every page (README.md and docs/) names only commands, options, capevolve.yaml keys and
Python names that exist; the checker itself catches each kind of mistake."""

from __future__ import annotations

from pathlib import Path

import pytest
from docs.pagecheck import (
    cited_test_problems,
    command_tree,
    fences_and_prose,
    page_problems,
    shell_commands,
    spans,
)

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


@pytest.fixture(scope="module")
def tree():
    return command_tree()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_a_page_names_only_what_exists(page, tree):
    problems = page_problems(page.read_text(encoding="utf-8"), tree)
    assert not problems, f"{page.relative_to(REPO)}:\n" + "\n".join(problems)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_a_page_cites_only_tests_that_exist(page):
    problems = cited_test_problems(page.read_text(encoding="utf-8"), REPO)
    assert not problems, f"{page.relative_to(REPO)}:\n" + "\n".join(problems)


def test_a_cited_test_that_does_not_exist_is_found():
    text = ("`tests/_policy/gate/test_gate.py::test_welch_refuses_different_denominators`, "
            "`::test_no_such_test`; `tests/no_such_file.py::test_x`")
    assert cited_test_problems(text, REPO) == [
        "tests/_policy/gate/test_gate.py has no test test_no_such_test",
        "tests/no_such_file.py has no test test_x"]


def test_the_pages_name_commands_and_keys_at_all():
    """The check is not vacuous: the pages hold many commands, spans and YAML blocks."""
    commands = spans_seen = yaml_blocks = 0
    for page in PAGES:
        fences, prose = fences_and_prose(page.read_text(encoding="utf-8"))
        commands += sum(len(list(shell_commands(f.body))) for f in fences if f.lang == "bash")
        yaml_blocks += sum(f.lang == "yaml" for f in fences)
        spans_seen += len(list(spans(prose)))
    assert commands >= 20 and yaml_blocks >= 3 and spans_seen >= 500


BAD = [
    ("```bash\ncapevolve evaluate --run-dir R --candidat c\n```", "has no option --candidat"),
    ("```bash\ncapevolve evaluat --run-dir R\n```", "has no command 'evaluat'"),
    ("```bash\ncapevolve diagnose anotate --run-dir R\n```", "has no command 'anotate'"),
    ("```bash\ncapevolve optimize --run-dir R \\\n  --parralel 3\n```", "no option --parralel"),
    ("```console\n$ cap-evolve gate --kse 1\n```", "has no option --kse"),
    ("Run `capevolve status --verbose` to see it.", "has no option --verbose"),
    ("Pass `--no-such-flag` to any command.", "the option --no-such-flag"),
    ("Or `gate --k-se 1 --modee welch`.", "has no option --modee"),
    ("```yaml\ngate: {alpha: 0.05, min_delt: 0.02}\n```", "no key gate.min_delt"),
    ("```yaml\nnum_trial: 3\n```", "no key num_trial"),
    ("```yaml\nevaluators:\n  - {name: m, kind: exact, wieght: 2}\n```",
     "no key evaluators.wieght"),
    ("```yaml\ngate: {mode: paird}\n```", "gate.mode: Input should be"),
    ("```yaml\nengine: {kind: ray\n```", "does not parse"),
    ("```yaml\nname: p\nadapter: a.py:A\ncapability_path: s\n"
     "gate: {alpha_spending: run, k_se: 1}\n```", "remove gate.k_se"),
    ("Set `engine.concurrenc` higher.", "no key engine.concurrenc"),
    ("Set `gate.policy.strict: 1`.", "no key gate.policy.strict"),
    ("Call `capevolve.open_runs(path)`.", "capevolve.open_runs does not exist"),
    ("```python\nimport capevolve\ncapevolve.gatee(run, 'c')\n```", "capevolve.gatee"),
]


@pytest.mark.parametrize(("text", "expected"), BAD, ids=[b[1] for b in BAD])
def test_the_checker_finds_each_kind_of_mistake(text, expected, tree):
    problems = page_problems(text, tree)
    assert any(expected in p for p in problems), problems


GOOD = [
    "```bash\ncapevolve gate --run-dir R --candidate cand_001 --k-se 1  # exploratory\n```",
    "```bash\ncapevolve gate --current 0.61 --candidate 0.66 --current-stderr 0.02 "
    "--candidate-stderr 0.02\n```",
    "```bash\nR=x && capevolve status --run-dir $R --json | jq .best\n```",
    "```bash\ncapevolve diagnose annotate --run-dir R --file F --cluster c --tag BEHAVIORAL\n```",
    "```yaml title=\"ray-cluster.yaml\"\ncluster_name: not-capevolve\n```",
    "```yaml\nengine: {resources: {api_slot: 1}}\nevaluators: [{name: j, kind: exact}]\n```",
    "Use `capevolve COMMAND --help`, `--json`, `gate.k_se`, `capevolve.yaml`, `gate.py`, "
    "`capevolve.open_run`, `capevolve._policy.gateable`, `capevolve.integrations.gepa`.",
]


@pytest.mark.parametrize("text", GOOD)
def test_the_checker_accepts_what_exists(text, tree):
    assert page_problems(text, tree) == []
